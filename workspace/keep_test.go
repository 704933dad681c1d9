package workspace

import (
	"strings"
	"testing"
)

func TestHistoryVersion(t *testing.T) {
	cases := []struct {
		name string
		id   string
		n    int
		ok   bool
	}{
		{"st_1.v1.json", "st_1", 1, true},
		{"st_1.v12.json", "st_1", 12, true},
		{"a.v1.v3.json", "a.v1", 3, true},
		{"st_1.v0.json", "", 0, false},
		{"st_1.v01.json", "", 0, false},
		{"st_1.v.json", "", 0, false},
		{"st_1.vx.json", "", 0, false},
		{"st_1.v1.txt", "", 0, false},
		{".v1.json", "", 0, false},
		{".st_1.v1.json", "", 0, false},
		{"st_1.json", "", 0, false},
		{"st_1.v99999999999999999999.json", "", 0, false},
	}
	for _, c := range cases {
		id, n, ok := HistoryVersion(c.name)
		if id != c.id || n != c.n || ok != c.ok {
			t.Errorf("HistoryVersion(%q) = %q, %d, %v; want %q, %d, %v", c.name, id, n, ok, c.id, c.n, c.ok)
		}
		if ok {
			if got := HistoryName("outputs", id, n); got != "outputs/history/"+c.name {
				t.Errorf("HistoryName(%q, %d) = %q", id, n, got)
			}
		}
	}
}

// FuzzHistoryVersion: any name HistoryVersion accepts is the name
// HistoryName gives for what it read, and never a path.
func FuzzHistoryVersion(f *testing.F) {
	for _, s := range []string{"st_1.v1.json", "a.v1.v3.json", "st_1.v0.json", "../x.v1.json", "x.v1.json/", ".v1.json"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, n, ok := HistoryVersion(name)
		if !ok {
			return
		}
		if n < 1 || strings.ContainsAny(id, "/\\") || ValidateID("id", id) != nil {
			t.Fatalf("HistoryVersion(%q) = %q, %d: not a product id and version", name, id, n)
		}
		if got := HistoryName("outputs", id, n); got != "outputs/history/"+name {
			t.Fatalf("HistoryName(%q, %d) = %q, want outputs/history/%s", id, n, got, name)
		}
	})
}
