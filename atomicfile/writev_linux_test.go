package atomicfile

import (
	"bytes"
	"testing"
)

// advance drops exactly the bytes a short writev wrote, wherever they end,
// and leaves the caller's slice as it was.
func TestAdvance(t *testing.T) {
	mk := func() [][]byte { return [][]byte{[]byte("abc"), {}, []byte("de"), []byte("f")} }
	for _, tc := range []struct {
		n    int
		want string
		left int
	}{
		{0, "abcdef", 4}, {1, "bcdef", 4}, {3, "def", 2}, {4, "ef", 2}, {5, "f", 1}, {6, "", 0},
	} {
		bufs := mk()
		got := advance(bufs, tc.n)
		if s := string(bytes.Join(got, nil)); s != tc.want || len(got) != tc.left {
			t.Errorf("advance by %d: %q in %d pieces, want %q in %d", tc.n, s, len(got), tc.want, tc.left)
		}
		if string(bytes.Join(bufs, nil)) != "abcdef" || len(bufs) != 4 {
			t.Errorf("advance by %d changed its argument: %q", tc.n, bufs)
		}
	}
}
