package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace/ops"
)

// TestSurfaceCallsAreRoutes: every call the system context and the
// preamble name to a program of the HTTP API (ops.Call) is a route of it.
func TestSurfaceCallsAreRoutes(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.method+" "+rt.pattern, func(http.ResponseWriter, *http.Request) {})
	}
	checked := 0
	for _, c := range ops.UniversalCapabilities {
		call := ops.Call(ops.SurfaceHTTP, c.Name, "t1", "observer")
		if call == "" {
			continue
		}
		checked++
		method, target, ok := strings.Cut(call, " ")
		target, _, _ = strings.Cut(target, " ") // "… with If-Match"
		if !ok || !strings.HasPrefix(target, "/api/v1/") {
			t.Errorf("%s: %q is no METHOD /api/v1/… call", c.Name, call)
			continue
		}
		target = strings.NewReplacer("/K", "/k", "/S", "/s1", "/R", "/r1", "/X", "/th_x").Replace(target)
		if _, pattern := mux.Handler(httptest.NewRequest(method, target, nil)); pattern == "" {
			t.Errorf("%s: %q is not a route of the API", c.Name, call)
		}
	}
	if checked < 25 {
		t.Fatalf("checked only %d calls", checked)
	}
}
