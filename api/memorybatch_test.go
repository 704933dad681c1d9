package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// batchResults is POST /memory/batch's answer.
type batchResults struct {
	Results []struct {
		Status  int                   `json:"status"`
		Item    *workspace.MemoryItem `json:"item"`
		Problem *Problem              `json:"problem"`
	} `json:"results"`
}

// bput is one put of a batch's body.
func bput(key string, value any, more ...any) map[string]any {
	p := map[string]any{"namespace": []string{"users", "42"}, "key": key, "value": value}
	for i := 0; i+1 < len(more); i += 2 {
		p[more[i].(string)] = more[i+1]
	}
	return p
}

// TestMemoryBatch: a batch on every store answers one result per put in
// order, a compare-and-set refused in the middle as the single put's 412
// problem without stopping the others, two puts of one item as two
// versions, and leaves what the single routes read.
func TestMemoryBatch(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
			c.want(c.do("PUT", itemPath("k1", "users", "42"), map[string]any{"value": map[string]any{"n": 0}}), 200, "seed")
			var got batchResults
			c.want(c.do("POST", "/api/v1/memory/batch", map[string]any{"puts": []any{
				bput("k1", map[string]any{"n": 1}),
				bput("k2", map[string]any{"n": 1}, "if_absent", true),
				bput("k1", map[string]any{"n": 9}, "if_version", 1),
				bput("k1", map[string]any{"n": 2}, "if_version", 2),
				bput("k2", map[string]any{"n": 9}, "if_absent", true),
				bput("k3", map[string]any{"n": 1}, "ttl_seconds", 3600),
			}}), 200, "batch").json(t, &got)
			want := []struct{ status, version int }{{200, 2}, {200, 1}, {412, 2}, {200, 3}, {412, 1}, {200, 1}}
			if len(got.Results) != len(want) {
				t.Fatalf("%d results for %d puts: %+v", len(got.Results), len(want), got)
			}
			for i, w := range want {
				r := got.Results[i]
				switch {
				case r.Status != w.status:
					t.Errorf("put %d: status %d, want %d", i, r.Status, w.status)
				case w.status == 200 && (r.Item == nil || r.Item.Version != w.version || r.Problem != nil):
					t.Errorf("put %d: %+v, want version %d", i, r, w.version)
				case w.status == 412 && (r.Item != nil || r.Problem == nil || r.Problem.CurrentVersion == nil || *r.Problem.CurrentVersion != w.version):
					t.Errorf("put %d: %+v, want a problem at version %d", i, r, w.version)
				}
			}
			if it := got.Results[5].Item; it == nil || it.ExpiresAt == nil {
				t.Errorf("a put with a time to live: %+v", it)
			}
			// The 412 of a batch is the single put's, but for where it was
			// asked.
			single := c.want(c.do("PUT", itemPath("k2", "users", "42"), map[string]any{"value": map[string]any{}}, "If-None-Match", "*"), 412, "single").problem(t)
			batched := *got.Results[4].Problem
			if batched.Instance != "/api/v1/memory/batch" {
				t.Errorf("instance %q", batched.Instance)
			}
			batched.Instance = single.Instance
			if *batched.CurrentVersion != *single.CurrentVersion {
				t.Errorf("batch's 412 at version %d, single put's at %d", *batched.CurrentVersion, *single.CurrentVersion)
			}
			batched.Instance, batched.CurrentVersion, single.CurrentVersion = single.Instance, nil, nil
			if batched != single {
				t.Errorf("batch's 412 %+v\nsingle put's %+v", batched, single)
			}
			var it workspace.MemoryItem
			c.want(c.do("GET", itemPath("k1", "users", "42"), nil), 200, "get").json(t, &it)
			if it.Version != 3 || string(it.Value) != `{"n":2}` {
				t.Errorf("k1 after the batch: %+v", it)
			}
		})
	}
}

