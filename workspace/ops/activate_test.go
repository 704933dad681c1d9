package ops

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// The observer has two threads: th_observer in training-001 and
// nc_observer in nocard, both active, created at the same instant.
func TestActivateThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, c := provFixtureClock(t)
	// Nothing was ever activated: the tie falls to the task id.
	if got, err := Over(w).ActiveThread(t.Context(), "observer"); err != nil || got != (ThreadRef{Task: "nocard", Thread: "nc_observer"}) {
		t.Fatalf("active thread before any activation: %+v, %v", got, err)
	}

	act, err := Over(w).ActivateThread(ctx, "training-001", "th_observer", "observer")
	if err != nil {
		t.Fatal(err)
	}
	if act.Thread.Status != "active" || !act.Thread.ActivatedAt.Equal(fixtureNow) {
		t.Errorf("activated thread: %+v", act.Thread)
	}
	if want := []ThreadRef{{Task: "nocard", Thread: "nc_observer"}}; !reflect.DeepEqual(act.Pending, want) {
		t.Errorf("set pending %v, want %v", act.Pending, want)
	}
	if th, _ := w.GetThread(ctx, "nocard", "nc_observer"); th.Status != "pending" {
		t.Errorf("nc_observer is %s, want pending", th.Status)
	}
	// Other agents' threads are untouched.
	if th, _ := w.GetThread(ctx, "training-001", "th_solver"); th.Status != "active" {
		t.Errorf("th_solver is %s", th.Status)
	}
	if got, err := Over(w).ActiveThread(t.Context(), "observer"); err != nil || got != (ThreadRef{Task: "training-001", Thread: "th_observer"}) {
		t.Fatalf("active thread: %+v, %v", got, err)
	}

	// The agent's context without a thread: the active one hydrated, the
	// other task's thread dehydrated after the task's own.
	b, err := Over(w).Context(t.Context(), "", ContextOptions{Agent: "observer", Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Thread != "th_observer" || b.Task != "training-001" {
		t.Fatalf("context of the agent assembled %s/%s", b.Task, b.Thread)
	}
	open := b.Sections[3].Items
	last := open[len(open)-1]
	if last.Ref != "thread:nocard/nc_observer" || !strings.HasPrefix(last.Content, "task: nocard\nghost → observer · pending\n") {
		t.Errorf("last open thread: %+v", last)
	}
	byThread, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	if contains(includedRefs(byThread), "open threads|thread:nocard/nc_observer") {
		t.Error("the context of a named thread lists threads of other tasks")
	}
	checkContextGolden(t, "agent-active", b)

	// Switching back: the activation of a later time wins.
	c.advance(time.Minute)
	act, err = Over(w).ActivateThread(ctx, "nocard", "nc_observer", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []ThreadRef{{Task: "training-001", Thread: "th_observer"}}; !reflect.DeepEqual(act.Pending, want) {
		t.Errorf("set pending %v, want %v", act.Pending, want)
	}
	b, err = Over(w).Context(t.Context(), "", ContextOptions{Agent: "observer", Budget: 100000})
	if err != nil || b.Thread != "nc_observer" {
		t.Fatalf("context after switching: %s, %v", b.Thread, err)
	}
	// Activating the active thread again sets nothing else pending.
	if act, err := Over(w).ActivateThread(ctx, "nocard", "nc_observer", "observer"); err != nil || len(act.Pending) != 0 {
		t.Errorf("activate again: %+v, %v", act, err)
	}
}

func TestActivateThreadRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := provFixture(t)
	tree := func() map[string][]byte {
		out := map[string][]byte{}
		_ = filepath.Walk(filepath.Join(w.Dir(), "tasks"), func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() && !strings.Contains(p, ".locks") {
				out[p], _ = os.ReadFile(p)
			}
			return nil
		})
		return out
	}
	before := tree()
	tests := []struct {
		name, task, thread, agent string
		is                        error
		want                      string
	}{
		{"another agent's thread", "training-001", "th_solver", "observer", workspace.ErrInvalid, "addressed to solver, not observer"},
		{"a done thread", "training-001", "th_direct", "solver", workspace.ErrInvalid, "the thread is done"},
		{"no such thread", "training-001", "th_nowhere", "observer", workspace.ErrNotFound, "th_nowhere"},
		{"bad agent", "training-001", "th_observer", "bad agent", workspace.ErrInvalid, "bad agent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Over(w).ActivateThread(ctx, tc.task, tc.thread, tc.agent)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v naming %q", err, tc.is, tc.want)
			}
			if workspace.HintOf(err) == "" {
				t.Errorf("no hint: %v", err)
			}
		})
	}
	after := tree()
	if len(after) != len(before) {
		t.Fatalf("files %d → %d", len(before), len(after))
	}
	for p, b := range before {
		if !bytes.Equal(after[p], b) {
			t.Errorf("%s changed", p)
		}
	}
}

func TestActiveThreadNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := provFixture(t)
	// terse has one thread, pending.
	_, err := Over(w).ActiveThread(t.Context(), "terse")
	if !errors.Is(err, workspace.ErrNotFound) || !strings.Contains(err.Error(), "(1 pending)") {
		t.Fatalf("terse: %v", err)
	}
	if _, err := Over(w).Context(t.Context(), "", ContextOptions{Agent: "terse", Budget: 100}); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("context of terse: %v", err)
	}
	if _, err := Over(w).Context(t.Context(), "", ContextOptions{Budget: 100}); !errors.Is(err, workspace.ErrInvalid) {
		t.Fatalf("context of nothing: %v", err)
	}
	if _, err := Over(w).ActiveThread(t.Context(), "nobody"); !errors.Is(err, workspace.ErrNotFound) {
		t.Fatalf("nobody: %v", err)
	}
	// An unreadable thread file of some task does not stop the search.
	if err := os.WriteFile(filepath.Join(w.Dir(), "tasks", "deep", "threads", "junk.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Over(w).ActivateThread(ctx, "training-001", "th_terse", ""); err != nil {
		t.Fatal(err)
	}
	if got, err := Over(w).ActiveThread(t.Context(), "terse"); err != nil || got.Thread != "th_terse" {
		t.Fatalf("terse after activation: %+v %v", got, err)
	}
}

func TestPickActive(t *testing.T) {
	t.Parallel()
	at := func(task, id, status string, created, activated int) agentThread {
		th := workspace.Thread{ID: id, Status: status, CreatedAt: fixtureNow.Add(time.Duration(created) * time.Second)}
		if activated > 0 {
			th.ActivatedAt = fixtureNow.Add(time.Duration(activated) * time.Second)
		}
		return agentThread{task: task, t: th}
	}
	tests := []struct {
		name    string
		threads []agentThread
		want    string // task/id, or "" for none
	}{
		{"none", nil, ""},
		{"only pending and done", []agentThread{at("a", "x", "pending", 0, 5), at("a", "y", "done", 0, 9)}, ""},
		{"activated last wins", []agentThread{at("a", "x", "active", 9, 1), at("b", "y", "active", 0, 2)}, "b/y"},
		{"activated beats newer", []agentThread{at("a", "x", "active", 9, 0), at("b", "y", "active", 0, 1)}, "b/y"},
		{"newest when none activated", []agentThread{at("a", "x", "active", 1, 0), at("b", "y", "active", 2, 0)}, "b/y"},
		{"tie: task id, then thread id", []agentThread{at("b", "a", "active", 0, 0), at("a", "z", "active", 0, 0), at("a", "y", "active", 0, 0)}, "a/y"},
		{"a pending thread activated later does not count", []agentThread{at("a", "x", "active", 0, 1), at("b", "y", "pending", 0, 9)}, "a/x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := pickActive(tc.threads)
			name := ""
			if ok {
				name = got.task + "/" + got.t.ID
			}
			if name != tc.want {
				t.Errorf("got %q, want %q", name, tc.want)
			}
		})
	}
}
