//go:build unix

package locking

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// AcquireAt takes the same lock as Acquire on the same file (each excludes
// the other), writes its holder record, names the holder on a timeout,
// never follows a symlink in the lock file's place, and leaves the lock
// free after Release.
func TestAcquireAt(t *testing.T) {
	t.Parallel()
	dir, d := openTempDir(t)
	path := filepath.Join(dir, "task.lock")
	ctx := context.Background()
	quick := Options{Timeout: 20 * time.Millisecond, Poll: time.Millisecond}

	l, err := AcquireAt(ctx, d, "task.lock", path, Options{Agent: "at"})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHolder(path); err != nil || h.Agent != "at" || h.PID != os.Getpid() {
		t.Errorf("holder = %+v, %v; want this process as agent at", h, err)
	}
	if held, _, err := Held(path); err != nil || !held {
		t.Errorf("Held = %v, %v; want held", held, err)
	}
	var te *TimeoutError
	if _, err := Acquire(ctx, path, quick); !errors.As(err, &te) || te.Holder == nil || te.Holder.Agent != "at" {
		t.Fatalf("Acquire beside AcquireAt = %v, want a timeout naming agent at", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if held, _, _ := Held(path); held {
		t.Error("still held after Release")
	}

	other, err := Acquire(ctx, path, Options{Agent: "path"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireAt(ctx, d, "task.lock", path, quick)
	if !errors.As(err, &te) || !errors.Is(err, ErrLocked) || te.Holder == nil || te.Holder.Agent != "path" || te.Path != path {
		t.Fatalf("AcquireAt beside Acquire = %v, want a timeout naming agent path at %s", err, path)
	}
	other.Release()

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := AcquireAt(cctx, d, "task.lock", path, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("AcquireAt with its context done = %v, want context.Canceled", err)
	}

	if err := os.Symlink("task.lock", filepath.Join(dir, "link.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireAt(ctx, d, "link.lock", filepath.Join(dir, "link.lock"), quick); err == nil {
		t.Error("AcquireAt followed a symlink")
	}
	for _, name := range []string{"", ".", "..", "sub/x.lock"} {
		if _, err := AcquireAt(ctx, d, name, path, quick); err == nil {
			t.Errorf("AcquireAt(%q) took a lock, want a refusal", name)
		}
	}
}

// AcquireAt's holder record replaces a longer one whole: the file is
// exactly the new record, one JSON line.
func TestAcquireAtShorterRecordReplacesLonger(t *testing.T) {
	t.Parallel()
	dir, d := openTempDir(t)
	path := filepath.Join(dir, "x.lock")
	for _, agent := range []string{"a-rather-long-agent-name-indeed", "b"} {
		l, err := AcquireAt(context.Background(), d, "x.lock", path, Options{Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h Holder
	if err := json.Unmarshal(raw, &h); err != nil || h.Agent != "b" || h.PID != os.Getpid() {
		t.Fatalf("record after a shorter rewrite: %q: %+v, %v; want this process as agent b", raw, h, err)
	}
	if n := bytes.Count(raw, []byte("\n")); n != 1 || raw[len(raw)-1] != '\n' {
		t.Errorf("record %q is not one line", raw)
	}
}

// openTempDir is a new temporary directory and its descriptor, closed
// when t ends.
func openTempDir(t *testing.T) (string, *os.File) {
	t.Helper()
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return dir, d
}
