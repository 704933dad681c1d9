package sqlite

import (
	"context"

	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// LockTokens does nothing (sqlstore.Driver): a change of the grants is one
// BEGIN IMMEDIATE transaction, which holds the whole database.
func (sqlDriver) LockTokens(context.Context, sqlstore.Executor, string) error { return nil }
