package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlstore"
)

// agedTask makes task id with a state of status, completed age ago (no
// completed_at when age is 0), and something of every kind a summary
// drops: a product, a thread, a journal record, a backup, a waiting
// marker, env data and a session entry; and an event, which it keeps.
func agedTask(t *testing.T, s *Store, id, status string, age time.Duration) {
	t.Helper()
	ctx := context.Background()
	if err := s.PutTask(ctx, workspace.Task{ID: id, Description: "retention"}); err != nil {
		t.Fatal(err)
	}
	st := map[string]any{"task_id": id, "status": status}
	if age > 0 {
		st["completed_at"] = now().Add(-age).Format(workspace.TimeFormat)
	}
	doc, _ := json.Marshal(st)
	for _, q := range []string{
		"INSERT INTO states (task_id, journal_seq, doc, epoch) VALUES ($1, 1, $2, 0)",
		"INSERT INTO backups (task_id, journal_seq, doc) VALUES ($1, 0, $2)",
		"INSERT INTO journal (task_id, seq, taken_at, name, record, epoch) VALUES ($1, 1, now(), 'x', $2, 0)",
		"INSERT INTO products (task_id, path, body) VALUES ($1, 'outputs/s1.json', $2)",
		"INSERT INTO threads (task_id, id, doc) VALUES ($1, 'th1', $2)",
		"INSERT INTO markers (task_id, kind, body) VALUES ($1, 'claim', $2)",
		"INSERT INTO events (task_id, time, line) VALUES ($1, now(), $2)",
		`INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ('thread', $1, 'k', 'd', 'a', now(), now(), 1, 1, $2)`,
		`INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value)
			VALUES ('session', $1 || '/th1', 'k', 'd', 'a', now(), now(), 1, 1, $2)`,
	} {
		if _, err := s.pool.Exec(ctx, q, id, string(doc)); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// rowsOf counts what is left of a task, table by table.
func rowsOf(t *testing.T, s *Store, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tb := range []string{"tasks", "states", "events", "products", "threads", "journal", "backups", "markers", "entries"} {
		col := "task_id"
		switch tb {
		case "tasks":
			col = "id"
		case "entries":
			col = "split_part(owner, '/', 1)"
		}
		var n int
		if err := s.pool.QueryRow(context.Background(), fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = $1", tb, col), id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[tb] = n
		}
	}
	return out
}

func TestPruneByPolicy(t *testing.T) {
	t.Parallel()
	s, root := newStore(t)
	ctx := context.Background()
	day := retention.Day
	agedTask(t, s, "t_young", "completed", 12*time.Hour)
	agedTask(t, s, "t_mid", "completed", 2*day)
	agedTask(t, s, "t_failed", "failed", 2*day)
	agedTask(t, s, "t_old", "cancelled", 5*day)
	agedTask(t, s, "t_busy", "completed", 5*day)
	agedTask(t, s, "t_active", "executing", 0)
	agedTask(t, s, "t_nodate", "completed", 0)
	full := map[string]map[string]int{}
	for _, id := range []string{"t_young", "t_mid", "t_failed", "t_old", "t_busy", "t_active", "t_nodate"} {
		full[id] = rowsOf(t, s, id)
		if len(full[id]) != 9 {
			t.Fatalf("task %s made with %v", id, full[id])
		}
	}
	// Another process holds t_busy's task lock.
	other, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	busyLock, err := other.LockTaskNamed(ctx, "t_busy", "", "worker_9")
	if err != nil {
		t.Fatal(err)
	}
	policy := retention.Policy{FullDays: 1, SummaryDays: 3}

	if _, err := s.Prune(ctx, workspace.PruneRequest{Policy: retention.Policy{FullDays: 2, SummaryDays: 1}}); !errors.Is(err, retention.ErrInvalidPolicy) {
		t.Fatalf("an invalid policy: %v", err)
	}
	dry, err := s.Prune(ctx, workspace.PruneRequest{Policy: policy, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for id, rows := range full {
		if got := rowsOf(t, s, id); fmt.Sprint(got) != fmt.Sprint(rows) {
			t.Fatalf("a dry run changed %s: %v → %v", id, rows, got)
		}
	}
	var progress []string
	rep, err := s.Prune(ctx, workspace.PruneRequest{Policy: policy, Agent: "cleanup",
		OnProgress: func(d retention.Decision) { progress = append(progress, d.TaskID+":"+string(d.Action)) }})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ds []retention.Decision) string {
		var out []string
		for _, d := range ds {
			out = append(out, d.TaskID)
		}
		return fmt.Sprint(out)
	}
	for _, r := range []retention.Report{dry, rep} {
		if ids(r.Kept) != "[t_active t_nodate t_young]" || ids(r.Summarized) != "[t_failed t_mid]" ||
			ids(r.Removed) != "[t_old]" || ids(r.Skipped) != "[t_busy]" || len(r.Errors) != 0 {
			t.Fatalf("report (dry run %v): kept %s summarised %s removed %s skipped %s errors %v", r.DryRun,
				ids(r.Kept), ids(r.Summarized), ids(r.Removed), ids(r.Skipped), r.Errors)
		}
	}
	if len(progress) != 7 || rep.Counts != (retention.Counts{Kept: 3, Summarized: 2, Removed: 1, Skipped: 1}) {
		t.Fatalf("progress %v, counts %+v", progress, rep.Counts)
	}
	if !strings.Contains(rep.Skipped[0].Reason, "worker_9") {
		t.Fatalf("busy task's reason %q does not name the holder", rep.Skipped[0].Reason)
	}
	for _, id := range []string{"t_young", "t_active", "t_nodate", "t_busy"} {
		if got := rowsOf(t, s, id); fmt.Sprint(got) != fmt.Sprint(full[id]) {
			t.Fatalf("prune touched %s: %v → %v", id, full[id], got)
		}
	}
	// The events stay: the one appended and those the inserts of the task,
	// its thread and its two entries made, which retention deletes
	// without events.
	summary := "map[events:5 states:1 tasks:1]"
	for _, id := range []string{"t_mid", "t_failed"} {
		if got := rowsOf(t, s, id); fmt.Sprint(got) != summary {
			t.Fatalf("summarised %s keeps %v, want %s", id, got, summary)
		}
	}
	if got := rowsOf(t, s, "t_old"); len(got) != 0 {
		t.Fatalf("removed t_old keeps %v", got)
	}
	// Again, the lock free: the summaries stay as they are, t_busy goes.
	if err := busyLock.Release(); err != nil {
		t.Fatal(err)
	}
	rep, err = s.Prune(ctx, workspace.PruneRequest{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	if ids(rep.Summarized) != "[]" || ids(rep.Removed) != "[t_busy]" || rep.Counts.Kept != 5 {
		t.Fatalf("second run: summarised %s removed %s counts %+v", ids(rep.Summarized), ids(rep.Removed), rep.Counts)
	}
	for _, id := range []string{"t_mid", "t_failed"} {
		if got := rowsOf(t, s, id); fmt.Sprint(got) != summary {
			t.Fatalf("summarised %s after a second run keeps %v", id, got)
		}
	}
	// One run at a time.
	cl, err := other.lock(ctx, sqlstore.CleanupLock, "", "", "other_cleanup", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Release()
	if _, err := s.Prune(ctx, workspace.PruneRequest{Policy: policy}); !errors.Is(err, retention.ErrCleanupRunning) {
		t.Fatalf("prune while another runs: %v, want ErrCleanupRunning", err)
	}
}
