package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestActionBodyUTF8: an action's body that is not UTF-8, or holds a lone
// surrogate escape, is refused (400) and drops no marker: before, the
// reason was stored with U+FFFD in place of the byte.
func TestActionBodyUTF8(t *testing.T) {
	p := newPanel(t, Config{})
	seed(t, p.ws)
	b := p.browser()
	for _, body := range []string{"{\"reason\":\"bad\xffreason\"}", `{"reason":"bad\udcffreason"}`} {
		if r := p.post(b, "/api/tasks/t1/cancel", body); r.code != 400 || !strings.Contains(r.body, "not valid UTF-8") {
			t.Errorf("body %q: %d %s", body, r.code, r.body)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(p.ws.Dir(), "tasks/t1"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".done.") {
			t.Errorf("a refused action dropped %s", e.Name())
		}
	}
}
