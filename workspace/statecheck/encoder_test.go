package statecheck

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// The Encoder writes, state after state, the very bytes atomicfile.Marshal
// writes, re-encoding only the entries it is told changed: states of
// random changes (new entries, changed ones, odd keys and strings that
// encoding/json escapes), each checked byte for byte. Two hundred steps
// of a fixed seed hold every kind of change several times, a re-encoding
// of everything and a reset among them; the test says so, or fails.
func TestEncoderMatchesMarshal(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t", Status: "executing", Phase: "p <&> \u2028", LastUpdated: t0,
		Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
		Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	for i := range 300 {
		st.Subtasks[fmt.Sprintf("st_%d", i)] = &workspace.SubtaskState{Status: "pending"}
	}
	var e Encoder
	valid := true
	var added, workers, checkpoints, everything, resets int
	for step := range 200 {
		var ch Changed
		for range rng.IntN(4) {
			id := fmt.Sprintf("st_%d", rng.IntN(400)) // some new
			if st.Subtasks[id] == nil {
				added++
			}
			at := t0.Add(time.Duration(step) * time.Second)
			st.Subtasks[id] = &workspace.SubtaskState{Status: "completed", Worker: "w_1", CompletedAt: &at, Output: "outputs/<a&b>.json"}
			ch.Subtask(id)
		}
		if rng.IntN(5) == 0 {
			id := fmt.Sprintf("w_%d", rng.IntN(20))
			st.Workers[id] = &workspace.WorkerState{Status: "busy", CurrentTask: "st_1"}
			ch.Worker(id)
			workers++
		}
		if rng.IntN(7) == 0 {
			id := fmt.Sprintf("cp_%d", rng.IntN(5))
			st.Checkpoints[id] = &workspace.CheckpointState{Status: "pending"}
			ch.Checkpoint(id)
			checkpoints++
		}
		if rng.IntN(50) == 0 {
			ch.Everything()
			everything++
		}
		st.JournalSeq = int64(step)
		var got []byte
		var err error
		if step%2 == 0 {
			got, err = e.Encode(st, ch, valid)
		} else {
			// The pieces, joined, are the document, and size its length.
			var parts [][]byte
			var size int
			parts, size, err = e.EncodeParts(st, ch, valid)
			if got = bytes.Join(parts, nil); err == nil && len(got) != size {
				t.Fatalf("step %d: %d pieces of %d bytes in all, said %d", step, len(parts), len(got), size)
			}
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		want, err := atomicfile.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("step %d: encoded\n%s\nMarshal\n%s", step, got, want)
		}
		if rng.IntN(40) == 0 {
			e.Reset()
			resets++
		}
	}
	if added == 0 || workers == 0 || checkpoints == 0 || everything == 0 || resets == 0 {
		t.Fatalf("the steps left a kind of change out: %d new subtasks, %d workers, %d checkpoints, %d of everything, %d resets",
			added, workers, checkpoints, everything, resets)
	}
	t.Logf("%d new subtasks, %d workers, %d checkpoints, %d of everything, %d resets", added, workers, checkpoints, everything, resets)
}

// A nil map encodes as null, an empty one as {}, as Marshal does; a
// changed entry that breaks the schema is refused and the encoder starts
// afresh; one unchanged is not checked again when the state is known
// valid, and is when it is not.
func TestEncoderChecks(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t", Status: "executing", Phase: "p", LastUpdated: t0,
		Subtasks: map[string]*workspace.SubtaskState{"st_1": {Status: "pending"}, "st_2": {Status: "bogus"}},
		Workers:  map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	var e Encoder
	if _, err := e.Encode(st, Changed{}, false); err == nil || !strings.Contains(err.Error(), "st_2") {
		t.Errorf("a state not known valid with a bad entry: %v, want an error naming st_2", err)
	}
	data, err := e.Encode(st, Changed{}, true)
	if err != nil {
		t.Fatalf("derived from a valid state, nothing changed: %v", err)
	}
	if want, _ := atomicfile.Marshal(st); !bytes.Equal(data, want) {
		t.Errorf("nil checkpoints: encoded\n%s\nwant\n%s", data, want)
	}
	st.Subtasks["st_1"] = &workspace.SubtaskState{Status: "nonsense"}
	var ch Changed
	ch.Subtask("st_1")
	if _, err := e.Encode(st, ch, true); err == nil || !strings.Contains(err.Error(), "st_1") {
		t.Errorf("a changed entry with a bad status: %v, want an error naming st_1", err)
	}
	if e.primed {
		t.Error("the encoder kept what it held after a refusal")
	}
	st.Subtasks["st_1"] = &workspace.SubtaskState{Status: "pending"}
	st.Phase = strings.Repeat("x", 17<<20)
	if _, err := e.Encode(st, ch, true); err == nil {
		t.Error("a state over the size limit was let through")
	}
}

