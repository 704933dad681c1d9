package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

const src = "tasks/t1/state.json"

// clock is a test time source that advances by step on every call.
type clock struct {
	t    time.Time
	step time.Duration
}

func (c *clock) now() time.Time {
	t := c.t
	c.t = c.t.Add(c.step)
	return t
}

var t0 = time.Date(2024, 1, 15, 10, 0, 0, 123456789, time.UTC)

func newSet(t testing.TB, keep int, step time.Duration) (*Set, *os.Root) {
	t.Helper()
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	if err := root.MkdirAll("tasks/t1", 0o755); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: t0, step: step}
	return &Set{Root: root, Dir: "tasks/t1/backups", Prefix: "state_", Keep: keep, Now: c.now}, root
}

// write replaces src by rename, as the daemon does.
func write(t testing.TB, root *os.Root, data string) {
	t.Helper()
	if err := atomicfile.WriteFile(root, src, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func names(list []Backup) []string {
	var out []string
	for _, b := range list {
		out = append(out, b.Name)
	}
	return out
}

func TestTakeKeepsEachVersion(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	var want []string
	for i := range 4 {
		content := fmt.Sprintf(`{"version": %d}`+"\n", i)
		write(t, root, content)
		b, err := s.Take(src)
		if err != nil {
			t.Fatal(err)
		}
		// The backup is the very inode of src (no copy) until src is replaced.
		bi, _ := root.Stat(b.Path)
		si, _ := root.Stat(src)
		if !os.SameFile(bi, si) {
			t.Errorf("backup %s is not a hard link of %s", b.Path, src)
		}
		if b.Size != int64(len(content)) || !b.Time.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Errorf("backup %d = %+v", i, b)
		}
		want = append(want, content)
	}
	write(t, root, `{"version": "next"}`)

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("List = %v, want %d backups", names(list), len(want))
	}
	for i, b := range list {
		got, err := root.ReadFile(b.Path)
		if err != nil {
			t.Fatal(err)
		}
		// Newest first: list[0] holds the last version backed up.
		if w := want[len(want)-1-i]; string(got) != w {
			t.Errorf("%s = %q, want %q", b.Name, got, w)
		}
	}
	if got := list[0].Name; got != "state_20240115T100003.123456789Z.json" {
		t.Errorf("newest name = %s", got)
	}
	if list[0].Path != "tasks/t1/backups/"+list[0].Name {
		t.Errorf("path = %s", list[0].Path)
	}
}

func TestKeepPruning(t *testing.T) {
	cases := []struct {
		name  string
		keep  int
		takes int
		want  int
	}{
		{"fewer than keep", 3, 2, 2},
		{"exactly keep", 3, 3, 3},
		{"more than keep", 3, 7, 3},
		{"keep one", 1, 5, 1},
		{"zero means default", 0, DefaultKeep + 4, DefaultKeep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, root := newSet(t, tc.keep, time.Millisecond)
			var taken []string
			for i := range tc.takes {
				write(t, root, fmt.Sprint(i))
				b, err := s.Take(src)
				if err != nil {
					t.Fatal(err)
				}
				taken = append(taken, b.Name)
			}
			list, err := s.List()
			if err != nil {
				t.Fatal(err)
			}
			slices.Reverse(taken)
			if got := names(list); !slices.Equal(got, taken[:tc.want]) {
				t.Errorf("kept %v, want the newest %v", got, taken[:tc.want])
			}
		})
	}
}

