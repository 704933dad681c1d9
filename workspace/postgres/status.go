package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/workspaced/workspaced/workspace"
)

// Status is what 'workspaced status' reports of a workspace kept in
// PostgreSQL: the lease (which daemon serves, its epoch, until when), the
// tasks by status and the markers waiting.
type Status = workspace.StoreStatus

// TaskStatus is one task's line in Status.
type TaskStatus = workspace.StoreTaskStatus

var (
	_ workspace.StatusReader = (*Store)(nil)
	_ workspace.Rebuilder    = (*Store)(nil)
)

// ReadStatus reads the lease, every task's status and the markers waiting,
// in one read-only snapshot. It only reads.
func (s *Store) ReadStatus(ctx context.Context) (Status, error) {
	st := Status{ByStatus: map[string]int{}, Tasks: []TaskStatus{}}
	li, err := s.Lease(ctx)
	if err != nil {
		return st, err
	}
	st.Serving, st.Holder, st.Epoch = li.Live, li.Holder, li.Epoch
	if !li.ExpiresAt.IsZero() {
		at := li.ExpiresAt.UTC()
		st.ExpiresAt = &at
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT t.id, s.doc, coalesce(m.n, 0) FROM tasks t
			LEFT JOIN states s ON s.task_id = t.id
			LEFT JOIN (SELECT task_id, count(*) AS n FROM markers GROUP BY task_id) m ON m.task_id = t.id
			ORDER BY t.id`)
		if err != nil {
			return fmt.Errorf("read the tasks: %w", err)
		}
		st.Tasks, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TaskStatus, error) {
			var (
				t   TaskStatus
				doc *string
			)
			if err := r.Scan(&t.ID, &doc, &t.MarkersWaiting); err != nil {
				return t, err
			}
			if doc == nil {
				t.Status = "none"
				return t, nil
			}
			var head struct {
				Status     string `json:"status"`
				Phase      string `json:"phase"`
				JournalSeq int64  `json:"journal_seq"`
			}
			if err := json.Unmarshal([]byte(*doc), &head); err != nil {
				t.Status, t.Error = "invalid", "state of task "+t.ID+" does not parse: "+err.Error()
				return t, nil
			}
			t.Status, t.Phase, t.JournalSeq = head.Status, head.Phase, head.JournalSeq
			return t, nil
		})
		return err
	})
	if err != nil {
		return st, err
	}
	for _, t := range st.Tasks {
		st.MarkersWaiting += t.MarkersWaiting
		st.ByStatus[t.Status]++
	}
	return st, nil
}
