package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The agents' tokens are the one SQL store's (sqlstore). The agent role
// has no right on the table; `workspaced token` and the servers connect
// as the daemon or the owner.

// LockTokens takes the tokens table's lock in tx (sqlstore.Driver),
// waiting at most the lock timeout; the transaction carries holder in
// its application_name meanwhile.
func (d driver) LockTokens(ctx context.Context, ex sqlstore.Executor, holder string) error {
	ms := max(time.Duration(d.s.Settings().LockTimeout).Milliseconds(), 1)
	if _, err := ex.Exec(ctx, "SELECT set_config('lock_timeout', $1, true), set_config('application_name', $2, true)",
		strconv.FormatInt(ms, 10), appName("workspaced tokens "+holder)); err != nil {
		return fmt.Errorf("update the tokens: %w", err)
	}
	if _, err := ex.Exec(ctx, "LOCK TABLE tokens IN EXCLUSIVE MODE"); err != nil {
		if pgCode(err) == "55P03" {
			return &workspace.Error{Kind: workspace.ErrLocked, Op: "update the tokens", Err: err,
				Hint: "another 'workspaced token' is changing them; try again"}
		}
		return fmt.Errorf("update the tokens: %w", err)
	}
	return nil
}
