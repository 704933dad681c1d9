package sqlite

import (
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// BenchmarkLoneClaim100 times one claim committed in a task of 100
// subtasks, BenchmarkLoneClaim10000 in one of 10,000
// (storetest.BenchLoneClaim).
func BenchmarkLoneClaim100(b *testing.B) { benchLoneClaim(b, 100) }

// BenchmarkLoneClaim10000: see BenchmarkLoneClaim100.
func BenchmarkLoneClaim10000(b *testing.B) { benchLoneClaim(b, 10000) }

func benchLoneClaim(b *testing.B, size int) {
	s, _ := newStore(b)
	storetest.BenchLoneClaim(b, s, size, s.Committer, workspace.CommitRequest{})
}
