package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

func openRoot(t *testing.T) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return dir, r
}

func TestMarshalCanonical(t *testing.T) {
	type doc struct {
		B string         `json:"b"`
		A map[string]int `json:"a"`
		H string         `json:"h"`
	}
	v := doc{B: "x", A: map[string]int{"z": 1, "a": 2}, H: "<&>"}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"b\": \"x\",\n  \"a\": {\n    \"a\": 2,\n    \"z\": 1\n  },\n  \"h\": \"<&>\"\n}\n"
	if string(got) != want {
		t.Fatalf("Marshal:\n%s\nwant:\n%s", got, want)
	}
	again, _ := Marshal(v)
	if !bytes.Equal(got, again) {
		t.Fatal("two marshals of one value differ")
	}
}

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir, r := openRoot(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, content := range []string{"first\n", "second, longer\n", "3\n"} {
		if err := WriteFile(r, "sub/f.json", []byte(content), 0o640); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "sub", "f.json"))
		if err != nil || string(got) != content {
			t.Fatalf("after write %d: %q, %v; want %q", i, got, err, content)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "sub", "f.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "sub"))
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("directory holds %v, want only f.json (no temporary files left)", names)
	}
}

func TestWriteFileRefusesEscapes(t *testing.T) {
	dir, r := openRoot(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../x.json", "link/x.json", "/etc/x.json", "missing/x.json"} {
		if err := WriteFile(r, name, []byte("{}"), 0o644); err == nil {
			t.Errorf("WriteFile(%q) succeeded, want an error", name)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a write escaped the root: %d files outside", len(ents))
	}
}

// Readers racing a writer see one whole version or another, never a mix.
func TestWriteFileAtomicForReaders(t *testing.T) {
	dir, r := openRoot(t)
	a := bytes.Repeat([]byte("a"), 64<<10)
	b := bytes.Repeat([]byte("b"), 32<<10)
	if err := WriteFile(r, "f", a, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			data := a
			if i%2 == 1 {
				data = b
			}
			if err := WriteFile(r, "f", data, 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 300 {
		got, err := os.ReadFile(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read a torn file of %d bytes starting %q", len(got), got[:min(8, len(got))])
		}
	}
	close(stop)
	wg.Wait()
}

func TestWriteJSONAndSyncDir(t *testing.T) {
	dir, r := openRoot(t)
	if err := WriteJSON(r, "v.json", map[string]any{"k": []int{1}}, 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "v.json"))
	if !strings.HasSuffix(string(got), "}\n") || !strings.Contains(string(got), "\"k\": [\n    1\n  ]") {
		t.Fatalf("WriteJSON wrote %q", got)
	}
	if err := WriteJSON(r, "bad.json", func() {}, 0o644); err == nil {
		t.Fatal("WriteJSON of a func succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); !os.IsNotExist(err) {
		t.Fatalf("a failed encode left a file: %v", err)
	}
	if err := SyncDir(r, "."); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(r, "nope"); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}

// TestMkdirAll: an existing directory is found without asking for it to
// be made; everything else is judged as root.MkdirAll judges it.
func TestMkdirAll(t *testing.T) {
	dir, r := openRoot(t)
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"in": "a", "out": outside, "tofile": "file"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	counted := func(r *os.Root, name string, perm os.FileMode) error { calls++; return r.MkdirAll(name, perm) }
	tests := []struct {
		name    string
		ok      bool
		creates bool // root.MkdirAll is called
	}{
		{"a", true, false},
		{"a/b", true, false},
		{".", true, false},
		{"a/b/c/d", true, true},
		{"in", true, true}, // a symlink to a directory inside: as root.MkdirAll
		{"in/new", true, true},
		{"out", false, true},
		{"out/new", false, true},
		{"tofile", false, true},
		{"file", false, true},
		{"file/x", false, true},
		{"../escape", false, true},
	}
	for _, tt := range tests {
		calls = 0
		err := mkdirAll(r, tt.name, 0o755, counted)
		if (err == nil) != tt.ok {
			t.Errorf("MkdirAll(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err2 := MkdirAll(r, tt.name, 0o755); (err2 == nil) != tt.ok {
			t.Errorf("MkdirAll(%q) again = %v, want ok %v", tt.name, err2, tt.ok)
		}
		if (calls > 0) != tt.creates {
			t.Errorf("MkdirAll(%q) called root.MkdirAll %d times, want %v", tt.name, calls, tt.creates)
		}
		if fi, err := os.Stat(filepath.Join(dir, tt.name)); tt.ok && (err != nil || !fi.IsDir()) {
			t.Errorf("after MkdirAll(%q): %v, want a directory", tt.name, err)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("MkdirAll made %d entries outside the root", len(ents))
	}
}

// WriteBuffers writes its pieces one after the other, byte for byte, past
// the count one writev takes and with empty pieces among them, and leaves
// no temporary file.
func TestWriteBuffers(t *testing.T) {
	dir, r := openRoot(t)
	var bufs [][]byte
	for i := range 3000 {
		bufs = append(bufs, bytes.Repeat([]byte{byte('a' + i%26)}, i%7))
	}
	if err := WriteBuffers(r, "f.json", bufs, 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f.json"))
	if want := bytes.Join(bufs, nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (%v), want the %d written", len(got), err, len(want))
	}
	if err := WriteBuffers(r, "f.json", [][]byte{[]byte("one\n")}, 0o640); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "f.json")); err != nil || string(got) != "one\n" {
		t.Fatalf("one piece: %q, %v", got, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("directory holds %v (%v), want f.json alone", ents, err)
	}
}
