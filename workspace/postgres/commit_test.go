package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/machine"
)

// plannedTask creates task id with a plan of n independent subtasks
// (s0…s<n-1>), proposed and approved, and commits those two markers with
// epoch: the task is executing.
func plannedTask(t testing.TB, s *Store, id string, n int, epoch int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.PutTask(ctx, workspace.Task{ID: id, Description: "test task"}); err != nil {
		t.Fatal(err)
	}
	p := workspace.Plan{ID: "p1", TaskID: id, Version: 1, CreatedAt: now(), CreatedBy: "planner"}
	for i := range n {
		p.Subtasks = append(p.Subtasks, workspace.Subtask{ID: fmt.Sprintf("s%d", i), Description: "work", Parallelizable: true})
	}
	put(t, s, id, "plan.json", p)
	drop(t, s, id, workspace.KindDone, workspace.Marker{AgentID: "planner", OutputFile: "plan.json", Status: "completed"})
	at := now()
	put(t, s, id, "reviews/r1.json", workspace.Review{ID: "r1", Type: "plan_review", Reviewer: "reviewer", ReviewedAt: &at, Verdict: "approved"})
	drop(t, s, id, workspace.KindDone, workspace.Marker{AgentID: "reviewer", OutputFile: "reviews/r1.json", Status: "completed"})
	commitAll(t, s, id, epoch)
	st, err := s.ReadState(ctx, id)
	if err != nil || st.Phase != machine.PhaseWorkInProgress {
		t.Fatalf("task %s after plan and review: phase %q, %v; errors %v", id, st.Phase, err, st.Errors)
	}
}

func put(t testing.TB, s *Store, task, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutProduct(context.Background(), task, path, data); err != nil {
		t.Fatalf("put %s: %v", path, err)
	}
}

func drop(t testing.TB, s *Store, task, kind string, m workspace.Marker) string {
	t.Helper()
	name, err := s.DropMarker(context.Background(), task, kind, m)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// epochLead is a leadership of a fixed epoch, for the tests that commit
// by hand as the daemon would.
func epochLead(epoch int64) workspace.Leadership {
	return &leaseLead{epoch: epoch, done: make(chan struct{})}
}

// commitOnce commits the markers of a task once, under epoch, through a
// committer of its own (nothing known of the task).
func commitOnce(ctx context.Context, s *Store, id string, epoch int64) (workspace.Applied, error) {
	return s.Committer(id).Commit(ctx, workspace.CommitRequest{Lead: epochLead(epoch)})
}

// serve runs the real daemon over s until ctx ends.
func serve(ctx context.Context, s *Store, cfg daemon.Config) error {
	cfg.Store = s
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = -1
	}
	d, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// commitAll commits every waiting marker of a task.
func commitAll(t testing.TB, s *Store, id string, epoch int64) int {
	t.Helper()
	total := 0
	for {
		a, err := commitOnce(context.Background(), s, id, epoch)
		if err != nil {
			t.Fatalf("commit %s: %v", id, err)
		}
		if a.Taken == 0 {
			return total
		}
		total += a.Taken
	}
}

func lead(t testing.TB, s *Store, holder string) int64 {
	t.Helper()
	epoch, li, ok, err := s.Acquire(context.Background(), s.pool, holder, time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v, held by %+v", err, li)
	}
	return epoch
}

// checkRebuild replays the journal over the task and compares with the
// state written.
func checkRebuild(t *testing.T, s *Store, id string) workspace.State {
	t.Helper()
	st, err := s.ReadState(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := s.GetTask(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := s.ReadJournal(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("journal of %s: record %d has seq %d", id, i, r.Seq)
		}
	}
	re, _, err := machine.Replay(task, nil, recs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(t, re), normalize(t, st)) {
		t.Fatalf("rebuild of %s differs from its state:\nstate   %+v\nrebuilt %+v", id, st, re)
	}
	return st
}

func normalize(t *testing.T, st workspace.State) string {
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCommitFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 3, epoch)
	// Two claims of s0: the first inserted wins.
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s0"})
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w2", SubtaskID: "s0"})
	for i := range 3 {
		sub := fmt.Sprintf("s%d", i)
		if i > 0 {
			drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: sub})
		}
		put(t, s, "t1", "outputs/"+sub+".json", workspace.Output{SubtaskID: sub, WorkerID: "w1", Status: "completed"})
		drop(t, s, "t1", workspace.KindDone, workspace.Marker{AgentID: "w1", SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed"})
	}
	if n := commitAll(t, s, "t1", epoch); n != 7 {
		t.Fatalf("committed %d markers, want 7", n)
	}
	st := checkRebuild(t, s, "t1")
	if st.Status != "completed" || st.Subtasks["s0"].Worker != "w1" || st.JournalSeq != 9 {
		t.Fatalf("state: status %s, s0 worker %q, journal_seq %d", st.Status, st.Subtasks["s0"].Worker, st.JournalSeq)
	}
	var refused int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM events WHERE task_id = 't1' AND line LIKE '% claim_refused %'").Scan(&refused); err != nil || refused != 1 {
		t.Fatalf("claim_refused events: %d, %v; want 1", refused, err)
	}
	var waiting, backups int
	_ = s.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM markers), (SELECT count(*) FROM backups WHERE task_id = 't1')").Scan(&waiting, &backups)
	if waiting != 0 || backups != 1 {
		t.Fatalf("markers waiting %d, backups %d; want 0 and 1 (the state before the second commit)", waiting, backups)
	}
}

