package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func view(status string, completed ...string) taskView {
	v := taskView{Status: status, Subtasks: map[string]struct {
		Status string `json:"status"`
	}{}}
	for _, id := range []string{"st_1", "st_2", "st_3"} {
		v.Subtasks[id] = struct {
			Status string `json:"status"`
		}{"pending"}
	}
	for _, id := range completed {
		v.Subtasks[id] = struct {
			Status string `json:"status"`
		}{"completed"}
	}
	return v
}

// TestCommitsStampFirstSight: a subtask is stamped when a state first
// shows it completed; later states (showing it again) move nothing, and
// pending subtasks are not stamped.
func TestCommitsStampFirstSight(t *testing.T) {
	t.Parallel()
	cm := newCommits()
	t0 := time.Unix(1000, 0)
	cm.observe("t1", view("executing"), t0)
	cm.observe("t1", view("executing", "st_1"), t0.Add(time.Second))
	cm.observe("t1", view("executing", "st_1", "st_2"), t0.Add(2*time.Second))
	cm.observe("t1", view("completed", "st_1", "st_2"), t0.Add(3*time.Second))
	cm.observe("t2", view("executing", "st_1"), t0.Add(4*time.Second))
	for key, want := range map[string]time.Time{
		"t1/st_1": t0.Add(time.Second), "t1/st_2": t0.Add(2 * time.Second), "t1/st_3": {}, "t2/st_1": t0.Add(4 * time.Second),
	} {
		if got := cm.at(key); !got.Equal(want) {
			t.Errorf("at(%s) = %v, want %v", key, got, want)
		}
	}
	if err := cm.wait([]string{"t1/st_1", "t1/st_2"}, time.Now().Add(time.Minute)); err != nil {
		t.Errorf("wait for stamped keys: %v", err)
	}
	err := cm.wait([]string{"t1/st_3"}, time.Now().Add(10*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "t1/st_3") {
		t.Errorf("wait for a key never seen: %v, want a timeout naming it", err)
	}
	if err := cm.waitState("t1", "completed", func(v taskView) bool { return v.Status == "completed" }, time.Now().Add(time.Minute)); err != nil {
		t.Errorf("waitState on the last state: %v", err)
	}
}

// writeState replaces dir/state.json with v, as the daemon does: a
// temporary file renamed over it.
func writeState(t *testing.T, dir string, v taskView) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
}

// TestStateWatcherSeesReplacedState: the watcher reads the state present
// when the watch starts, then every state.json renamed into place, and
// stamps each completion once, after its rename; other files in the
// directory are not read as state.
func TestStateWatcherSeesReplacedState(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "tasks", "t1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeState(t, dir, view("executing", "st_1")) // before the watch
	cm := newCommits()
	sw, err := newStateWatcher(root, cm)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.close()
	if err := sw.watch("t1"); err != nil {
		t.Fatal(err)
	}
	if err := cm.wait([]string{"t1/st_1"}, time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("state present at the watch: %v", err)
	}
	first := cm.at("t1/st_1")
	// A marker-like file holding a state that shows st_3 is no state.
	data, _ := json.Marshal(view("executing", "st_3"))
	if err := os.WriteFile(filepath.Join(dir, ".done.a.1"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	writeState(t, dir, view("executing", "st_1", "st_2"))
	if err := cm.wait([]string{"t1/st_2"}, time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("replaced state: %v", err)
	}
	if at := cm.at("t1/st_2"); at.Before(before) {
		t.Errorf("st_2 stamped %v, before its state was written (%v)", at, before)
	}
	if at := cm.at("t1/st_1"); !at.Equal(first) {
		t.Errorf("st_1 restamped at %v, want its first sight %v", at, first)
	}
	if at := cm.at("t1/st_3"); !at.IsZero() {
		t.Errorf("st_3 stamped from a file that is not state.json")
	}
}
