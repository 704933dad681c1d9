package api

import (
	"net/url"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// itemPath is the item route of namespace ns and key.
func itemPath(key string, ns ...string) string {
	q := url.Values{"namespace": ns, "key": {key}}
	return "/api/v1/memory/items?" + q.Encode()
}

// TestMemoryNamespaces: items under namespaces of labels on every store,
// through the API: compare-and-set with ETag, If-Match and If-None-Match
// (412 with the current version), a prefix that never matches a sibling
// label's prefix, filters, pagination and the namespaces listed by
// prefix, suffix with a wildcard and depth.
func TestMemoryNamespaces(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
			a := c.want(c.do("PUT", itemPath("ui", "users", "42", "prefs"), map[string]any{"value": map[string]any{"theme": "dark", "age": 30}}, "If-None-Match", "*"), 200, "create")
			if a.header.Get("ETag") != `"1"` {
				t.Fatalf("ETag %q", a.header.Get("ETag"))
			}
			p := c.want(c.do("PUT", itemPath("ui", "users", "42", "prefs"), map[string]any{"value": map[string]any{}}, "If-None-Match", "*"), 412, "create again").problem(t)
			if p.CurrentVersion == nil || *p.CurrentVersion != 1 {
				t.Fatalf("412: %+v", p)
			}
			c.want(c.do("PUT", itemPath("ui", "users", "42", "prefs"), map[string]any{"value": map[string]any{"theme": "light", "age": 31}, "ttl_seconds": 3600}, "If-Match", `"1"`), 200, "replace")
			p = c.want(c.do("PUT", itemPath("ui", "users", "42", "prefs"), map[string]any{"value": map[string]any{}}, "If-Match", `"1"`), 412, "stale").problem(t)
			if *p.CurrentVersion != 2 {
				t.Fatalf("412: %+v", p)
			}
			var it workspace.MemoryItem
			a = c.want(c.do("GET", itemPath("ui", "users", "42", "prefs"), nil), 200, "get")
			a.json(t, &it)
			if it.Version != 2 || it.ExpiresAt == nil || len(it.Namespace) != 3 || a.header.Get("ETag") != `"2"` {
				t.Fatalf("item %+v", it)
			}
			c.want(c.do("PUT", itemPath("x", "users", "4"), map[string]any{"value": map[string]any{"theme": "dark"}}), 200, "a sibling label")
			c.want(c.do("PUT", itemPath("é/ü", "users", "42", "ünï"), map[string]any{"value": map[string]any{"age": 10}}), 200, "non-ASCII")
			var found struct {
				Items []workspace.MemoryItem `json:"items"`
			}
			c.want(c.do("POST", "/api/v1/memory/search", map[string]any{"namespace_prefix": []string{"users", "42"}}), 200, "search").json(t, &found)
			if len(found.Items) != 2 {
				t.Fatalf("search under [users 42]: %+v (the sibling [users 4] must not match)", found.Items)
			}
			c.want(c.do("POST", "/api/v1/memory/search", map[string]any{"filter": map[string]any{"age": map[string]any{"$gte": 18}}}), 200, "filter").json(t, &found)
			if len(found.Items) != 1 || found.Items[0].Key != "ui" {
				t.Fatalf("filter: %+v", found.Items)
			}
			c.want(c.do("POST", "/api/v1/memory/search", map[string]any{"filter": map[string]any{"age": map[string]any{"$near": 1}}}), 400, "unknown operator").problem(t)
			c.want(c.do("POST", "/api/v1/memory/search", map[string]any{"limit": 1, "offset": 1}), 200, "page").json(t, &found)
			if len(found.Items) != 1 {
				t.Fatalf("page: %+v", found.Items)
			}
			var nss struct {
				Namespaces [][]string `json:"namespaces"`
			}
			c.want(c.do("POST", "/api/v1/memory/namespaces", map[string]any{"suffix": []string{"*", "prefs"}}), 200, "namespaces").json(t, &nss)
			if len(nss.Namespaces) != 1 || nss.Namespaces[0][2] != "prefs" {
				t.Fatalf("namespaces by suffix: %v", nss.Namespaces)
			}
			c.want(c.do("POST", "/api/v1/memory/namespaces", map[string]any{"max_depth": 2}), 200, "namespaces by depth").json(t, &nss)
			if len(nss.Namespaces) != 2 {
				t.Fatalf("namespaces cut to depth 2: %v", nss.Namespaces)
			}
			c.want(c.do("DELETE", itemPath("ui", "users", "42", "prefs"), nil, "If-Match", `"1"`), 412, "delete stale").problem(t)
			c.want(c.do("DELETE", itemPath("ui", "users", "42", "prefs"), nil, "If-Match", `"2"`), 204, "delete")
			c.want(c.do("GET", itemPath("ui", "users", "42", "prefs"), nil), 404, "gone").problem(t)
			c.want(c.do("GET", itemPath("ui", "users", "a\x00b"), nil), 400, "a label with NUL").problem(t)
			c.want(c.do("GET", "/api/v1/memory/items?key=k", nil), 400, "no namespace").problem(t)
		})
	}
}

