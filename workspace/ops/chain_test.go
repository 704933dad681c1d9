package ops

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// TestChain walks a thread's chain from the task's root thread down.
func TestChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, c := newWS(t)
	newTask(t, w, "t1")
	newTask(t, w, "t2")
	c.advance(time.Second)
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th_a", From: "coordinator", To: "solver", Message: "solve it"}); err != nil {
		t.Fatal(err)
	}
	c.advance(time.Second)
	if _, err := w.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: "th_b", ParentID: "th_a", From: "solver", To: "observer"}); err != nil {
		t.Fatal(err)
	}
	chain, err := Over(w).Chain(t.Context(), "t1", "th_b")
	if err != nil || len(chain) != 3 {
		t.Fatalf("Chain = %v, %v", chain, err)
	}
	if got, want := FormatChain(chain), "human → coordinator → solver → you (observer)"; got != want {
		t.Errorf("FormatChain = %q, want %q", got, want)
	}
}

// writeThread writes a thread file by hand, as a careless agent might.
func writeThread(t *testing.T, w *files.Store, task string, th workspace.Thread) {
	t.Helper()
	data, _ := json.Marshal(th)
	p := filepath.Join(w.Dir(), "tasks", task, "threads", th.ID+".json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestChainBrokenPointers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		threads []workspace.Thread
		start   string
		names   string // the thread the error must name
	}{
		{"cycle", []workspace.Thread{{ID: "x", ParentID: "y", TaskID: "t1"}, {ID: "y", ParentID: "x", TaskID: "t1"}}, "x", "x"},
		{"self parent", []workspace.Thread{{ID: "x", ParentID: "x", TaskID: "t1"}}, "x", "x"},
		{"missing parent", []workspace.Thread{{ID: "x", ParentID: "gone", TaskID: "t1"}}, "x", "gone"},
		{"other task", []workspace.Thread{{ID: "x", ParentID: "t1", TaskID: "t2"}}, "x", "x"},
		{"parent in other task", []workspace.Thread{{ID: "x", ParentID: "t2", TaskID: "t1"}}, "x", "t2"},
		{"bad parent id", []workspace.Thread{{ID: "x", ParentID: "../t2", TaskID: "t1"}}, "x", "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newWS(t)
			newTask(t, w, "t1")
			newTask(t, w, "t2")
			for _, th := range tc.threads {
				th.From, th.To, th.Status, th.CreatedAt = "a", "b", "active", t0
				writeThread(t, w, "t1", th)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Over(w).Chain(t.Context(), "t1", tc.start)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil {
					t.Fatalf("Chain succeeded over broken pointers")
				}
				if !strings.Contains(err.Error(), tc.names) {
					t.Errorf("error %q does not name thread %s", err, tc.names)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Chain hangs")
			}
		})
	}
}
