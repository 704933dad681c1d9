package daemon

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
)

// randomState makes a state with entries of every shape the machine
// writes, including keys and strings that need escaping in JSON.
func randomState(r *rand.Rand, prev *workspace.State) workspace.State {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	at := func() *time.Time { t := t0.Add(time.Duration(r.IntN(1e6)) * time.Millisecond); return &t }
	st := workspace.State{TaskID: "t", Status: "executing", Phase: "work <&> \"quoted\"", LastUpdated: *at(),
		Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
		Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}, JournalSeq: int64(r.IntN(1000))}
	if prev != nil {
		// Keep most entries, as a burst does.
		for k, v := range prev.Subtasks {
			if v != nil && r.IntN(4) > 0 {
				c := *v
				st.Subtasks[k] = &c
			}
		}
		for k, v := range prev.Workers {
			if r.IntN(4) > 0 {
				c := *v
				st.Workers[k] = &c
			}
		}
		for k, v := range prev.Checkpoints {
			c := *v
			st.Checkpoints[k] = &c
		}
	}
	for i := range r.IntN(20) {
		s := &workspace.SubtaskState{Status: []string{"blocked", "pending", "in_progress", "completed", "failed"}[r.IntN(5)]}
		if r.IntN(2) == 0 {
			s.Worker, s.StartedAt = fmt.Sprintf("agent_%d", r.IntN(8)), at()
		}
		if r.IntN(3) == 0 {
			s.BlockedBy = []string{"st_1", "st_2"}
		}
		if r.IntN(3) == 0 {
			s.CompletedAt, s.Output = at(), fmt.Sprintf("outputs/st_%d.json", i)
		}
		if r.IntN(5) == 0 {
			s.Error, s.Attempts = "failed: <html> & \u2028 \"x\"\n", r.IntN(3)
		}
		st.Subtasks[fmt.Sprintf("st_%d", r.IntN(40))] = s
	}
	if r.IntN(10) == 0 {
		st.Subtasks["st_nil"] = nil
	}
	for range r.IntN(5) {
		st.Workers[fmt.Sprintf("agent_%d", r.IntN(8))] = &workspace.WorkerState{Status: "busy", CurrentTask: "t/st_1 <x>"}
	}
	if r.IntN(3) == 0 {
		st.Checkpoints[fmt.Sprintf("cp_%d", r.IntN(3))] = &workspace.CheckpointState{Status: "awaiting_review", ReachedAt: at()}
	}
	return st
}

// A chain of states, each encoded from the fragments of the one before,
// gives exactly the bytes atomicfile.Marshal gives.
func TestEncodeStateMatchesMarshal(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 7))
		var (
			prev  workspace.State
			frags fragments
		)
		for step := range 12 {
			var st workspace.State
			if step == 0 {
				st = randomState(r, nil)
			} else {
				st = randomState(r, &prev)
			}
			got, nf, err := encodeState(st, frags, diffState(prev, st))
			if err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			want, err := atomicfile.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d step %d: encodeState differs from Marshal:\n got: %s\nwant: %s", seed, step, got, want)
			}
			prev, frags = st, nf
		}
	}
}

// A fragment is reused only for an entry that did not change: an entry
// changed behind a stale fragment would be written with its old value.
func TestEncodeStateReencodesChangedEntries(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	prev := workspace.State{TaskID: "t", Status: "executing", LastUpdated: t0,
		Subtasks:    map[string]*workspace.SubtaskState{"st_1": {Status: "pending"}, "st_2": {Status: "pending"}},
		Checkpoints: map[string]*workspace.CheckpointState{}, Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	_, frags, err := encodeState(prev, fragments{}, diffState(workspace.State{}, prev))
	if err != nil {
		t.Fatal(err)
	}
	next := prev
	next.Subtasks = map[string]*workspace.SubtaskState{"st_1": {Status: "completed"}, "st_2": {Status: "pending"}}
	got, _, err := encodeState(next, frags, diffState(prev, next))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`"st_1": {
      "status": "completed"
    }`)) {
		t.Errorf("st_1 not re-encoded:\n%s", got)
	}
	want, _ := atomicfile.Marshal(next)
	if !bytes.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// checkNext refuses a changed entry that breaks the schema, lets an
// unchanged one through when the previous state was valid (it was
// checked then), checks everything when it was not, and applies the size
// limit to the whole document.
func TestCheckNext(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	base := func() workspace.State {
		return workspace.State{TaskID: "t", Status: "executing", Phase: "p", LastUpdated: t0,
			Subtasks:    map[string]*workspace.SubtaskState{"st_1": {Status: "pending"}, "st_2": {Status: "pending"}},
			Checkpoints: map[string]*workspace.CheckpointState{}, Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	}
	prev := base()
	encode := func(st workspace.State) []byte {
		b, err := atomicfile.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	good := base()
	good.Subtasks["st_1"] = &workspace.SubtaskState{Status: "completed", Worker: "w1"}
	if err := checkNext(true, good, diffState(prev, good))(encode(good)); err != nil {
		t.Errorf("valid change refused: %v", err)
	}

	bad := base()
	bad.Subtasks["st_1"] = &workspace.SubtaskState{Status: "bogus"}
	if err := checkNext(true, bad, diffState(prev, bad))(encode(bad)); err == nil || !strings.Contains(err.Error(), "/subtasks/st_1") {
		t.Errorf("changed entry with a bad status: %v, want an error naming /subtasks/st_1", err)
	}
	badWorker := base()
	badWorker.Workers["../w"] = &workspace.WorkerState{Status: "busy"}
	if err := checkNext(true, badWorker, diffState(prev, badWorker))(encode(badWorker)); err == nil {
		t.Error("a worker id outside the id pattern was let through")
	}

	// An entry already bad in prev is not in the delta: only a check of
	// the whole document (prev not known valid) finds it.
	prevBad := base()
	prevBad.Subtasks["st_2"] = &workspace.SubtaskState{Status: "bogus"}
	next := base()
	next.Subtasks["st_2"] = &workspace.SubtaskState{Status: "bogus"}
	next.Subtasks["st_1"] = &workspace.SubtaskState{Status: "completed"}
	if err := checkNext(true, next, diffState(prevBad, next))(encode(next)); err != nil {
		t.Errorf("prev valid: unchanged entry re-checked: %v", err)
	}
	if err := checkNext(false, next, diffState(prevBad, next))(encode(next)); err == nil {
		t.Error("prev not valid: whole document not checked")
	}

	huge := base()
	huge.Phase = strings.Repeat("x", 17<<20)
	if err := checkNext(true, huge, diffState(prev, huge))(encode(huge)); err == nil {
		t.Error("a state over the size limit was let through")
	}
}
