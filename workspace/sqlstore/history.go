package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.EntryHistory = (*Store)(nil)

// EntryHistory lists the kept versions of key in memory scope sc, oldest
// first: the rows entry_history's trigger kept when a write replaced them
// or a delete removed them (migrations: PostgreSQL 0008, SQLite 0004).
func (s *Store) EntryHistory(ctx context.Context, sc workspace.Scope, key string) ([]workspace.Entry, error) {
	if err := workspace.CheckHistoryScope(sc); err != nil {
		return nil, err
	}
	own, _, err := CheckGet(sc, key)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.Query(ctx, `SELECT key, short_description, stored_by, created_at, updated_at, version, value
		FROM entry_history WHERE scope = $1 AND owner = $2 AND key = $3 ORDER BY id`, string(sc.Kind), own, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []workspace.Entry{}
	for rows.Next() {
		var e workspace.Entry
		var value string
		if err := rows.Scan(&e.Key, &e.ShortDescription, &e.StoredBy, s.dl.ScanTime(&e.CreatedAt), s.dl.ScanTime(&e.UpdatedAt), &e.Version, &value); err != nil {
			return nil, err
		}
		e.CreatedAt, e.UpdatedAt, e.Value = e.CreatedAt.UTC(), e.UpdatedAt.UTC(), json.RawMessage(value)
		out = append(out, e)
	}
	return out, rows.Err()
}

// pastKept selects the entry_history rows past the $1 newest of their
// key, in both dialects (window functions: PostgreSQL, SQLite 3.25).
const pastKept = `SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY scope, owner, key ORDER BY id DESC) AS n
	FROM entry_history) AS h WHERE h.n > $1`

// PruneHistory removes, of every global and agent memory entry's kept
// versions, all but the keep newest, in one statement, and returns how
// many it removed (in a dry run, would remove).
func (s *Store) PruneHistory(ctx context.Context, keep int, dryRun bool) (int, error) {
	var n int64
	var err error
	if dryRun {
		err = s.r.QueryRow(ctx, "SELECT count(*) FROM ("+pastKept+") AS p", keep).Scan(&n)
	} else {
		n, err = s.d.WriteOne(ctx, "DELETE FROM entry_history WHERE id IN ("+pastKept+")", keep)
	}
	if err != nil {
		return 0, ReadErr("prune the memory history", err)
	}
	return int(n), nil
}
