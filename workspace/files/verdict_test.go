package files

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/machine"
)

var vt0 = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

// writeJournalFile puts a record file (or anything) into t1's journal.
func writeJournalFile(t *testing.T, ws *Store, name string, v any) {
	t.Helper()
	var data []byte
	switch x := v.(type) {
	case string:
		data = []byte(x)
	default:
		var err error
		if data, err = atomicfile.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(ws.Dir(), "tasks", "t1", "journal", name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeEvents writes t1's events.log.
func writeEvents(t *testing.T, ws *Store, lines ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws.Dir(), "tasks", "t1", workspace.EventsFile), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// refusedLine is the line the daemon appends when it refuses a marker
// named name for its reused name, journaled as seq.
func refusedLine(name, seq string) string {
	return workspace.FormatEvent(workspace.Event{Time: vt0, Name: machine.EventMarkerRefused, TaskID: "t1", Args: []string{"st_2"},
		Attrs: map[string]string{"agent": "w1", "file": name, "journaled": seq, "reason": reasonReused}}) + "\n"
}

// ReadVerdict follows a marker from the task directory through the journal
// to the state, or to the marker_refused line of a reused name, and
// refuses what is not a marker's name or not a record.
func TestReadVerdict(t *testing.T) {
	t.Parallel()
	const name = ".claim.w1.x1"
	claimRec := func(seq int64, file string) workspace.JournalRecord {
		return workspace.JournalRecord{Seq: seq, TakenAt: vt0, File: file, Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: "w1", SubtaskID: "st_1"}}
	}
	state := func(seq int64, errs ...workspace.StateError) workspace.State {
		st := machine.Init(workspace.Task{ID: "t1", CreatedAt: vt0})
		st.JournalSeq = seq
		st.Status, st.PlanStatus, st.PlanID, st.PlanVersion = "executing", "approved", "plan_t1", 1
		st.Subtasks["st_1"] = &workspace.SubtaskState{Status: "in_progress", Worker: "w1", Attempts: 1}
		st.Errors = append(st.Errors, errs...)
		return st
	}
	cases := []struct {
		name    string
		marker  string
		after   int64
		setup   func(t *testing.T, ws *Store)
		where   string
		verdict string
		err     string
	}{
		{name: "still in the task directory", setup: func(t *testing.T, ws *Store) {
			os.WriteFile(filepath.Join(ws.Dir(), "tasks", "t1", name), []byte("{}"), 0o644)
		}, where: workspace.MarkerWaiting},
		{name: "taken, no record yet", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, "000000000004.taken"+name, "{}")
		}, where: workspace.MarkerTaken},
		{name: "recorded, state behind", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", state(3))
		}, where: workspace.MarkerTaken},
		{name: "recorded, state behind, journal_seq not last", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", sortedKeys(t, state(3)))
		}, where: workspace.MarkerTaken},
		{name: "recorded and applied, journal_seq not last", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", sortedKeys(t, state(4)))
		}, where: workspace.MarkerDecided, verdict: workspace.VerdictWon},
		{name: "recorded, no state.json", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
		}, where: workspace.MarkerTaken},
		{name: "recorded and applied", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", state(4))
		}, where: workspace.MarkerDecided, verdict: workspace.VerdictWon},
		{name: "recorded in a chunk, refused", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, BatchName(4, 6), JournalBatch{Records: []workspace.JournalRecord{
				claimRec(4, ".claim.w0.a"), claimRec(5, name), claimRec(6, ".claim.w2.b")}})
			ws.WriteJSON("tasks/t1/state.json", state(9, workspace.StateError{At: vt0, Seq: 5, Message: "subtask st_1 already taken by w0"}))
		}, where: workspace.MarkerDecided, verdict: workspace.VerdictLost},
		{name: "taken and recorded both (not settled yet)", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, "000000000004.taken"+name, "{}")
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", state(4))
		}, where: workspace.MarkerDecided, verdict: workspace.VerdictWon},
		{name: "only records before after", after: 4, setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", state(4))
		}, where: workspace.MarkerMissing},
		{name: "nowhere", setup: func(t *testing.T, ws *Store) {}, where: workspace.MarkerMissing},
		{name: "refused for its reused name", after: 4, setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, name))
			ws.WriteJSON("tasks/t1/state.json", state(4))
			writeEvents(t, ws, refusedLine(name, "4"))
		}, where: workspace.MarkerDecided, verdict: workspace.VerdictRefused},
		{name: "refused for its reused name, a name quoted in the log", marker: ".claim.w1.a b=c", setup: func(t *testing.T, ws *Store) {
			writeEvents(t, ws, "2024-01-15T10:00:00.000Z marker_refused t1 x=y\n", refusedLine(".claim.w1.a b=c", "4"))
		}, where: workspace.MarkerDecided, verdict: workspace.VerdictRefused},
		{name: "a refusal of another name", setup: func(t *testing.T, ws *Store) {
			writeEvents(t, ws, refusedLine(".claim.w1.other", "4"))
		}, where: workspace.MarkerMissing},
		{name: "a marker_refused line without journaled=", setup: func(t *testing.T, ws *Store) {
			writeEvents(t, ws, strings.Replace(refusedLine(name, "4"), " journaled=4", "", 1))
		}, where: workspace.MarkerMissing},
		{name: "a refusal line still being written", setup: func(t *testing.T, ws *Store) {
			writeEvents(t, ws, strings.TrimSuffix(refusedLine(name, "4"), "\n"))
		}, where: workspace.MarkerMissing},
		{name: "events.log a symlink", setup: func(t *testing.T, ws *Store) {
			outside := filepath.Join(t.TempDir(), "events.log")
			os.WriteFile(outside, []byte(refusedLine(name, "4")), 0o644)
			log := filepath.Join(ws.Dir(), "tasks", "t1", workspace.EventsFile)
			os.Remove(log)
			if err := os.Symlink(outside, log); err != nil {
				t.Fatal(err)
			}
		}, err: "not a regular file"},
		{name: "a record file that is not JSON", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), "{\"seq\": 4, ")
		}, err: "decode"},
		{name: "a record file that is a symlink", setup: func(t *testing.T, ws *Store) {
			outside := filepath.Join(t.TempDir(), "rec.json")
			data, _ := atomicfile.Marshal(claimRec(4, name))
			os.WriteFile(outside, data, 0o644)
			os.MkdirAll(filepath.Join(ws.Dir(), "tasks", "t1", "journal"), 0o755)
			os.Symlink(outside, filepath.Join(ws.Dir(), "tasks", "t1", "journal", RecordName(4)))
		}, err: "symlink"},
		{name: "a chunk holding the wrong seqs", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, BatchName(4, 5), JournalBatch{Records: []workspace.JournalRecord{claimRec(7, name), claimRec(8, "x")}})
		}, err: "holds seq 7"},
		{name: "a record file over the size limit", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), `{"seq": 4, "file": "`+strings.Repeat("x", 17<<20)+`"}`)
		}, err: "over"},
		{name: "a record file nested deep", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), `{"seq": 4, "marker": `+strings.Repeat(`{"a":`, 20000)+"1"+strings.Repeat("}", 20000)+"}")
		}, err: "decode"},
		{name: "a record naming a path as its file", setup: func(t *testing.T, ws *Store) {
			writeJournalFile(t, ws, RecordName(4), claimRec(4, "../t1/"+name))
			ws.WriteJSON("tasks/t1/state.json", state(4))
		}, where: workspace.MarkerMissing},
		{name: "a path, not a name", marker: "../t2/" + name, err: "not the file name of a marker"},
		{name: "not a marker", marker: "state.json", err: "not the file name of a marker"},
		{name: "empty", marker: ".claim.", err: "not the file name of a marker"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ws := newWorkspace(t)
			if _, err := ws.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "t1", Description: "t"}); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(t, ws)
			}
			m := c.marker
			if m == "" {
				m = name
			}
			v, where, err := ws.ReadVerdict("t1", m, c.after)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want it to say %q", err, c.err)
				}
				return
			}
			if err != nil || where != c.where || v.Verdict != c.verdict {
				t.Fatalf("ReadVerdict = %+v, %q, %v; want %q, verdict %q", v, where, err, c.where, c.verdict)
			}
			if v.Verdict == workspace.VerdictRefused && (v.Journaled != 4 || v.Seq != 0 || v.SubtaskID != "st_2" || v.Reason != machine.ReasonReused(4)) {
				t.Fatalf("the verdict on a reused name = %+v; want journaled 4, no seq, subtask st_2, reason %q", v, machine.ReasonReused(4))
			}
		})
	}
}

