package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Statements prepared once: parsing a statement costs about as much CPU
// as running it, and a commit runs a dozen. A pool learns its
// statements: one a transaction ran twice unprepared is prepared on the
// pool after that transaction (outside it: a write pool has one
// connection), and runs prepared from then on. A process that runs a
// statement once (a command) prepares nothing.

// maxPrepared bounds the statements one pool keeps prepared.
const maxPrepared = 64

// stmtCache is one pool's prepared statements.
type stmtCache struct {
	db     *sql.DB
	mu     sync.Mutex
	ready  map[string]*sql.Stmt
	missed map[string]int
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, ready: map[string]*sql.Stmt{}, missed: map[string]int{}}
}

func (c *stmtCache) get(q string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.ready[q]
	if st == nil && len(c.ready) < maxPrepared {
		c.missed[q]++
	}
	return st
}

// fill prepares the statements missed twice; it must not run inside a
// transaction of the pool. A statement that does not prepare is left to
// run unprepared.
func (c *stmtCache) fill(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	var qs []string
	for q, n := range c.missed {
		if n >= 2 && c.ready[q] == nil {
			qs = append(qs, q)
			delete(c.missed, q)
		}
	}
	c.mu.Unlock()
	for _, q := range qs {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if len(c.ready) < maxPrepared {
			c.ready[q] = st
		} else {
			st.Close()
		}
		c.mu.Unlock()
	}
}

func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.ready {
		st.Close()
	}
}

// wtx is a transaction with its pool's prepared statements (none for a
// read: c is nil). Its methods are a querier's, so every statement of a
// transaction runs through them. whole: its statements run to their end
// whatever becomes of their context (writeSynced).
type wtx struct {
	*sql.Tx
	c     *stmtCache
	whole bool
}

// ctx is the context a statement of t runs under.
func (t wtx) ctx(ctx context.Context) context.Context {
	if t.whole {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (t wtx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = t.ctx(ctx)
	if st := t.c.get(q); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, q, args...)
}

func (t wtx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = t.ctx(ctx)
	if st := t.c.get(q); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, q, args...)
}

func (t wtx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = t.ctx(ctx)
	if st := t.c.get(q); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, q, args...)
}
