package workspace

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestHintsNameNoFlags triggers every error whose fix is an input and
// checks that its hint speaks of the operation, never of a command-line
// flag or command, and that the input at fault is named as a field for
// each surface to translate.
func TestHintsNameNoFlags(t *testing.T) {
	w, _ := newWS(t)
	ctx := context.Background()
	newTask(t, w, "t1")
	env := Scope{Kind: ScopeThread, TaskID: "t1"}
	if _, err := w.StoreEntry(ctx, env, StoreRequest{Key: "k", Description: "d", Value: []byte(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.NewThread(ctx, NewThreadRequest{TaskID: "t1", ID: "th1", From: "a", To: "b", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		call  func() error
		kind  error
		field string
	}{
		{"missing value", func() error {
			_, err := w.StoreEntry(ctx, env, StoreRequest{Key: "k2", Description: "d", Agent: "a"})
			return err
		}, ErrInvalid, FieldValue},
		{"nothing to update", func() error {
			_, err := w.UpdateEntry(ctx, env, UpdateRequest{Key: "k", Agent: "a"})
			return err
		}, ErrInvalid, ""},
		{"unknown env key", func() error { _, err := w.GetEntry(ctx, env, "nope"); return err }, ErrNotFound, ""},
		{"unknown memory key", func() error {
			_, err := w.GetEntry(ctx, Scope{Kind: ScopeAgent, Agent: "a"}, "nope")
			return err
		}, ErrNotFound, ""},
		{"done unknown status", func() error {
			_, err := w.WriteDone(ctx, DoneRequest{TaskID: "t1", Agent: "a", OutputFile: "plan.json", Status: "maybe"})
			return err
		}, ErrInvalid, FieldStatus},
		{"done failed without error", func() error {
			_, err := w.WriteDone(ctx, DoneRequest{TaskID: "t1", Agent: "a", OutputFile: "plan.json", Status: "failed"})
			return err
		}, ErrInvalid, FieldError},
		{"done without product", func() error {
			_, err := w.WriteDone(ctx, DoneRequest{TaskID: "t1", Agent: "a"})
			return err
		}, ErrInvalid, FieldOutputFile},
		{"task without description", func() error {
			_, err := w.CreateTask(ctx, NewTaskRequest{ID: "t2", Description: " "})
			return err
		}, ErrInvalid, FieldDescription},
		{"task id taken", func() error {
			_, err := w.CreateTask(ctx, NewTaskRequest{ID: "t1", Description: "again"})
			return err
		}, ErrConflict, FieldID},
		{"thread id taken", func() error {
			_, err := w.NewThread(ctx, NewThreadRequest{TaskID: "t1", ID: "th1", From: "a", To: "b", Message: "m"})
			return err
		}, ErrConflict, FieldID},
		{"unknown thread in task", func() error { _, err := w.GetThread(ctx, "t1", "nope"); return err }, ErrNotFound, ""},
		{"thread of no task", func() error { _, err := w.ResolveThread(ctx, "nope"); return err }, ErrNotFound, FieldTask},
		{"bad id", func() error { return ValidateID("task id", "a b") }, ErrInvalid, ""},
		{"no workspace", func() error {
			_, err := Open(filepath.Join(t.TempDir(), "missing"), Options{})
			return err
		}, ErrNotFound, ""},
		{"not a workspace", func() error { _, err := Open(t.TempDir(), Options{}); return err }, ErrNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			h := HintOf(err)
			if h == "" {
				t.Fatalf("%v: no hint", err)
			}
			if strings.Contains(h, "--") || strings.Contains(h, "workspaced ") {
				t.Errorf("hint %q names a command-line flag or command", h)
			}
			if got := FieldOf(err); got != tc.field {
				t.Errorf("field = %q, want %q", got, tc.field)
			}
		})
	}
}
