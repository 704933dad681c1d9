package workspace

import (
	"bytes"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
)

// The model encodes what it builds as the file store writes it: the same
// bytes as atomicfile.Marshal.
func TestMarshalCanonicalIsAtomicfiles(t *testing.T) {
	for name, v := range map[string]any{
		"map":    map[string]any{"b": 1, "a": "<tag> & \"quote\"", "c": []any{1.5, nil, true}},
		"thread": Thread{ID: "th_1", TaskID: "t1", From: "a", To: "b", Message: "x < y", CreatedAt: time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC), Status: "active"},
		"empty":  struct{}{},
	} {
		got, err := marshalCanonical(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := atomicfile.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: model encodes\n%s\natomicfile encodes\n%s", name, got, want)
		}
	}
}
