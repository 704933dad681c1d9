package bench

import (
	"os"
	"testing"
)

// TestQuietStdinTakesPipes: on Linux a pipe is read raw.
func TestQuietStdinTakesPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rr, ok := quietStdin(r).(*rawReader)
	if !ok {
		t.Fatalf("quietStdin left a pipe as it was")
	}
	rr.f.Close()
}