func TestBackupsKeepN(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 20, epoch)
	for i := range 20 {
		drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: fmt.Sprintf("s%d", i)})
		commitAll(t, s, "t1", epoch)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM backups WHERE task_id = 't1'").Scan(&n); err != nil || n != s.Settings().Backups.Keep {
		t.Fatalf("backups kept: %d, %v; want %d", n, err, s.Settings().Backups.Keep)
	}
	list, err := s.ListBackups(ctx, "t1")
	if err != nil || len(list) != n {
		t.Fatalf("ListBackups: %d, %v; want %d", len(list), err, n)
	}
	for i := 1; i < len(list); i++ {
		if list[i].Time.After(list[i-1].Time) {
			t.Fatalf("ListBackups not newest first: %v after %v", list[i].Time, list[i-1].Time)
		}
	}
	doc, err := s.ReadBackup(ctx, "t1", list[0].Name)
	if err != nil || int64(len(doc)) != list[0].Size {
		t.Fatalf("ReadBackup(%s): %d bytes, %v; want %d", list[0].Name, len(doc), err, list[0].Size)
	}
	if err := schemas.Validate(schemas.KindState, doc); err != nil {
		t.Fatalf("the newest backup is not a state: %v", err)
	}
	if _, err := s.ReadBackup(ctx, "t1", "state_nope.json"); !errors.Is(err, workspace.ErrNotFound) || workspace.HintOf(err) == "" {
		t.Fatalf("ReadBackup of an unknown name: %v (hint %q), want not found with a hint", err, workspace.HintOf(err))
	}
	for _, read := range []func() error{
		func() error { _, err := s.ListBackups(ctx, "nope"); return err },
		func() error { _, err := s.ReadBackup(ctx, "nope", list[0].Name); return err },
	} {
		if err := read(); !errors.Is(err, workspace.ErrNotFound) {
			t.Fatalf("backups of a missing task: %v, want not found", err)
		}
	}
}

// TestCommitFenced: once another daemon took the lease, a commit with
// the old epoch writes nothing and leaves the markers waiting.
func TestCommitFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	old := lead(t, s, "old")
	plannedTask(t, s, "t1", 1, old)
	drop(t, s, "t1", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s0"})
	if _, err := s.pool.Exec(ctx, "UPDATE lease SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	newer := lead(t, s, "new")
	if newer != old+1 {
		t.Fatalf("new epoch %d, want %d", newer, old+1)
	}
	if _, err := commitOnce(ctx, s, "t1", old); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit with the old epoch: %v, want ErrFenced", err)
	}
	if err := s.Renew(ctx, s.pool, old, time.Minute); !errors.Is(err, ErrFenced) {
		t.Fatalf("renew of the old epoch: %v, want ErrFenced", err)
	}
	st, _ := s.ReadState(ctx, "t1")
	if st.JournalSeq != 2 {
		t.Fatalf("journal_seq %d after the fenced commit, want 2", st.JournalSeq)
	}
	if n := commitAll(t, s, "t1", newer); n != 1 {
		t.Fatalf("the new leader committed %d, want 1", n)
	}
	var epochs []int64
	rows, _ := s.pool.Query(ctx, "SELECT epoch FROM journal WHERE task_id = 't1' ORDER BY seq")
	for rows.Next() {
		var e int64
		_ = rows.Scan(&e)
		epochs = append(epochs, e)
	}
	if !reflect.DeepEqual(epochs, []int64{old, old, newer}) {
		t.Fatalf("journal epochs %v, want [%d %d %d]", epochs, old, old, newer)
	}
}

