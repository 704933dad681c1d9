package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestPostgresAPIRevokedAtOnce: `serve --listen` on a postgres:// root
// serves a token's memory item get, put and batch on the grant its first
// request looked up (one round trip each); once `workspaced token revoke`
// — another Keeper, with connections of its own — removed the token, the
// very next request is a 401, and a refused put or batch writes nothing.
func TestPostgresAPIRevokedAtOnce(t *testing.T) {
	t.Parallel()
	p := newPGWS(t)
	w := &ws{clitest.At(t, p.Root)}
	w.Task("t1")
	_, base := w.opsServe()
	do := func(tok, method, path string, body any) int {
		t.Helper()
		var rd io.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	items := func() (n, versions int) {
		t.Helper()
		if err := p.s.Pool().QueryRow(context.Background(), "SELECT count(*), coalesce(sum(version), 0) FROM memory_items").Scan(&n, &versions); err != nil {
			t.Fatal(err)
		}
		return n, versions
	}
	ops := []struct {
		name, method, path string
		body               any
	}{
		{"get", "GET", "/api/v1/memory/items?namespace=n&key=p", nil},
		{"put", "PUT", "/api/v1/memory/items?namespace=n&key=p", map[string]any{"value": map[string]any{"v": 1}}},
		{"batch", "POST", "/api/v1/memory/batch", map[string]any{"puts": []any{
			map[string]any{"namespace": []string{"n"}, "key": "b", "value": map[string]any{"v": 1}},
			map[string]any{"namespace": []string{"n"}, "key": "c", "value": map[string]any{"v": 1}},
		}}},
	}
	for _, op := range ops {
		tok, id := w.AddToken("--agent", "a", "--task", "t1", "--global-memory", "write")
		if got := do(tok, "PUT", ops[1].path, ops[1].body); got != 200 {
			t.Fatalf("%s: the first put: %d", op.name, got)
		}
		for range 3 {
			if got := do(tok, op.method, op.path, op.body); got != 200 {
				t.Fatalf("%s before the revoke: %d", op.name, got)
			}
		}
		w.Ok("token", "revoke", "--id", id)
		n, v := items()
		if got := do(tok, op.method, op.path, op.body); got != 401 {
			t.Errorf("%s on the next request after the revoke: %d, want 401", op.name, got)
		}
		if n2, v2 := items(); n2 != n || v2 != v {
			t.Errorf("a refused %s wrote: %d items of %d versions, were %d of %d", op.name, n2, v2, n, v)
		}
	}
}
