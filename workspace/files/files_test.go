package files_test

import (
	"context"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) workspace.Store {
		s, err := files.Init(t.TempDir(), workspace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Hooks{Apply: applyWaiting})
}

// applyWaiting runs a daemon over the tree until its start-up scan has
// applied every marker waiting, then stops it.
func applyWaiting(t *testing.T, s workspace.Store) {
	t.Helper()
	ready := make(chan struct{})
	d, err := daemon.New(daemon.Config{Root: s.(*files.Store).Dir(), CleanupInterval: -1, Ready: func() { close(ready) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("daemon ended before it was ready: %v", err)
	}
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatalf("daemon: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
