package api

import (
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/workspace"
)

// TestValueAtMaxDepth: a value as deep as the store takes (MaxDepth) is
// taken through the API too, whose body wraps it one level deeper; one
// level more is refused as the store refuses it.
func TestValueAtMaxDepth(t *testing.T) {
	st := newTreeStore(t)
	if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "depth"}); err != nil {
		t.Fatal(err)
	}
	c := as(t, server(t, st, &httpauth.Gate{TrustLoopback: true}), "worker_1")
	max := st.Settings().WithDefaults().Limits.MaxDepth
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	c.want(c.do("PUT", "/api/v1/tasks/t1/env/deep", `{"value": `+nested(max)+`}`), 200, "an entry MaxDepth deep")
	c.want(c.do("PUT", "/api/v1/memory/global/deep", `{"value": `+nested(max)+`}`), 200, "a global memory entry MaxDepth deep")
	c.want(c.do("PUT", "/api/v1/memory/items?namespace=n&key=deep", `{"value": {"a": `+nested(max-1)+`}}`), 200, "an item MaxDepth deep")
	p := c.want(c.do("PUT", "/api/v1/tasks/t1/env/deeper", `{"value": `+nested(max+1)+`}`), 400, "an entry deeper").problem(t)
	if p.Kind != kindInvalid {
		t.Fatalf("an entry deeper than MaxDepth: %+v", p)
	}
	c.want(c.do("PUT", "/api/v1/memory/items?namespace=n&key=deeper", `{"value": {"a": `+nested(max)+`}}`), 400, "an item deeper")
}
