package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// refuses runs op and checks it fails with ErrInvalid (or want) and that
// nothing in the root (or in outside, when given) changed.
func refuses(t *testing.T, w *Store, want error, outside string, op func() error) {
	t.Helper()
	before := listing(t, w.Dir())
	var beforeOut string
	if outside != "" {
		beforeOut = listing(t, outside)
	}
	err := op()
	if err == nil {
		t.Fatalf("succeeded, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Errorf("err = %v, want %v", err, want)
	}
	if err.Error() == "" {
		t.Errorf("empty error message")
	}
	if after := listing(t, w.Dir()); after != before {
		t.Errorf("the tree changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if outside != "" {
		if after := listing(t, outside); after != beforeOut {
			t.Errorf("a directory outside the root changed")
		}
	}
}

// The tables of bad ids, keys and values run on the file tree through
// workspace/storetest.BadInput (workspace/files' TestBadInput), as on
// every store. LockNamed, which names a lock and never the task's whole
// one, refuses an empty name as well.
func TestLockNamedRefusesEmptyName(t *testing.T) {
	t.Parallel()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	refuses(t, w, workspace.ErrInvalid, "", func() error {
		l, err := w.LockNamed(context.Background(), "t1", "", "a")
		if err == nil {
			l.Release()
		}
		return err
	})
}

func TestSymlinkedScopeDirStaysInside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "k.json"), []byte(`{"key":"k","short_description":"","stored_by":"x","created_at":"2024-01-15T10:00:00Z","updated_at":"2024-01-15T10:00:00Z","version":1,"value":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(w.Dir(), "tasks", "t1", "env")); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	ops := map[string]func() error{
		"store": func() error {
			_, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "a"})
			return err
		},
		"update": func() error {
			_, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "a"})
			return err
		},
		"delete": func() error { return w.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: "k", Agent: "a"}) },
		"get": func() error {
			_, err := w.GetEntry(ctx, sc, "k")
			return err
		},
		"list": func() error {
			_, err := w.ListEntries(ctx, sc)
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			before, beforeOut := listing(t, w.Dir()), listing(t, outside)
			if err := op(); err == nil {
				t.Errorf("succeeded through a symlinked scope directory")
			}
			if listing(t, w.Dir()) != before {
				t.Errorf("the tree changed")
			}
			if listing(t, outside) != beforeOut {
				t.Errorf("the directory outside the root changed")
			}
		})
	}
}

func TestSymlinkedEntryFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	outside := t.TempDir()
	target := filepath.Join(outside, "secret.json")
	secret := []byte(`{"key":"k","short_description":"","stored_by":"x","created_at":"2024-01-15T10:00:00Z","updated_at":"2024-01-15T10:00:00Z","version":7,"value":"secret"}`)
	if err := os.WriteFile(target, secret, 0o644); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(w.Dir(), "tasks", "t1", "env")
	if err := os.MkdirAll(env, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(env, "k.json")); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	beforeOut := listing(t, outside)

	if _, err := w.GetEntry(ctx, sc, "k"); !errors.Is(err, workspace.ErrUnsafe) {
		t.Errorf("get: err = %v, want ErrUnsafe", err)
	}
	if _, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "a"}); !errors.Is(err, workspace.ErrUnsafe) {
		t.Errorf("update: err = %v, want ErrUnsafe", err)
	}
	items, skipped, err := w.ListEntriesReport(ctx, sc)
	if err != nil || len(items) != 0 || len(skipped) != 1 {
		t.Errorf("list = %v, skipped %v, %v; want the link skipped", items, skipped, err)
	}
	// Store is create-or-replace: it may refuse, or replace the link by a
	// regular file inside the root; it must never write through it.
	_, err = w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`2`), Agent: "a"})
	if err == nil {
		st, lerr := os.Lstat(filepath.Join(env, "k.json"))
		if lerr != nil || !st.Mode().IsRegular() {
			t.Errorf("store succeeded but k.json is not a regular file: %v", lerr)
		}
		e, gerr := w.GetEntry(ctx, sc, "k")
		if gerr != nil || e.Version != 1 {
			t.Errorf("after store: %+v, %v; want version 1 (nothing taken from outside)", e, gerr)
		}
	}
	if got := listing(t, outside); got != beforeOut {
		t.Errorf("the file outside the root changed")
	}
	if data, _ := os.ReadFile(target); !bytes.Equal(data, secret) {
		t.Errorf("target rewritten: %s", data)
	}
}

func TestSymlinkedLockFileStaysInside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	outside := t.TempDir()
	target := filepath.Join(outside, "victim")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	locks := filepath.Join(w.Dir(), "memory", "global", ".locks")
	if err := os.MkdirAll(locks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(locks, "k.json.lock")); err != nil {
		t.Fatal(err)
	}
	_, err := w.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: "a"})
	if !errors.Is(err, workspace.ErrUnsafe) {
		t.Errorf("store with a symlinked lock file: err = %v, want ErrUnsafe", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep me" {
		t.Errorf("a file outside the root was written through the lock: %q", data)
	}
}

func TestSchemaInvalidTaskAndPlanWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	if _, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"subtasks":[{"id":"a","description":"x"}]}`)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func() error{
		"task empty description": func() error {
			_, err := w.CreateTask(ctx, workspace.NewTaskRequest{ID: "t2", Description: "  "})
			return err
		},
		"plan not an object": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`[1]`))
			return err
		},
		"plan without subtasks": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"summary":"x"}`))
			return err
		},
		"plan subtask without description": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"subtasks":[{"id":"a"}]}`))
			return err
		},
		"plan bad status": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"status":"done","subtasks":[]}`))
			return err
		},
		"plan unknown dependency": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"subtasks":[{"id":"a","description":"x","dependencies":["zz"]}]}`))
			return err
		},
		"plan duplicate subtask": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"subtasks":[{"id":"a","description":"x"},{"id":"a","description":"y"}]}`))
			return err
		},
		"plan bad id": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"id":"../x","subtasks":[]}`))
			return err
		},
		"plan trailing data": func() error {
			_, err := w.WritePlan(ctx, "t1", "planner", []byte(`{"subtasks":[]} {}`))
			return err
		},
		"output not json": func() error {
			_, err := w.WriteOutput(ctx, "t1", "a", "w", []byte(`nope`))
			return err
		},
		"review bad verdict": func() error {
			_, err := w.WriteReview(ctx, "t1", "r1", "w", []byte(`{"type":"plan_review","verdict":"maybe"}`))
			return err
		},
	}
	for name, op := range cases {
		t.Run(name, func(t *testing.T) { refuses(t, w, workspace.ErrInvalid, "", op) })
	}
}

// TestBadDescriptionsWriteNothing: a description holding NUL or invalid
// UTF-8 is refused on store and update, and the tree is left as it was.
func TestBadDescriptionsWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWS(t)
	newTask(t, w, "t1")
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "existing", Value: json.RawMessage(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	for name, desc := range map[string]string{"nul": "a\x00b", "invalid utf8": "a\xffb"} {
		t.Run(name, func(t *testing.T) {
			refuses(t, w, workspace.ErrInvalid, "", func() error {
				_, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "new", Description: desc, Value: json.RawMessage(`1`), Agent: "a"})
				return err
			})
			refuses(t, w, workspace.ErrInvalid, "", func() error {
				_, err := w.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "existing", Description: &desc, Agent: "a"})
				return err
			})
		})
	}
	tab := "tab\tnewline\n\x01 kept"
	if _, err := w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Description: tab, Value: json.RawMessage(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	if e, err := w.GetEntry(ctx, sc, "k"); err != nil || e.ShortDescription != tab {
		t.Errorf("description read back as %q, %v; want %q", e.ShortDescription, err, tab)
	}
}
