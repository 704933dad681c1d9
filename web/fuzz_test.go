package web

import (
	"testing"
)

// FuzzParseEventID: any Last-Event-ID a client sends parses or is refused,
// never panics; what parses names a task and a position that give the
// same id back (leading zeros aside).
func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"t1:0", "t1:1834", "a:b:12", ":1", "t1:", "t1:-1", "t1:+1", "t1:99999999999999999999", "t1:0x10", "", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		task, end, ok := parseEventID(id)
		if !ok {
			return
		}
		if task == "" || end < 0 {
			t.Fatalf("%q parsed to %q, %d", id, task, end)
		}
		t2, e2, ok2 := parseEventID(eventID(task, end))
		if !ok2 || t2 != task || e2 != end {
			t.Fatalf("%q: the round trip gave %q, %d, %v", id, t2, e2, ok2)
		}
	})
}
