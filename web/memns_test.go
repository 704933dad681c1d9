package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestMemoryNamespaceRoutes: the memory page's namespaces and items, as
// the store keeps them, with the labels and keys as given; bad input is a
// JSON error.
func TestMemoryNamespaceRoutes(t *testing.T) {
	t.Parallel()
	p := newPanel(t, Config{})
	const evil = `<script>x</script>`
	for _, ns := range []workspace.Namespace{{"users", "42"}, {"users", evil}, {"usersx"}} {
		if _, err := p.ws.PutMemory(context.Background(), workspace.MemoryPutRequest{Namespace: ns, Key: "k " + evil, Value: []byte(`{"v":"` + ns[len(ns)-1] + `"}`), Agent: "po"}); err != nil {
			t.Fatal(err)
		}
	}
	r := p.get("/api/memory/namespaces")
	var nss [][]string
	r.json(t, &nss)
	if r.code != 200 || len(nss) != 3 || nss[0][1] != "42" || nss[1][1] != evil {
		t.Fatalf("namespaces: %d %s", r.code, r.body)
	}
	r = p.get("/api/memory/items?namespace=users")
	var items []workspace.MemoryItem
	r.json(t, &items)
	if r.code != 200 || len(items) != 2 || items[1].Key != "k "+evil || string(items[0].Value) != `{"v":"42"}` {
		t.Fatalf("items under [users]: %d %s", r.code, r.body)
	}
	r = p.get("/api/memory/items?namespace=users&namespace=42&limit=1&offset=0")
	if r.code != 200 || !strings.Contains(r.body, `"namespace":["users","42"]`) || strings.Count(r.body, `"key"`) != 1 {
		t.Fatalf("items under [users 42]: %d %s", r.code, r.body)
	}
	if !strings.HasPrefix(r.h.Get("Content-Type"), "application/json") {
		t.Fatalf("content type %s", r.h.Get("Content-Type"))
	}
	for _, path := range []string{"/api/memory/items?limit=abc", "/api/memory/items?limit=5000", "/api/memory/items?offset=-1",
		"/api/memory/items?namespace=a%00b", "/api/memory/namespaces?prefix=%0A"} {
		r := p.get(path)
		var e apiError
		if r.code != 400 || json.Unmarshal([]byte(r.body), &e) != nil || e.Error == "" {
			t.Errorf("GET %s: %d %s, want a 400 with an error", path, r.code, r.body)
		}
	}
}