// TestBadMarkers: markers no agent should write are journaled as
// rejections with their reason, and the state stays valid.
func TestBadMarkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	epoch := lead(t, s, "test")
	plannedTask(t, s, "t1", 1, epoch)
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	cases := []struct{ kind, body, reason string }{
		{"claim", "not json", "not a valid claim marker"},
		{"claim", `{"agent_id": "w1", "subtask_id": ` + deep + `}`, "nested deeper"},
		{"claim", `{"agent_id": "w1", "subtask_id": "` + strings.Repeat("x", 17<<20) + `"}`, "more than the limit"},
		{"done", `{"agent_id": "w1", "output_file": "../../etc/passwd"}`, "not plan.json"},
		{"done", `{"agent_id": "w1", "output_file": "outputs/s0.json", "subtask_id": "s0"}`, "does not exist"},
		{"done", `{"agent_id": "w1", "output_file": "reviews/r'); DROP TABLE markers; --.json"}`, "not plan.json"},
	}
	for _, c := range cases {
		if _, err := s.pool.Exec(ctx, "INSERT INTO markers (task_id, kind, body) VALUES ('t1', $1, $2)", c.kind, c.body); err != nil {
			t.Fatal(err)
		}
	}
	if n := commitAll(t, s, "t1", epoch); n != len(cases) {
		t.Fatalf("took %d, want %d", n, len(cases))
	}
	recs, err := s.ReadJournal(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		r := recs[2+i]
		if !strings.Contains(r.Rejected, c.reason) {
			t.Errorf("case %d: rejected %q, want it to say %q", i, r.Rejected, c.reason)
		}
	}
	st := checkRebuild(t, s, "t1")
	if len(st.Errors) != len(cases) {
		t.Fatalf("state errors %d, want %d", len(st.Errors), len(cases))
	}
	// A marker for a task that does not exist is refused at once.
	if _, err := s.DropMarker(ctx, "nope", workspace.KindClaim, workspace.Marker{AgentID: "w1", SubtaskID: "s0"}); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("marker for a missing task: %v, want ErrNotFound", err)
	}
}

// TestServeTakesEveryMarkerOnce runs the daemon loop with agents
// dropping claims and dones concurrently on several tasks.
func TestServeTakesEveryMarkerOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, _ := newStore(t)
	setup := lead(t, s, "setup")
	const tasks, subs = 3, 40
	for i := range tasks {
		plannedTask(t, s, fmt.Sprintf("t%d", i), subs, setup)
	}
	if err := s.Release(ctx, setup); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, s, daemon.Config{Lead: workspace.LeadOptions{Holder: "d1"}, Wake: workspace.WakeOptions{Interval: time.Hour}})
	}()
	var wg sync.WaitGroup
	for i := range tasks {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, agent := fmt.Sprintf("t%d", i), fmt.Sprintf("w%d", w)
				for k := w; k < subs; k += 4 {
					sub := fmt.Sprintf("s%d", k)
					drop(t, s, id, workspace.KindClaim, workspace.Marker{AgentID: agent, SubtaskID: sub})
					put(t, s, id, "outputs/"+sub+".json", workspace.Output{SubtaskID: sub, WorkerID: agent, Status: "completed"})
					drop(t, s, id, workspace.KindDone, workspace.Marker{AgentID: agent, SubtaskID: sub, OutputFile: "outputs/" + sub + ".json"})
				}
			}()
		}
	}
	wg.Wait()
	// The poll is an hour: only notifications wake the daemon.
	deadline := time.Now().Add(30 * time.Second)
	for i := range tasks {
		id := fmt.Sprintf("t%d", i)
		for {
			st, err := s.ReadState(ctx, id)
			if err == nil && st.Status == "completed" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s not completed: %+v %v", id, st, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		st := checkRebuild(t, s, id)
		if st.JournalSeq != 2+2*subs || len(st.Errors) != 0 {
			t.Fatalf("task %s: journal_seq %d, errors %v; want %d and none", id, st.JournalSeq, st.Errors, 2+2*subs)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	li, _ := s.Lease(context.Background())
	if li.Live {
		t.Fatalf("lease still held after a clean stop: %+v", li)
	}
}
