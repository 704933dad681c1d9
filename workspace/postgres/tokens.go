package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The agents' tokens of a workspace on PostgreSQL are rows of tokens: the
// SHA-256 of each token and its grant, as config/tokens.json holds them
// on files. A look-up reads the row of the token's hash on every call, so
// a revoke takes effect at the next request. The agent role has no right
// on the table; `workspaced token` and the servers connect as the daemon
// or the owner.

// Tokens is the Keeper of the workspace's grants.
func (s *Store) Tokens() tokens.Keeper { return tokenTable{s} }

// tokenTable is the tokens.Keeper of a Store.
type tokenTable struct{ s *Store }

func (t tokenTable) Now() time.Time { return now() }

// Lookup reads the grant whose hash is token's. The hash is looked up by
// the primary key: what a timing could tell about it is a SHA-256 of 32
// random bytes, which says nothing about any token.
func (t tokenTable) Lookup(token string) (tokens.Grant, error) {
	ctx, cancel := t.s.readCtx()
	defer cancel()
	var doc string
	err := t.s.pool.QueryRow(ctx, "SELECT doc FROM tokens WHERE sha256 = $1", tokens.Hash(token)).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return tokens.Grant{}, tokens.ErrUnknown
	}
	if err != nil {
		return tokens.Grant{}, fmt.Errorf("look the token up: %w", err)
	}
	return sqlstore.DecodeGrant(doc)
}

func (t tokenTable) List(ctx context.Context) ([]tokens.Grant, error) {
	return listGrants(ctx, t.s.pool)
}

func listGrants(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]tokens.Grant, error) {
	rows, err := q.Query(ctx, "SELECT doc FROM tokens ORDER BY n, sha256")
	if err != nil {
		return nil, fmt.Errorf("list the tokens: %w", err)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the tokens: %w", err)
	}
	return sqlstore.DecodeGrants(docs)
}

// Update changes the grants in one transaction holding the table's lock
// (writers one at a time, readers never blocked): the grants are read,
// changed, checked whole and written back.
func (t tokenTable) Update(ctx context.Context, holder string, change func(*tokens.FileDoc) error) error {
	return pgx.BeginFunc(ctx, t.s.pool, func(tx pgx.Tx) error {
		ms := max(time.Duration(t.s.Settings().LockTimeout).Milliseconds(), 1)
		if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', $1, true), set_config('application_name', $2, true)",
			strconv.FormatInt(ms, 10), appName("workspaced tokens "+holder)); err != nil {
			return fmt.Errorf("update the tokens: %w", err)
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE tokens IN EXCLUSIVE MODE"); err != nil {
			if pgCode(err) == "55P03" {
				return &workspace.Error{Kind: workspace.ErrLocked, Op: "update the tokens", Err: err,
					Hint: "another 'workspaced token' is changing them; try again"}
			}
			return fmt.Errorf("update the tokens: %w", err)
		}
		gs, err := listGrants(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := sqlstore.ChangeGrants(gs, change)
		if err != nil {
			return err
		}
		return writeGrants(ctx, tx, rows)
	})
}

// writeGrants replaces the rows of tokens with rows, in order.
func writeGrants(ctx context.Context, tx pgx.Tx, rows []sqlstore.GrantRow) error {
	if _, err := tx.Exec(ctx, "DELETE FROM tokens"); err != nil {
		return fmt.Errorf("write the tokens: %w", err)
	}
	for i, r := range rows {
		if _, err := tx.Exec(ctx, "INSERT INTO tokens (sha256, n, doc) VALUES ($1, $2, $3)", r.SHA256, i+1, r.Doc); err != nil {
			return fmt.Errorf("write the tokens: %w", err)
		}
	}
	return nil
}