// A state derived from a valid one is checked where it changed, as a
// whole document would be: a changed entry at its place in the document,
// its key, and the rest of the document (the shell) whenever more than
// last_updated and journal_seq changed in it.
func TestEncoderChecksWhatChanged(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	base := func() workspace.State {
		return workspace.State{TaskID: "t", Status: "executing", Phase: "p", LastUpdated: t0,
			Subtasks:    map[string]*workspace.SubtaskState{"st_1": {Status: "pending"}, "st_2": {Status: "pending"}},
			Checkpoints: map[string]*workspace.CheckpointState{"cp_1": {Status: "pending"}},
			Workers:     map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	}
	for _, tc := range []struct {
		name   string
		change func(*workspace.State, *Changed)
		want   string // "" when valid, else what the error names
	}{
		{"the clock and the sequence", func(st *workspace.State, _ *Changed) {
			st.LastUpdated, st.JournalSeq = t0.Add(time.Hour), 7
		}, ""},
		{"a changed entry", func(st *workspace.State, ch *Changed) {
			st.Subtasks["st_2"] = &workspace.SubtaskState{Status: "completed", Worker: "w_1", CompletedAt: &t0}
			ch.Subtask("st_2")
		}, ""},
		{"a new worker", func(st *workspace.State, ch *Changed) {
			st.Workers["w_1"] = &workspace.WorkerState{Status: "busy", CurrentTask: "st_1"}
			ch.Worker("w_1")
		}, ""},
		{"a changed entry breaking the schema", func(st *workspace.State, ch *Changed) {
			st.Subtasks["st_2"] = &workspace.SubtaskState{Status: "done"}
			ch.Subtask("st_2")
		}, "/subtasks/st_2/status: enum"},
		{"a checkpoint breaking the schema", func(st *workspace.State, ch *Changed) {
			st.Checkpoints["cp_1"] = &workspace.CheckpointState{Status: "pending", Review: "r", ReachedAt: &t0}
			st.Checkpoints["cp_2"] = nil
			ch.Checkpoint("cp_1")
			ch.Checkpoint("cp_2")
		}, "/checkpoints/cp_2: type"},
		{"a key breaking the schema", func(st *workspace.State, ch *Changed) {
			st.Subtasks["no such/id"] = &workspace.SubtaskState{Status: "pending"}
			ch.Subtask("no such/id")
		}, "/subtasks/no such~1id"},
		{"the shell breaking the schema, no entry changed", func(st *workspace.State, _ *Changed) {
			st.Status = "sleeping"
		}, "/status: enum"},
		{"a negative sequence", func(st *workspace.State, _ *Changed) {
			st.JournalSeq = -1
		}, "/journal_seq: minimum"},
		{"an error appended", func(st *workspace.State, _ *Changed) {
			st.Errors = append(st.Errors, workspace.StateError{At: t0, Message: "m", Kind: "oops"})
		}, "/errors/0/kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := base()
			var e Encoder
			if _, err := e.Encode(st, Changed{}, false); err != nil {
				t.Fatal(err)
			}
			var ch Changed
			tc.change(&st, &ch)
			_, err := e.Encode(st, ch, true)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			case tc.want != "" && whole(st) == nil:
				t.Fatalf("refused (%v) a state the whole schema takes", err)
			case tc.want == "" && whole(st) != nil:
				t.Fatalf("took a state the whole schema refuses: %v", whole(st))
			}
		})
	}
}

// whole is the check of st's whole document.
func whole(st workspace.State) error {
	data, err := atomicfile.Marshal(st)
	if err != nil {
		return err
	}
	return schemas.Validate(schemas.KindState, data)
}

// BenchmarkEncoder10000 re-encodes a state of 10,000 subtasks after one
// changed: what a commit pays to encode and check its state.
func BenchmarkEncoder10000(b *testing.B) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t", Status: "executing", Phase: "p", LastUpdated: t0,
		Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
		Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	for i := range 10000 {
		st.Subtasks[fmt.Sprintf("st_%d", i)] = &workspace.SubtaskState{Status: "completed", Worker: "w_1", CompletedAt: &t0, Output: "outputs/x.json"}
	}
	var e Encoder
	if _, err := e.Encode(st, Changed{}, false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("st_%d", i%10000)
		st.Subtasks[id] = &workspace.SubtaskState{Status: "in_progress", Worker: "w_2", StartedAt: &t0}
		var ch Changed
		ch.Subtask(id)
		if _, err := e.Encode(st, ch, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncoderParts10000 is BenchmarkEncoder10000 with the document
// handed out in pieces, as the file store writes it: no copy of it.
func BenchmarkEncoderParts10000(b *testing.B) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t", Status: "executing", Phase: "p", LastUpdated: t0,
		Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
		Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	for i := range 10000 {
		st.Subtasks[fmt.Sprintf("st_%d", i)] = &workspace.SubtaskState{Status: "completed", Worker: "w_1", CompletedAt: &t0, Output: "outputs/x.json"}
	}
	var e Encoder
	if _, _, err := e.EncodeParts(st, Changed{}, false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("st_%d", i%10000)
		st.Subtasks[id] = &workspace.SubtaskState{Status: "in_progress", Worker: "w_2", StartedAt: &t0}
		var ch Changed
		ch.Subtask(id)
		if _, _, err := e.EncodeParts(st, ch, true); err != nil {
			b.Fatal(err)
		}
	}
}
