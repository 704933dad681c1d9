package files_test

import (
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestConformance runs the suite every store passes against a fresh tree
// for each part, served by the real daemon.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, fresh)
}

// TestConformancePoll runs the suite with the daemon woken by the poll
// source, the default where there is no inotify.
func TestConformancePoll(t *testing.T) {
	t.Parallel()
	storetest.RunServed(t, fresh, servetest.Options{Wake: workspace.WakeOptions{Mode: "poll", Interval: 20 * time.Millisecond}})
}

func fresh(t *testing.T) workspace.Served {
	s, err := files.Init(t.TempDir(), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