// Add links without pruning, and Sync does not prune either; Settle
// prunes to Keep, whatever the number of Adds before it, and a Settle or
// Sync of a Set with no directory is a no-op.
func TestAddThenSettle(t *testing.T) {
	s, root := newSet(t, 3, time.Millisecond)
	if err := s.Settle(); err != nil {
		t.Fatalf("Settle before any backup: %v", err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync before any backup: %v", err)
	}
	var added []string
	for i := range 7 {
		write(t, root, fmt.Sprint(i))
		b, err := s.Add(src)
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, b.Name)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 7 {
		t.Fatalf("after 7 Adds: %v, want all 7 (Add does not prune)", names(list))
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if list, err = s.List(); err != nil || len(list) != 7 {
		t.Fatalf("after Sync: %v (%v), want all 7 (Sync does not prune)", names(list), err)
	}
	if err := s.Settle(); err != nil {
		t.Fatal(err)
	}
	list, err = s.List()
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(added)
	if got := names(list); !slices.Equal(got, added[:3]) {
		t.Errorf("after Settle: %v, want the newest %v", got, added[:3])
	}
	// The newest backup is the version last added (a link to src).
	if got, _ := root.ReadFile(list[0].Path); string(got) != "6" {
		t.Errorf("newest backup = %q, want %q", got, "6")
	}
}

func TestCollisionFreeStamps(t *testing.T) {
	s, root := newSet(t, 20, 0) // a frozen clock
	const n = 12
	for i := range n {
		write(t, root, fmt.Sprint(i))
		if _, err := s.Take(src); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := n - 1; i >= 0; i-- {
		suffix := ""
		if i > 0 {
			suffix = fmt.Sprintf("-%d", i)
		}
		want = append(want, "state_20240115T100000.123456789Z"+suffix+".json")
	}
	if got := names(list); !slices.Equal(got, want) {
		t.Fatalf("names = %v\nwant %v", got, want)
	}
	// Order is the order taken: each backup holds its own version.
	for i, b := range list {
		got, _ := root.ReadFile(b.Path)
		if w := fmt.Sprint(n - 1 - i); string(got) != w {
			t.Errorf("%s = %q, want %q", b.Name, got, w)
		}
	}
}

func TestConcurrentTakesNeverCollide(t *testing.T) {
	s, root := newSet(t, 100, 0)
	s.Now = func() time.Time { return t0 } // safe for concurrent use
	write(t, root, "x")
	const n = 16
	var wg sync.WaitGroup
	var failed atomic.Bool
	got := make(chan string, n)
	for range n {
		wg.Go(func() {
			b, err := s.Take(src)
			if err != nil {
				t.Error(err)
				failed.Store(true)
				return
			}
			got <- b.Name
		})
	}
	wg.Wait()
	close(got)
	seen := map[string]bool{}
	for name := range got {
		if seen[name] {
			t.Errorf("two Takes returned %s", name)
		}
		seen[name] = true
	}
	list, _ := s.List()
	if len(list) != n || len(seen) != n {
		t.Errorf("%d backups listed, %d names returned; want %d", len(list), len(seen), n)
	}
}

func TestTakeMissingSource(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	b, err := s.Take(src)
	if err != nil || b != (Backup{}) {
		t.Fatalf("Take(missing) = %+v, %v; want zero and nil", b, err)
	}
	if _, err := root.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Take(missing) created %s: %v", s.Dir, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 0 {
		t.Errorf("List without a directory = %v, %v", list, err)
	}
}

func TestTakeRefusesSymlinkSource(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	if err := root.WriteFile("tasks/t1/other.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := root.Symlink("other.json", src); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(src); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Take(symlink) = %v, want ErrNotRegular", err)
	}
}

func TestListIgnoresOtherNames(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	write(t, root, "{}")
	b, err := s.Take(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		".state_20240115T100000.123456789Z.json123", // a renameio temp file
		".state_20240115T100001.123456789Z.json",
		"state_20240115T100000.123Z.json", // not the fixed width
		"state_20240115T100000.123456789Z-0.json",
		"state_20240115T100000.123456789Z-01.json",
		"state_20240115T100000.123456789Z-x.json",
		"state_20240115T100000.123456789Z.json.bak",
		"plan_20240115T100000.123456789Z.json",
		"state_.json",
		"notes.txt",
	} {
		if err := root.WriteFile(s.Dir+"/"+name, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := names(list); !slices.Equal(got, []string{b.Name}) {
		t.Errorf("List = %v, want only %s", got, b.Name)
	}
}

// validState accepts a JSON object with a journal_seq field.
func validState(data []byte) error {
	var v struct {
		Seq *int `json:"journal_seq"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if v.Seq == nil {
		return errors.New("no journal_seq")
	}
	return nil
}

func TestNewestValidSkipsCorrupt(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	good := `{"journal_seq": 7}`
	versions := []string{
		`{"journal_seq": 6}`,
		good,
		`{"journal_seq": 8, "subta`,   // truncated
		string(make([]byte, 64)),      // zeroed
		`{"journal_seq": 9} trailing`, // invalid JSON
		`{"status": "executing"}`,     // valid JSON, invalid state
	}
	for _, v := range versions {
		write(t, root, v)
		if _, err := s.Take(src); err != nil {
			t.Fatal(err)
		}
	}
	b, data, skipped, err := s.NewestValid(validState)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != good || b.Name != "state_20240115T100001.123456789Z.json" {
		t.Errorf("NewestValid = %s %q, want the second backup %q", b.Name, data, good)
	}
	if len(skipped) != 4 {
		t.Fatalf("skipped %d backups, want 4: %+v", len(skipped), skipped)
	}
	for i, sk := range skipped {
		if sk.Err == nil {
			t.Errorf("skipped[%d] %s has no reason", i, sk.Backup.Name)
		}
		if want := t0.Add(time.Duration(5-i) * time.Second); !sk.Backup.Time.Equal(want) {
			t.Errorf("skipped[%d] = %s, want newest first", i, sk.Backup.Name)
		}
	}

	// nil accepts anything readable: the newest.
	b, _, skipped, err = s.NewestValid(nil)
	if err != nil || len(skipped) != 0 || !b.Time.Equal(t0.Add(5*time.Second)) {
		t.Errorf("NewestValid(nil) = %s, %d skipped, %v", b.Name, len(skipped), err)
	}

	// Nothing valid at all.
	_, _, skipped, err = s.NewestValid(func([]byte) error { return errors.New("no") })
	if !errors.Is(err, ErrNoValidBackup) || len(skipped) != len(versions) {
		t.Errorf("all invalid: err %v, %d skipped", err, len(skipped))
	}
}

func TestNewestValidRefusesNonRegular(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	s.MaxBytes = 100
	write(t, root, `{"journal_seq": 1}`)
	old, err := s.Take(src)
	if err != nil {
		t.Fatal(err)
	}
	// Newer entries named like backups: a symlink to a valid file inside the
	// root, a FIFO, a directory and a file over MaxBytes.
	if err := root.WriteFile("tasks/t1/elsewhere.json", []byte(`{"journal_seq": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(p string) error
		want error
	}{
		{"symlink", func(p string) error { return root.Symlink("../elsewhere.json", p) }, ErrNotRegular},
		{"fifo", func(p string) error {
			return syscall.Mkfifo(filepath.Join(root.Name(), filepath.FromSlash(p)), 0o644)
		}, ErrNotRegular},
		{"directory", func(p string) error { return root.Mkdir(p, 0o755) }, ErrNotRegular},
		{"oversized", func(p string) error {
			return root.WriteFile(p, []byte(`{"journal_seq": 5, "pad": "`+string(bytes.Repeat([]byte("x"), 200))+`"}`), 0o644)
		}, ErrTooLarge},
	}
	want := map[string]error{}
	for i, tc := range cases {
		name := s.name(t0.Add(time.Duration(10+i)*time.Second), 0)
		if err := tc.make(s.Dir + "/" + name); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want[name] = tc.want
	}

	b, data, skipped, err := s.NewestValid(validState)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != old.Name || string(data) != `{"journal_seq": 1}` {
		t.Errorf("NewestValid = %s %q, want %s", b.Name, data, old.Name)
	}
	if len(skipped) != len(cases) {
		t.Fatalf("skipped %+v, want %d", skipped, len(cases))
	}
	for _, sk := range skipped {
		if !errors.Is(sk.Err, want[sk.Backup.Name]) {
			t.Errorf("%s skipped for %v, want %v", sk.Backup.Name, sk.Err, want[sk.Backup.Name])
		}
	}
	for name, w := range want {
		if _, err := s.Read(name); !errors.Is(err, w) {
			t.Errorf("Read(%s) = %v, want %v", name, err, w)
		}
		if err := s.Restore(name, src); !errors.Is(err, w) {
			t.Errorf("Restore(%s) = %v, want %v", name, err, w)
		}
	}
}

func TestRestoreRejectsBadNames(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	write(t, root, "{}")
	b, err := s.Take(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"", ".", "..", "../state.json", "../backups/" + b.Name, "sub/" + b.Name,
		"/" + b.Name, "." + b.Name, "state.json", b.Name + "/",
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.Restore(name, src); !errors.Is(err, ErrBadName) {
				t.Errorf("Restore(%q) = %v, want ErrBadName", name, err)
			}
		})
	}
}

func TestRestore(t *testing.T) {
	s, root := newSet(t, 10, time.Second)
	write(t, root, `{"journal_seq": 1}`)
	b1, err := s.Take(src)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, `{"journal_seq": 2}`)
	b2, err := s.Take(src)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "garbage")

	if err := s.Restore(b1.Name, src); err != nil {
		t.Fatal(err)
	}
	if got, _ := root.ReadFile(src); string(got) != `{"journal_seq": 1}` {
		t.Errorf("after restore %s = %q", src, got)
	}
	// Restoring writes a new inode: the backup is not tied to src any more.
	write(t, root, "later")
	if got, _ := root.ReadFile(b1.Path); string(got) != `{"journal_seq": 1}` {
		t.Errorf("backup changed after src was rewritten: %q", got)
	}

	// A reader racing restores sees one whole version or the other.
	a, c := []byte(`{"journal_seq": 1}`), []byte(`{"journal_seq": 2}`)
	var stop atomic.Bool
	var torn atomic.Value
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			got, err := root.ReadFile(src)
			if err != nil || (!bytes.Equal(got, a) && !bytes.Equal(got, c) && string(got) != "later") {
				torn.Store(fmt.Sprintf("%q %v", got, err))
				return
			}
		}
	})
	for i := range 50 {
		name := b1.Name
		if i%2 == 1 {
			name = b2.Name
		}
		if err := s.Restore(name, src); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if v := torn.Load(); v != nil {
		t.Errorf("a reader saw %v", v)
	}
}

func TestCopyFallback(t *testing.T) {
	s, root := newSet(t, 10, 0)
	s.link = func(oldname, newname string) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: syscall.EPERM}
	}
	write(t, root, `{"journal_seq": 1}`)
	b1, err := s.Take(src)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := s.Take(src) // same stamp: must not overwrite b1
	if err != nil {
		t.Fatal(err)
	}
	if b1.Name == b2.Name {
		t.Fatalf("two copies named %s", b1.Name)
	}
	bi, _ := root.Stat(b1.Path)
	si, _ := root.Stat(src)
	if os.SameFile(bi, si) {
		t.Error("fallback made a link, not a copy")
	}
	write(t, root, `{"journal_seq": 2}`)
	for _, b := range []Backup{b1, b2} {
		if got, _ := root.ReadFile(b.Path); string(got) != `{"journal_seq": 1}` {
			t.Errorf("copy %s = %q", b.Name, got)
		}
	}
	if fi, _ := root.Stat(b1.Path); fi.Mode().Perm() != 0o644 {
		t.Errorf("copy mode %v, want the source's 0644", fi.Mode().Perm())
	}
}

// BenchmarkTake measures one backup of a 100 KiB state file, as the daemon
// takes it before every state write: link (or copy), prune to 10, fsync.
func BenchmarkTake(b *testing.B) {
	for _, mode := range []string{"link", "copy"} {
		b.Run(mode, func(b *testing.B) {
			s, root := newSet(b, 10, time.Microsecond)
			if mode == "copy" {
				s.link = func(o, n string) error { return &os.LinkError{Op: "link", Old: o, New: n, Err: syscall.ENOTSUP} }
			}
			write(b, root, string(bytes.Repeat([]byte("x"), 100<<10)))
			b.SetBytes(100 << 10)
			for b.Loop() {
				if _, err := s.Take(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
