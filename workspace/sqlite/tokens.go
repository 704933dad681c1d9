package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// The agents' tokens of a workspace on SQLite are rows of tokens: the
// SHA-256 of each token and its grant, as config/tokens.json holds them
// on files; the token itself is never stored. A look-up reads the row of
// the token's hash on every call, so a revoke takes effect at the next
// request, in this process or any other.

// Tokens is the Keeper of the workspace's grants.
func (s *Store) Tokens() tokens.Keeper { return tokenTable{s} }

// tokenTable is the tokens.Keeper of a Store.
type tokenTable struct{ s *Store }

func (t tokenTable) Now() time.Time { return now() }

// Lookup reads the grant whose hash is token's, by the primary key: what
// a timing could tell about it is a SHA-256 of 32 random bytes, which
// says nothing about any token.
func (t tokenTable) Lookup(token string) (tokens.Grant, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	var doc string
	err := t.s.rdb.QueryRowContext(ctx, "SELECT doc FROM tokens WHERE sha256 = $1", tokens.Hash(token)).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return tokens.Grant{}, tokens.ErrUnknown
	}
	if err != nil {
		return tokens.Grant{}, fmt.Errorf("look the token up: %w", err)
	}
	return sqlstore.DecodeGrant(doc)
}

func (t tokenTable) List(ctx context.Context) ([]tokens.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return listGrants(ctx, t.s.rdb)
}

func listGrants(ctx context.Context, q querier) ([]tokens.Grant, error) {
	docs, err := strings1(q.QueryContext(ctx, "SELECT doc FROM tokens ORDER BY n, sha256"))
	if err != nil {
		return nil, fmt.Errorf("list the tokens: %w", err)
	}
	return sqlstore.DecodeGrants(docs)
}

// Update changes the grants in one BEGIN IMMEDIATE transaction (writers
// one at a time, readers never blocked): the grants are read, changed,
// checked whole as a file of them would be, and written back.
func (t tokenTable) Update(ctx context.Context, holder string, change func(*tokens.FileDoc) error) error {
	return t.s.write(ctx, func(tx wtx) error {
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
func writeGrants(ctx context.Context, tx querier, rows []sqlstore.GrantRow) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM tokens"); err != nil {
		return fmt.Errorf("write the tokens: %w", err)
	}
	for i, r := range rows {
		if _, err := tx.ExecContext(ctx, "INSERT INTO tokens (sha256, n, doc) VALUES ($1, $2, $3)", r.SHA256, i+1, r.Doc); err != nil {
			return fmt.Errorf("write the tokens: %w", err)
		}
	}
	return nil
}
