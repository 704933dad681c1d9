package files

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestHintsNameNoFlags triggers every error whose fix is an input and
// checks that its hint speaks of the operation, never of a command-line
// flag or command, and that the input at fault is named as a field for
// each surface to translate.
func TestHintsNameNoFlags(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	ctx := context.Background()
	newTask(t, w, "t1")
	env := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	if _, err := w.StoreEntry(ctx, env, workspace.StoreRequest{Key: "k", Description: "d", Value: []byte(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th1", From: "a", To: "b", Message: "m"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		call  func() error
		kind  error
		field string
	}{
		{"missing value", func() error {
			_, err := w.StoreEntry(ctx, env, workspace.StoreRequest{Key: "k2", Description: "d", Agent: "a"})
			return err
		}, workspace.ErrInvalid, workspace.FieldValue},
		{"nothing to update", func() error {
			_, err := w.UpdateEntry(ctx, env, workspace.UpdateRequest{Key: "k", Agent: "a"})
			return err
		}, workspace.ErrInvalid, ""},
		{"unknown env key", func() error { _, err := w.GetEntry(ctx, env, "nope"); return err }, workspace.ErrNotFound, ""},
		{"unknown memory key", func() error {
			_, err := w.GetEntry(ctx, workspace.Scope{Kind: workspace.ScopeAgent, Agent: "a"}, "nope")
			return err
		}, workspace.ErrNotFound, ""},
		{"done unknown status", func() error {
			_, err := w.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "a", OutputFile: "plan.json", Status: "maybe"})
			return err
		}, workspace.ErrInvalid, workspace.FieldStatus},
		{"done failed without error", func() error {
			_, err := w.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "a", OutputFile: "plan.json", Status: "failed"})
			return err
		}, workspace.ErrInvalid, workspace.FieldError},
		{"done without product", func() error {
			_, err := w.WriteDone(ctx, workspace.DoneRequest{TaskID: "t1", Agent: "a"})
			return err
		}, workspace.ErrInvalid, workspace.FieldOutputFile},
		{"task without description", func() error {
			_, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t2", Description: " "})
			return err
		}, workspace.ErrInvalid, workspace.FieldDescription},
		{"task id taken", func() error {
			_, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "again"})
			return err
		}, workspace.ErrConflict, workspace.FieldID},
		{"thread id taken", func() error {
			_, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th1", From: "a", To: "b", Message: "m"})
			return err
		}, workspace.ErrConflict, workspace.FieldID},
		{"unknown thread in task", func() error { _, err := w.GetThread(ctx, "t1", "nope"); return err }, workspace.ErrNotFound, ""},
		{"thread of no task", func() error { _, err := w.ResolveThread(ctx, "nope"); return err }, workspace.ErrNotFound, workspace.FieldTask},
		{"bad id", func() error { return workspace.ValidateID("task id", "a b") }, workspace.ErrInvalid, ""},
		{"no workspace", func() error {
			_, err := Open(filepath.Join(t.TempDir(), "missing"), workspace.Options{})
			return err
		}, workspace.ErrNotFound, ""},
		{"not a workspace", func() error { _, err := Open(t.TempDir(), workspace.Options{}); return err }, workspace.ErrNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err = %v, want %v", err, tc.kind)
			}
			h := workspace.HintOf(err)
			if h == "" {
				t.Fatalf("%v: no hint", err)
			}
			if strings.Contains(h, "--") || strings.Contains(h, "workspaced ") {
				t.Errorf("hint %q names a command-line flag or command", h)
			}
			if got := workspace.FieldOf(err); got != tc.field {
				t.Errorf("field = %q, want %q", got, tc.field)
			}
		})
	}
}