// TestMemoryNamespaceRights: a token reads namespaced memory with global
// memory read access and writes it with write access.
func TestMemoryNamespaceRights(t *testing.T) {
	st := newTreeStore(t)
	keeper, err := service.Tokens("test", st)
	if err != nil {
		t.Fatal(err)
	}
	add := func(g tokens.Grant) string {
		tok, _, err := tokens.Add(t.Context(), keeper, g)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	srv := server(t, st, &httpauth.Gate{Keeper: keeper})
	none := client{t: t, base: srv.URL, token: add(tokens.Grant{Agent: "a", Tasks: []string{"*"}})}
	reader := client{t: t, base: srv.URL, token: add(tokens.Grant{Agent: "b", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalRead})}
	writer := client{t: t, base: srv.URL, token: add(tokens.Grant{Agent: "c", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalWrite})}
	none.want(none.do("POST", "/api/v1/memory/search", map[string]any{}), 403, "no access, search").problem(t)
	reader.want(reader.do("PUT", itemPath("k", "n"), map[string]any{"value": map[string]any{}}), 403, "read access, put").problem(t)
	writer.want(writer.do("PUT", itemPath("k", "n"), map[string]any{"value": map[string]any{}}), 200, "write access, put")
	batch := map[string]any{"puts": []any{map[string]any{"namespace": []string{"n"}, "key": "b", "value": map[string]any{}}}}
	anon := client{t: t, base: srv.URL}
	anon.want(anon.do("POST", "/api/v1/memory/batch", batch), 401, "no token, batch").problem(t)
	none.want(none.do("POST", "/api/v1/memory/batch", batch), 403, "no access, batch").problem(t)
	reader.want(reader.do("POST", "/api/v1/memory/batch", batch), 403, "read access, batch").problem(t)
	writer.want(writer.do("POST", "/api/v1/memory/batch", batch), 200, "write access, batch")
	reader.want(reader.do("GET", itemPath("b", "n"), nil), 200, "read access, get the batch's item")
	reader.want(reader.do("GET", itemPath("k", "n"), nil), 200, "read access, get")
	reader.want(reader.do("POST", "/api/v1/memory/namespaces", map[string]any{}), 200, "read access, namespaces")
}

// noMemory is a store that keeps no namespaced memory.
type noMemory struct{ workspace.Store }

// TestMemoryNotKept: over a store that keeps no namespaced memory, every
// memory route answers 501 with the store's reason, not a 400 that
// blames the request.
func TestMemoryNotKept(t *testing.T) {
	c := as(t, server(t, noMemory{newTreeStore(t)}, &httpauth.Gate{TrustLoopback: true}), "worker_1")
	for _, r := range []struct{ method, path string }{
		{"GET", itemPath("k", "a")}, {"PUT", itemPath("k", "a")}, {"DELETE", itemPath("k", "a")},
		{"POST", "/api/v1/memory/search"}, {"POST", "/api/v1/memory/namespaces"}, {"GET", "/api/v1/memory/events"}, {"POST", "/api/v1/memory/batch"},
	} {
		var body any
		if r.method == "PUT" {
			body = map[string]any{"value": map[string]any{}}
		} else if r.method == "POST" {
			body = map[string]any{}
		}
		p := c.want(c.do(r.method, r.path, body), 501, r.method+" "+r.path).problem(t)
		if p.Kind != kindNotImplemented || p.Hint == "" {
			t.Fatalf("%s %s: %+v", r.method, r.path, p)
		}
	}
}
