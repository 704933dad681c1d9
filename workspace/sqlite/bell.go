package sqlite

import (
	"os"
	"path/filepath"
	"sync"
)

// The commit bell: after each commit that wrote, the daemon writes one
// byte into <db>.commits, a file beside the database. A write of the log
// heard by a watch says only that a commit is under way: its frames
// reach the log before its fsync (synchronous=FULL) and before the log's
// index makes it visible, so a waiter that heard one reads the data
// version again and again until it moves (wakeups.go). The bell comes
// once the commit is durable and visible: a waiter that hears it reads
// once, at once. A waiter hears it on a watch of the file itself, which
// stays when the loop takes the directory's watch off after a write.
// The bell is a hint and nothing more: without it (no daemon has rung
// yet, a daemon of a build before it, the file not writable) the
// waiters follow the log as before. In the daemon's own process the
// commit wakes the commit hub's waiters directly.

// bellSuffix names the bell beside the database.
const bellSuffix = ".commits"

// bellPath is the bell of the database at path.
func bellPath(path string) string { return path + bellSuffix }

// bell is the daemon's handle on the file, opened at its first ring and
// kept open; nil when it cannot be (the daemon rings no bell then).
type bell struct {
	once sync.Once
	f    *os.File
}

// ring writes the bell of the database at path: one byte, rewritten in
// place, so the file never grows. Not synced: what is rung is the write
// itself, which every watch of the file hears.
func (b *bell) ring(path string) {
	b.once.Do(func() {
		f, err := os.OpenFile(bellPath(path), os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			b.f = f
		}
	})
	if b.f != nil {
		_, _ = b.f.WriteAt([]byte{'\n'}, 0)
	}
}

func (b *bell) close() error {
	b.once.Do(func() {}) // a ring under way has opened it, or none will
	if b.f == nil {
		return nil
	}
	return b.f.Close()
}

// isBell says whether name (a watch's event) is the bell of the database
// at path.
func isBell(name, path string) bool { return filepath.Base(name) == filepath.Base(path)+bellSuffix }
