package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
)

// CopyReport says what Copy wrote.
type CopyReport struct {
	Path  string // the copy, absolute
	Bytes int64  // its size
}

// Copy writes a consistent copy of the database into the file dst, while
// other processes keep writing: SQLite's VACUUM INTO reads one snapshot
// (a read transaction, which in WAL mode no writer waits for), so the
// copy holds every transaction committed before it began and none after.
// The copy is written into a temporary file beside dst, checked with
// PRAGMA integrity_check and synced, and only then given its name: dst is
// never seen half written. An existing dst is refused (ErrConflict)
// unless replace; even then a dst some process has open (its -wal or
// -shm file is there, or a daemon holds its .lock) is refused, since its
// old log would be replayed into the new file. The copy is a workspace of
// its own: sqlite:dst opens it. The .lock file and .locks/ directory
// beside the database are flocks, not data, and are not copied.
func (s *Store) Copy(ctx context.Context, dst string, replace bool) (CopyReport, error) {
	dst, err := filepath.Abs(dst)
	if err != nil {
		return CopyReport{}, fmt.Errorf("copy to %s: %w", dst, err)
	}
	if err := s.checkTarget(dst, replace); err != nil {
		return CopyReport{}, err
	}
	f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return CopyReport{}, fmt.Errorf("copy to %s: %w", dst, err)
	}
	tmp := f.Name()
	f.Close()
	defer os.Remove(tmp)
	// The copy is readable by whom the database is.
	if fi, err := os.Stat(s.path); err == nil {
		if err := os.Chmod(tmp, fi.Mode().Perm()); err != nil {
			return CopyReport{}, fmt.Errorf("copy to %s: %w", dst, err)
		}
	}
	if err := s.vacuumInto(ctx, tmp); err != nil {
		return CopyReport{}, fmt.Errorf("copy to %s: %w", dst, err)
	}
	if err := checkCopy(ctx, tmp); err != nil {
		return CopyReport{}, fmt.Errorf("copy to %s: %w", dst, err)
	}
	size, err := syncFile(tmp)
	if err != nil {
		return CopyReport{}, fmt.Errorf("copy to %s: %w", dst, err)
	}
	if err := publish(tmp, dst, replace); err != nil {
		return CopyReport{}, err
	}
	return CopyReport{Path: dst, Bytes: size}, nil
}

// checkTarget refuses a dst that is the database itself, exists (unless
// replace), or is in use.
func (s *Store) checkTarget(dst string, replace bool) error {
	if same(dst, s.path) {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "copy to " + dst, Msg: "that is the database being copied",
			Hint: "name another file"}
	}
	if _, err := os.Lstat(dst); err == nil && !replace {
		return exists(dst)
	}
	if !replace {
		return nil
	}
	for _, side := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(dst + side); err == nil {
			return &workspace.Error{Kind: workspace.ErrConflict, Op: "copy to " + dst,
				Msg:  dst + side + " exists: a process has the file open, or did not close it cleanly",
				Hint: "stop what uses it and copy again, or copy to a new file"}
		}
	}
	if held, _, _ := locking.Held(dst + ".lock"); held {
		return &workspace.Error{Kind: workspace.ErrConflict, Op: "copy to " + dst, Msg: "a daemon is serving it",
			Hint: "stop the daemon of sqlite:" + dst + " first, or copy to a new file"}
	}
	return nil
}

func exists(dst string) error {
	return &workspace.Error{Kind: workspace.ErrConflict, Op: "copy to " + dst, Msg: "the file exists",
		Hint: "name a new file, or add --force to replace it"}
}

func same(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// vacuumInto writes the snapshot into the empty file tmp, retried while
// SQLite reports busy (a checkpoint resetting the log).
func (s *Store) vacuumInto(ctx context.Context, tmp string) error {
	for {
		_, err := s.rdb.ExecContext(ctx, "VACUUM INTO $1", tmp)
		if !isBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkCopy opens the copy as a workspace of its own would and runs
// SQLite's integrity check on it.
func checkCopy(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("check the copy: integrity_check says %q", res)
	}
	return nil
}

// syncFile makes the copy durable and returns its size.
func syncFile(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// publish gives tmp its name: a rename when replacing, else a link that
// fails if dst appeared meanwhile (never clobbering it); then the
// directory is synced so the name is durable too.
func publish(tmp, dst string, replace bool) error {
	var err error
	if replace {
		err = os.Rename(tmp, dst)
	} else if err = os.Link(tmp, dst); err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: check, then rename.
		if _, serr := os.Lstat(dst); serr == nil {
			return exists(dst)
		}
		err = os.Rename(tmp, dst)
	}
	if errors.Is(err, fs.ErrExist) {
		return exists(dst)
	}
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	d, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return nil
}
