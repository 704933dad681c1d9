package files

import (
	"io"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/fscheck"
	"github.com/workspaced/workspaced/workspace/livesocket"
)

// The daemon's report to status (workspace/livesocket) and the check of
// the filesystem (workspace/fscheck) serve SQLite as well; these are
// their names here.

// ErrNoLive: no daemon answers for the root.
var ErrNoLive = livesocket.ErrNoLive

// ServeLive answers status on the root's socket with report() until the
// returned Closer is closed (workspace.LiveServer).
func (s *Store) ServeLive(report func() workspace.Live) (io.Closer, error) {
	return livesocket.Serve(s.Dir(), report)
}

// ReadLive asks the daemon serving root for its report (livesocket.Read).
// It fails with ErrNoLive when none answers.
func ReadLive(root string) (workspace.Live, error) { return livesocket.Read(root) }

// CheckFilesystem is fscheck.Check.
func CheckFilesystem(dir string) (name string, unsafe bool, err error) { return fscheck.Check(dir) }
