package sqlstore

import (
	"context"
	"encoding/json"

	"github.com/workspaced/workspaced/workspace"
)

// TaskStatuses fills st with every task's status and the markers
// waiting, read in one snapshot: the head of each state only.
func (s *Store) TaskStatuses(ctx context.Context, st *workspace.StoreStatus) error {
	err := s.d.Read(ctx, func(tx Executor) error {
		rows, err := tx.Query(ctx, `SELECT t.id, s.doc, coalesce(m.n, 0) FROM tasks t
			LEFT JOIN states s ON s.task_id = t.id
			LEFT JOIN (SELECT task_id, count(*) AS n FROM markers GROUP BY task_id) m ON m.task_id = t.id
			ORDER BY t.id`+s.dl.Collate)
		st.Tasks, err = Collect(rows, err, scanTaskStatus)
		return err
	})
	if err != nil {
		return ReadErr("read the tasks", err)
	}
	for _, t := range st.Tasks {
		st.MarkersWaiting += t.MarkersWaiting
		st.ByStatus[t.Status]++
	}
	return nil
}

// scanTaskStatus reads one row of TaskStatuses.
func scanTaskStatus(r Rows) (workspace.StoreTaskStatus, error) {
	var (
		t   workspace.StoreTaskStatus
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
}
