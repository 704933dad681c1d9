package sqlstore

import (
	"bytes"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// FuzzCompactValue: the store's one pass takes the values the model's
// Compactor takes, and compacts them to the same bytes.
func FuzzCompactValue(f *testing.F) {
	for _, s := range []string{`{"theme":"dark"}`, ` { "a" : [1, 2.50, -0, 1e+9], "a": null } `, `{"s":"\u00e9\n\ud83d\ude00<&>"}`, `{"s":"\ud800"}`,
		"{\"s\":\"\xff\"}", `[1]`, `"x"`, `{} {}`, `{"a":"\"}`, `{"a":1,}`, ``, `null`, "\t{}\n", `{}}`, `{"s":"\u2028"}`, "{\"s\":\"\u2028\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ok := compactValue(v)
		want, wok := workspace.CompactValue(v)
		if ok != wok || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("%q: one pass %q (%v), the standard library's %q (%v)", v, got, ok, want, wok)
		}
	})
}
