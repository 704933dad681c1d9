// Package servetest runs the real daemon in-process for tests, over any
// store that can be served: the file tree, PostgreSQL, or another.
package servetest

import (
	"context"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// Daemon is a daemon running in-process.
type Daemon struct {
	*daemon.Daemon
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
}

// Start runs a daemon over s (cfg.Store is set to s) and returns once its
// start-up scan is done; it is stopped when the test ends, and the test
// fails if Run returned an error.
func Start(t testing.TB, s workspace.Served, cfg daemon.Config) *Daemon {
	t.Helper()
	cfg.Store = s
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = -1
	}
	ready := make(chan struct{}, 1)
	user := cfg.Ready
	cfg.Ready = func() {
		if user != nil {
			user()
		}
		select {
		case ready <- struct{}{}:
		default:
		}
	}
	d, err := daemon.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Daemon{Daemon: d, t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	select {
	case <-ready:
	case err := <-r.done:
		t.Fatalf("daemon stopped at start: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("daemon not ready after a minute")
	}
	t.Cleanup(r.Stop)
	return r
}

// Stop stops the daemon (once) and fails the test if Run returned an
// error.
func (r *Daemon) Stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		r.t.Errorf("daemon: %v", err)
	}
}

// Tree opens the tree at dir for a daemon, with grace as the grace period
// of markers that do not parse (zero: the settings'), and closes it when
// the test ends.
func Tree(t testing.TB, dir string, grace time.Duration) *files.Store {
	t.Helper()
	s, err := files.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.SetServeOptions(files.ServeOptions{Grace: grace})
	t.Cleanup(func() { s.Close() })
	return s
}

// StartTree runs a daemon over the tree at dir (Tree, then Start).
func StartTree(t testing.TB, dir string, grace time.Duration, cfg daemon.Config) *Daemon {
	t.Helper()
	return Start(t, Tree(t, dir, grace), cfg)
}

// Options are what a test sets of the daemon it starts through StartWith:
// suites above the stores (workspace/storetest) set these and need not
// know the daemon's package.
type Options struct {
	// Wake configures the store's wake-up source.
	Wake workspace.WakeOptions
	// Rescan is the period of the full rescan (zero: the settings').
	Rescan time.Duration
	// Now is the daemon's clock (nil: time.Now).
	Now func() time.Time
}

// StartWith is Start with the daemon configured by o.
func StartWith(t testing.TB, s workspace.Served, o Options) *Daemon {
	t.Helper()
	return Start(t, s, daemon.Config{Wake: o.Wake, Rescan: o.Rescan, Now: o.Now})
}