// With no daemon serving, waiting for a verdict fails at once, saying
// where the marker is; with one serving that never decides, the wait ends
// with the context.
func TestWaitVerdictWithoutDecision(t *testing.T) {
	t.Parallel()
	dir, ws := newWorkspace(t)
	if _, err := ws.CreateTask(context.Background(), workspace.NewTaskRequest{ID: "t1", Description: "t"}); err != nil {
		t.Fatal(err)
	}
	m, err := ws.WriteClaim(t.Context(), "t1", "w1", "st_1")
	if err != nil {
		t.Fatal(err)
	}
	name := path.Base(m)
	_, err = workspace.Wait(context.Background(), ws, "t1", name, 0)
	if !errors.Is(err, workspace.ErrNotServing) || !strings.Contains(err.Error(), "waiting in the task directory") || workspace.HintOf(err) == "" {
		t.Fatalf("err = %v, want ErrNotServing saying the marker waits, with a hint", err)
	}
	// A process holding the daemon's lock, as a daemon that takes nothing.
	lk, err := locking.TryAcquire(LockPath(dir), locking.Options{Agent: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = workspace.Wait(ctx, ws, "t1", name, 0)
	if !errors.Is(err, workspace.ErrNoVerdict) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrNoVerdict at the deadline", err)
	}
}

// Against a daemon, every marker an agent drops gets its verdict.
func TestWaitVerdictFromDaemon(t *testing.T) { eachWake(t, testWaitVerdictFromDaemon) }

func testWaitVerdictFromDaemon(t *testing.T, wake workspace.WakeOptions) {
	dir, ws := newWorkspace(t)
	h := startDaemon(t, dir, daemon.Config{Wake: wake})
	prepare(t, ws, "t1", 2)
	approve(t, ws, "t1")
	wait := func(m string) workspace.Verdict {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		v, err := workspace.Wait(ctx, h.ws, "t1", path.Base(m), 0)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	claim := func(agent, sub string) workspace.Verdict {
		t.Helper()
		m, err := ws.WriteClaim(t.Context(), "t1", agent, sub)
		if err != nil {
			t.Fatal(err)
		}
		return wait(m)
	}
	if v := claim("w1", "st_1"); v.Verdict != workspace.VerdictWon || v.SubtaskStatus != "in_progress" || v.Worker != "w1" {
		t.Errorf("first claim: %+v, want won", v)
	}
	if v := claim("w2", "st_1"); v.Verdict != workspace.VerdictLost || !strings.Contains(v.Reason, "already taken by w1") {
		t.Errorf("second claim: %+v, want lost to w1", v)
	}
	if v := claim("w2", "st_7"); v.Verdict != workspace.VerdictNotFound {
		t.Errorf("claim of st_7: %+v, want not_found", v)
	}
	rel, err := ws.WriteOutput(t.Context(), "t1", "st_1", "w1", []byte(`{"summary":"ok"}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ws.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "w1", OutputFile: rel})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(m); v.Verdict != workspace.VerdictApplied || v.SubtaskStatus != "completed" || v.Kind != workspace.KindDone {
		t.Errorf("done: %+v, want applied", v)
	}
}

// sortedKeys is st as a JSON object of sorted keys: its journal_seq not
// last, where the daemon writes it.
func sortedKeys(t *testing.T, st workspace.State) map[string]any {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStateEndsWithJournalSeq: the daemon writes journal_seq as
// state.json's last entry, where a verdict read takes it from
// (workspace.StateTailSeq) to pass over the states before its record.
func TestStateEndsWithJournalSeq(t *testing.T) {
	t.Parallel()
	ws, task, _ := settledClaim(t, 10)
	data, err := ws.ReadFile(path.Join(workspace.TaskDir(task), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ws.ReadState(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if seq, ok := workspace.StateTailSeq(data); !ok || seq != st.JournalSeq || seq == 0 {
		t.Fatalf("state.json's last bytes give journal_seq %d (%v); the state's is %d: %q", seq, ok, st.JournalSeq, data[max(0, len(data)-80):])
	}
}
