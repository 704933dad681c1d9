package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

var (
	_ workspace.StatusReader = (*Store)(nil)
	_ workspace.Rebuilder    = (*Store)(nil)
	_ workspace.LiveServer   = (*Store)(nil)
)

// ReadStatus reports whether a daemon holds the daemon's lock (probed
// without taking it), every task's status and the markers waiting, read
// in one snapshot, and the serving daemon's own report (the tasks it is
// retrying and why) when it answers, and the read-only fault of the
// database's filesystem when it has one (Fault). It only reads (the
// fault is told by trying to create a file beside the database).
func (s *Store) ReadStatus(ctx context.Context) (workspace.StoreStatus, error) {
	st := workspace.StoreStatus{Root: "sqlite:" + s.path, ByStatus: map[string]int{}, Tasks: []workspace.StoreTaskStatus{}}
	held, h, err := locking.Held(s.leadFile())
	if err != nil {
		return st, fmt.Errorf("probe the daemon's lock: %w", err)
	}
	st.Serving = held
	if held && h != nil {
		since := h.Since.UTC()
		st.PID, st.Since, st.Holder = h.PID, &since, h.Agent
	}
	err = s.read(ctx, func(tx wtx) error {
		rows, err := tx.QueryContext(ctx, `SELECT t.id, s.doc, coalesce(m.n, 0) FROM tasks t
			LEFT JOIN states s ON s.task_id = t.id
			LEFT JOIN (SELECT task_id, count(*) AS n FROM markers GROUP BY task_id) m ON m.task_id = t.id
			ORDER BY t.id`)
		st.Tasks, err = collect(rows, err, scanTaskStatus)
		return err
	})
	if err != nil {
		return st, sqlstore.ReadErr("read the tasks", err)
	}
	for _, t := range st.Tasks {
		st.MarkersWaiting += t.MarkersWaiting
		st.ByStatus[t.Status]++
	}
	if f := s.readOnlyFault(); f != nil {
		st.Fault = &workspace.StoreFault{Kind: workspace.FaultKind(f), Error: f.Error(), Hint: workspace.FaultHint(f)}
	}
	if held {
		if l, err := files.ReadLive(s.path); err == nil {
			st.Live = &l
		}
	}
	return st, nil
}

// scanTaskStatus reads one row of ReadStatus: the head of the state only.
func scanTaskStatus(r *sql.Rows) (workspace.StoreTaskStatus, error) {
	var (
		t   workspace.StoreTaskStatus
		doc sql.NullString
	)
	if err := r.Scan(&t.ID, &doc, &t.MarkersWaiting); err != nil {
		return t, err
	}
	if !doc.Valid {
		t.Status = "none"
		return t, nil
	}
	var head struct {
		Status     string `json:"status"`
		Phase      string `json:"phase"`
		JournalSeq int64  `json:"journal_seq"`
	}
	if err := json.Unmarshal([]byte(doc.String), &head); err != nil {
		t.Status, t.Error = "invalid", "state of task "+t.ID+" does not parse: "+err.Error()
		return t, nil
	}
	t.Status, t.Phase, t.JournalSeq = head.Status, head.Phase, head.JournalSeq
	return t, nil
}

// ServeLive answers status with report() until the returned Closer is
// closed (workspace.LiveServer), on the socket the file tree's daemon
// uses, named after the database file: only the process holding the
// daemon's lock serves, so only one answers.
func (s *Store) ServeLive(report func() workspace.Live) (io.Closer, error) {
	return files.ServeLiveAt(s.path, report)
}
