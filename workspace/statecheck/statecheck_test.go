package statecheck

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// Next refuses a changed entry that breaks the schema, lets an unchanged
// one through when the previous state was valid (it was checked then),
// checks everything when it was not, and applies the size limit to the
// whole document.
func TestNext(t *testing.T) {
	t.Parallel()
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
	if err := Next(&prev, good, encode(good)); err != nil {
		t.Errorf("valid change refused: %v", err)
	}

	bad := base()
	bad.Subtasks["st_1"] = &workspace.SubtaskState{Status: "bogus"}
	if err := Next(&prev, bad, encode(bad)); err == nil || !strings.Contains(err.Error(), "/subtasks/st_1") {
		t.Errorf("changed entry with a bad status: %v, want an error naming /subtasks/st_1", err)
	}
	badWorker := base()
	badWorker.Workers["../w"] = &workspace.WorkerState{Status: "busy"}
	if err := Next(&prev, badWorker, encode(badWorker)); err == nil {
		t.Error("a worker id outside the id pattern was let through")
	}
	badTop := base()
	badTop.Status = "bogus"
	if err := Next(&prev, badTop, encode(badTop)); err == nil {
		t.Error("a bad status outside the entries was let through")
	}

	// An entry already bad in prev is not in the delta: only a check of
	// the whole document (prev not known valid) finds it.
	prevBad := base()
	prevBad.Subtasks["st_2"] = &workspace.SubtaskState{Status: "bogus"}
	next := base()
	next.Subtasks["st_2"] = &workspace.SubtaskState{Status: "bogus"}
	next.Subtasks["st_1"] = &workspace.SubtaskState{Status: "completed"}
	if err := Next(&prevBad, next, encode(next)); err != nil {
		t.Errorf("prev valid: unchanged entry re-checked: %v", err)
	}
	if err := Next(nil, next, encode(next)); err == nil {
		t.Error("prev not valid: whole document not checked")
	}

	huge := base()
	huge.Phase = strings.Repeat("x", 17<<20)
	if err := Next(&prev, huge, encode(huge)); err == nil {
		t.Error("a state over the size limit was let through")
	}
	// Over the limit through an entry that did not change: the part
	// checked is small, the whole is not.
	bigPrev := base()
	bigPrev.Subtasks["st_1"] = &workspace.SubtaskState{Status: "completed", Output: strings.Repeat("o", schemas.MaxBytes)}
	bigNext := base()
	bigNext.Subtasks["st_1"] = bigPrev.Subtasks["st_1"]
	bigNext.Subtasks["st_2"] = &workspace.SubtaskState{Status: "in_progress", Worker: "w1"}
	if err := Next(&bigPrev, bigNext, encode(bigNext)); !errors.Is(err, schemas.ErrTooLarge) {
		t.Errorf("a state over the size limit through an unchanged entry: %v, want ErrTooLarge", err)
	}
}

// Each entry equality sees every field of its type: a copy made with
// fresh pointers is equal, and changing any one field (found by
// reflection, so a field added later is covered) makes it unequal.
func TestEntryEqual(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tp := func() *time.Time { c := at; return &c }
	checkFields(t, "SubtaskState", subtaskEqual, func() *workspace.SubtaskState {
		return &workspace.SubtaskState{Status: "completed", Worker: "a", BlockedBy: []string{"st_1"}, Attempts: 1,
			StartedAt: tp(), CompletedAt: tp(), Output: "outputs/st_2.json", Error: "e"}
	})
	checkFields(t, "CheckpointState", checkpointEqual, func() *workspace.CheckpointState {
		return &workspace.CheckpointState{Status: "approved", ReachedAt: tp(), ReviewedAt: tp(), Review: "r"}
	})
	checkFields(t, "WorkerState", workerEqual, func() *workspace.WorkerState {
		return &workspace.WorkerState{Status: "busy", CurrentTask: "st_1"}
	})
}

func checkFields[V any](t *testing.T, name string, equal func(a, b *V) bool, fresh func() *V) {
	t.Helper()
	if !equal(fresh(), fresh()) {
		t.Errorf("%s: two fresh copies are not equal", name)
	}
	typ := reflect.TypeFor[V]()
	for i := range typ.NumField() {
		b := fresh()
		f := reflect.ValueOf(b).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf("st_9")))
		case reflect.Pointer:
			later := f.Interface().(*time.Time).Add(time.Second)
			f.Set(reflect.ValueOf(&later))
		default:
			t.Fatalf("%s.%s: no way to change a %s here; teach the test", name, typ.Field(i).Name, f.Kind())
		}
		if equal(fresh(), b) {
			t.Errorf("%s: changing %s is not seen", name, typ.Field(i).Name)
		}
		if f.Kind() == reflect.Pointer {
			f.Set(reflect.Zero(f.Type()))
			if equal(fresh(), b) || equal(b, fresh()) {
				t.Errorf("%s: %s set against nil is not seen", name, typ.Field(i).Name)
			}
		}
	}
}
