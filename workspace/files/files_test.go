package files_test

import (
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// TestConformance runs the suite every store passes against a fresh tree
// for each part, served by the real daemon.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) workspace.Served {
		s, err := files.Init(t.TempDir(), workspace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
