package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// harness runs an in-process daemon over a fresh workspace.
type harness struct {
	t      *testing.T
	dir    string
	ws     *Store
	cancel context.CancelFunc
	done   chan error
}

func newWorkspace(t *testing.T) (string, *Store) {
	t.Helper()
	dir := t.TempDir()
	ws, err := Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return dir, ws
}

// startDaemon runs the real daemon over the tree at dir (a grace period
// of 200 ms) until the test ends or stop.
func startDaemon(t *testing.T, dir string, cfg daemon.Config) *harness {
	t.Helper()
	s, err := Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.SetServeOptions(ServeOptions{Grace: 200 * time.Millisecond})
	cfg.Store = s
	if cfg.CleanupInterval == 0 {
		cfg.CleanupInterval = -1
	}
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	d, err := daemon.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, dir: dir, ws: s, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- d.Run(ctx); s.Close() }()
	select {
	case <-ready:
	case err := <-h.done:
		t.Fatalf("daemon stopped at start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready after 30s")
	}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("daemon: %v", err)
	}
}

// await is poll.Until with the 30 s these tests allow.
func await(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, 30*time.Second, what, cond)
}

// awaitState is poll.State with the 30 s these tests allow.
func awaitState(t *testing.T, ws *Store, id string, cond func(workspace.State) bool) workspace.State {
	t.Helper()
	return poll.State(t, 30*time.Second, ws, id, cond)
}

func executing(st workspace.State) bool { return st.Status == "executing" }

func prepare(t *testing.T, ws *Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	if err := fixture.PrepareTask(ctx, ws, id, n); err != nil {
		t.Fatal(err)
	}
}

func approve(t *testing.T, ws *Store, id string) {
	t.Helper()
	awaitState(t, ws, id, func(st workspace.State) bool { return st.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(t.Context(), ws, id); err != nil {
		t.Fatal(err)
	}
	awaitState(t, ws, id, executing)
}

func completeSubtask(t *testing.T, ws *Store, task, sub, agent string) {
	t.Helper()
	rel, err := ws.WriteOutput(t.Context(), task, sub, agent, []byte(`{"summary":"ok"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WriteDone(t.Context(), workspace.DoneRequest{TaskID: task, Agent: agent, OutputFile: rel, SubtaskID: sub}); err != nil {
		t.Fatal(err)
	}
}

func TestTakesMarkersInProcess(t *testing.T) { eachWake(t, testTakesMarkersInProcess) }

func testTakesMarkersInProcess(t *testing.T, wake workspace.WakeOptions) {
	dir, ws := newWorkspace(t)
	prepare(t, ws, "t1", 3)
	h := startDaemon(t, dir, daemon.Config{Wake: wake})
	approve(t, ws, "t1")
	for i := 1; i <= 3; i++ {
		completeSubtask(t, ws, "t1", fmt.Sprintf("st_%d", i), fmt.Sprintf("w%d", i))
	}
	st := awaitState(t, ws, "t1", func(st workspace.State) bool { return st.Status == "completed" })
	if st.JournalSeq != 5 {
		t.Errorf("journal_seq = %d, want 5 (plan, review, three dones)", st.JournalSeq)
	}
	h.stop()
	for _, r := range readJournal(t, ws, "t1") {
		if r.Rejected != "" {
			t.Errorf("record %d rejected: %s", r.Seq, r.Rejected)
		}
	}
	checkSettled(t, ws, "t1", st)
}

// readJournal reads the journal of task id and checks that its sequence
// numbers run 1, 2, 3… without a gap.
func readJournal(t *testing.T, ws *Store, id string) []workspace.JournalRecord {
	t.Helper()
	recs, err := journalRecords(ws, id)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
	}
	return recs
}

// checkSettled checks a task whose journal has settled: no taken marker is
// left beside the records, and rebuilding from the journal alone gives st.
func checkSettled(t *testing.T, ws *Store, id string, st workspace.State) {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(ws.Dir(), "tasks", id, JournalDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.Contains(n.Name(), takenInfix) {
			t.Errorf("taken marker left in the journal: %s", n.Name())
		}
	}
	rebuilt, err := Rebuild(t.Context(), ws, id)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := mustJSON(t, rebuilt), mustJSON(t, st); got != want {
		t.Errorf("rebuild differs from state.json:\n%s\nwant\n%s", got, want)
	}
}

func TestSecondRunRefused(t *testing.T) {
	t.Parallel()
	dir, _ := newWorkspace(t)
	startDaemon(t, dir, daemon.Config{})
	s, err := Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, err := daemon.New(daemon.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(context.Background())
	var se *ServingError
	if !errors.As(err, &se) || se.PID != os.Getpid() || !errors.Is(err, workspace.ErrConflict) {
		t.Fatalf("second Run: %v, want a ServingError naming pid %d", err, os.Getpid())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := atomicfile.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eachWake runs a test of the daemon once with each of the tree's wake-up
// sources: inotify and the poll (the default where there is no inotify).
func eachWake(t *testing.T, test func(t *testing.T, wake workspace.WakeOptions)) {
	for _, w := range []workspace.WakeOptions{{Mode: "inotify"}, {Mode: "poll", Interval: 20 * time.Millisecond}} {
		t.Run(w.Mode, func(t *testing.T) { test(t, w) })
	}
}