// TestMemoryBatchBadInput: broken, huge, nested and malicious batches
// are refused whole with a problem that names the put at fault, and
// nothing of them is written, on every store.
func TestMemoryBatchBadInput(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
			limit := st.Settings().Limits
			maxBody := int64(limit.ValueMaxBytes) + bodySlack
			// puts is a batch of n good puts with put 37 replaced by bad.
			puts := func(n int, bad map[string]any) map[string]any {
				ps := make([]any, n)
				for i := range ps {
					ps[i] = bput(fmt.Sprintf("k%d", i), map[string]any{"i": i})
				}
				if bad != nil {
					ps[37] = bad
				}
				return map[string]any{"puts": ps}
			}
			deep := strings.Repeat("[", limit.MaxDepth) + strings.Repeat("]", limit.MaxDepth)
			type badBatch struct {
				name   string
				body   any
				hdr    []string
				status int
				kind   string
				detail string
			}
			cases := []badBatch{
				{"not an object", `[{"puts": []}]`, nil, 400, kindInvalid, ""},
				{"not JSON", `{"puts": [`, nil, 400, kindInvalid, ""},
				{"puts not an array", `{"puts": {"namespace": ["a"], "key": "k", "value": {}}}`, nil, 400, kindInvalid, ""},
				{"puts null", `{"puts": null}`, nil, 400, kindInvalid, "no puts"},
				{"no puts", `{}`, nil, 400, kindInvalid, "no puts"},
				{"0 puts", puts(0, nil), nil, 400, kindInvalid, "no puts"},
				{"101 puts", puts(101, nil), nil, 413, kindTooLarge, "101 puts"},
				{"an unknown field", `{"puts": [], "atomic": true}`, nil, 400, kindInvalid, ""},
				{"a put with an unknown field", puts(40, bput("k", map[string]any{}, "owner", "root")), nil, 400, kindInvalid, "owner"},
				{"two documents", `{"puts": []} {"puts": []}`, nil, 400, kindInvalid, ""},
				{"a put that is no object", `{"puts": [1, "x"]}`, nil, 400, kindInvalid, ""},
				{"an empty namespace at 37", puts(40, map[string]any{"namespace": []string{}, "key": "k", "value": map[string]any{}}), nil, 400, kindInvalid, "puts[37]"},
				{"no namespace at 37", puts(40, map[string]any{"key": "k", "value": map[string]any{}}), nil, 400, kindInvalid, "puts[37]"},
				{"a label with NUL at 37", puts(40, map[string]any{"namespace": []string{"a\x00b"}, "key": "k", "value": map[string]any{}}), nil, 400, kindInvalid, "puts[37]"},
				{"17 labels at 37", puts(40, map[string]any{"namespace": strings.Split(strings.Repeat("a,", 16)+"a", ","), "key": "k", "value": map[string]any{}}), nil, 400, kindInvalid, "puts[37]"},
				{"no key at 37", puts(40, bput("", map[string]any{})), nil, 400, kindInvalid, "puts[37]"},
				{"a key with a newline at 37", puts(40, bput("a\nb", map[string]any{})), nil, 400, kindInvalid, "puts[37]"},
				{"a value that is no object at 37", puts(40, bput("k", []int{1})), nil, 400, kindInvalid, "puts[37]"},
				{"no value at 37", puts(40, map[string]any{"namespace": []string{"a"}, "key": "k"}), nil, 400, kindInvalid, "puts[37]"},

				{"a value nested too deep", `{"puts": [{"namespace": ["a"], "key": "k", "value": {"x": ` + deep + `}}]}`, nil, 400, kindInvalid, ""},
				{"if_version with if_absent at 37", puts(40, bput("k", map[string]any{}, "if_version", 1, "if_absent", true)), nil, 400, kindInvalid, "puts[37]"},
				{"if_version 0 at 37", puts(40, bput("k", map[string]any{}, "if_version", 0)), nil, 400, kindInvalid, "puts[37]"},
				{"a negative time to live at 37", puts(40, bput("k", map[string]any{}, "ttl_seconds", -5)), nil, 400, kindInvalid, "puts[37]"},
				{"a time to live that is no number", puts(40, bput("k", map[string]any{}, "ttl_seconds", "1h")), nil, 400, kindInvalid, ""},
				{"a namespace not UTF-8", "{\"puts\": [{\"namespace\": [\"a\xff\"], \"key\": \"k\", \"value\": {}}]}", nil, 400, kindInvalid, ""},

				{"not JSON by its type", []byte(`puts=1`), []string{"Content-Type", "text/plain"}, 415, kindMediaType, ""},
			}
			if k.kind == service.Files {
				// The bounds of a value and of the body are the API's and the
				// checks', before any store: sent once, to one store (a
				// body of megabytes costs seconds under -race).
				cases = append(cases, []badBatch{
					{"a value over the limit at 37", puts(40, bput("k", map[string]any{"x": strings.Repeat("x", limit.ValueMaxBytes)})), nil, 400, kindInvalid, "puts[37]"},
					{"a body over the bound", `{"puts": [{"namespace": ["a"], "key": "k", "value": {"x": "` + strings.Repeat("x", int(4*maxBody)) + `"}}]}`, nil, 413, kindTooLarge, ""},
				}...)
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					c := c
					c.t = t
					p := c.want(c.do("POST", "/api/v1/memory/batch", tc.body, tc.hdr...), tc.status, tc.name).problem(t)
					if p.Kind != tc.kind || p.Hint == "" || !strings.Contains(p.Detail, tc.detail) {
						t.Errorf("want kind %q, a hint and %q in the detail: %+v", tc.kind, tc.detail, p)
					}
				})
			}
			var found struct {
				Items []workspace.MemoryItem `json:"items"`
			}
			c.want(c.do("POST", "/api/v1/memory/search", map[string]any{"limit": 1000}), 200, "search").json(t, &found)
			if len(found.Items) != 0 {
				t.Errorf("refused batches wrote %d items: %+v", len(found.Items), found.Items[0])
			}
			// Within the bound: three values near the limit of one (on one
			// store: the bound is the API's), a value at the deepest the
			// store takes.
			if k.kind == service.Files {
				big := strings.Repeat("x", limit.ValueMaxBytes-100)
				var got batchResults
				c.want(c.do("POST", "/api/v1/memory/batch", map[string]any{"puts": []any{
					bput("a", map[string]any{"x": big}), bput("b", map[string]any{"x": big}), bput("c", map[string]any{"x": big}),
				}}), 200, "three large puts").json(t, &got)
				if len(got.Results) != 3 {
					t.Errorf("three large puts: %d results", len(got.Results))
				}
			}
			deepest := `{"puts": [{"namespace": ["a"], "key": "k", "value": ` + strings.Repeat(`{"x":`, limit.MaxDepth) + "1" + strings.Repeat("}", limit.MaxDepth) + `}]}`
			c.want(c.do("POST", "/api/v1/memory/batch", deepest), 200, "a value at the deepest")
		})
	}
}

// FuzzMemoryBatch sends arbitrary batch bodies: the answer is the
// results or a problem, never a 500 or a panic.
func FuzzMemoryBatch(f *testing.F) {
	for _, s := range []string{`{"puts": [{"namespace": ["a"], "key": "k", "value": {}}]}`, `{"puts": []}`, `{"puts": [{}]}`,
		`{"puts": [{"namespace": ["a"], "key": "k", "value": {"x": 1}, "if_version": 1}, {"namespace": ["a"], "key": "k", "value": {}, "if_absent": true}]}`,
		`{"puts": [{"namespace": ["\u0000"], "key": "k", "value": {}, "ttl_seconds": 1e99}]}`, `[]`, `{"puts": [[[[`} {
		f.Add([]byte(s))
	}
	st := newTreeStore(f)
	h := New(Config{Store: st, Gate: &httpauth.Gate{TrustLoopback: true}, Log: quiet})
	f.Fuzz(postAnswers(h, "/api/v1/memory/batch"))
}
