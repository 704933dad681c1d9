package postgres

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// A *Store is a workspace.Store: the CLI, the MCP server and the demo go
// through it as through the file tree.
var _ workspace.Store = (*Store)(nil)

// readTimeout bounds each call of the Store's interface that does not
// take a lock (within the caller's context, which may end it sooner), and
// each read that is given no context.
const readTimeout = 30 * time.Second

// readCtx is the context of a read that was given none.
func (s *Store) readCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), readTimeout)
}
