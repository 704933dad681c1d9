package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// renameExchange swaps two entries of a directory, a file with a
// directory too, and fails with the path error (not errUnsupported) when
// one is missing.
func TestRenameExchange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	err = renameExchange(d, "a", "b")
	if errors.Is(err, errUnsupported) {
		t.Skip("renameat2(RENAME_EXCHANGE) is not supported here")
	}
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a")); err != nil || !fi.IsDir() {
		t.Errorf("a after the exchange: %v, %v; want the directory", fi, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "b")); err != nil || string(data) != "A" {
		t.Errorf("b after the exchange: %q, %v; want the file", data, err)
	}
	err = renameExchange(d, "b", "missing")
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(err, fs.ErrNotExist) || le.Old != "b" || le.New != "missing" {
		t.Errorf("exchange with a missing entry: %v; want a rename error naming both and not-exist", err)
	}
}
