package statecheck

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// overlay applies edits to doc as PostgreSQL's overlay of a bytea does,
// the last edit first.
func overlay(doc string, edits []Edit) string {
	for k := len(edits) - 1; k >= 0; k-- {
		e := edits[k]
		doc = doc[:e.At] + string(e.Text) + doc[e.At+e.Len:]
	}
	return doc
}

// Edits turn each document into the next, state after state, whatever
// changed: entries changed, added (moving the later ones), the sections'
// first entries, everything re-encoded, the encoder reset; strings of
// several bytes a character among them. Where Edits declines, the document is whole.
func TestEditsMakeTheNextDocument(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	st := workspace.State{TaskID: "t", Status: "executing", Phase: "é \u2028", LastUpdated: t0,
		Subtasks: map[string]*workspace.SubtaskState{}, Checkpoints: map[string]*workspace.CheckpointState{},
		Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	for i := range 2000 {
		st.Subtasks[fmt.Sprintf("st_%d", i)] = &workspace.SubtaskState{Status: "pending"}
	}
	var e Encoder
	var prev string
	var edited, declined, small int
	for step := range 300 {
		var ch Changed
		for range rng.IntN(3) {
			id := fmt.Sprintf("st_%d", rng.IntN(2100)) // some new
			at := t0.Add(time.Duration(step) * time.Second)
			st.Subtasks[id] = &workspace.SubtaskState{Status: "completed", Worker: "w_1", CompletedAt: &at,
				Output: fmt.Sprintf("outputs/%d-日本.json", step)}
			ch.Subtask(id)
		}
		if rng.IntN(4) == 0 {
			id := fmt.Sprintf("w_%d", rng.IntN(30))
			st.Workers[id] = &workspace.WorkerState{Status: "busy", CurrentTask: "st_1"}
			ch.Worker(id)
		}
		if rng.IntN(9) == 0 {
			id := fmt.Sprintf("cp_%d", rng.IntN(5))
			st.Checkpoints[id] = &workspace.CheckpointState{Status: "pending"}
			ch.Checkpoint(id)
		}
		if rng.IntN(60) == 0 {
			ch.Everything()
		}
		st.JournalSeq = int64(step)
		st.LastUpdated = t0.Add(time.Duration(step) * time.Millisecond)
		parts, _, err := e.EncodeParts(st, ch, true)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		doc := string(bytes.Join(parts, nil))
		edits, prevBytes, ok := e.Edits(16)
		switch {
		case !ok:
			declined++
		case prevBytes != len(prev):
			t.Fatalf("step %d: the edits are for a document of %d bytes, the one before is %d", step, prevBytes, len(prev))
		default:
			edited++
			if got := overlay(prev, edits); got != doc {
				t.Fatalf("step %d: %d edits of the document before make\n%s\nnot\n%s", step, len(edits), got, doc)
			}
			sent := 0
			for _, ed := range edits {
				sent += len(ed.Text)
			}
			if sent < len(doc)/8 {
				small++
			}
		}
		prev = doc
		if rng.IntN(50) == 0 {
			e.Reset()
		}
	}
	if edited < 200 || small < 150 || declined == 0 {
		t.Fatalf("%d documents made by edits (%d sending under an eighth of the document), %d whole: want most by small edits, some whole", edited, small, declined)
	}
	t.Logf("%d documents made by edits (%d sending under an eighth of the document), %d whole", edited, small, declined)
}

// A new encoder, or one reset, knows no document before: no edits.
func TestEditsNeedTheDocumentBefore(t *testing.T) {
	t.Parallel()
	st := workspace.State{TaskID: "t", Status: "executing", Subtasks: map[string]*workspace.SubtaskState{},
		Checkpoints: map[string]*workspace.CheckpointState{}, Workers: map[string]*workspace.WorkerState{}, Errors: []workspace.StateError{}}
	for i := range 500 {
		st.Subtasks[fmt.Sprintf("st_%d", i)] = &workspace.SubtaskState{Status: "pending"}
	}
	var e Encoder
	if _, _, err := e.EncodeParts(st, Changed{All: true}, false); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Edits(16); ok {
		t.Fatal("edits from a first document")
	}
	st.JournalSeq = 1
	if _, _, err := e.EncodeParts(st, Changed{}, true); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Edits(16); !ok {
		t.Fatal("no edits from the document before")
	}
	e.Reset()
	if _, _, err := e.EncodeParts(st, Changed{}, true); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Edits(16); ok {
		t.Fatal("edits after a reset")
	}
}
