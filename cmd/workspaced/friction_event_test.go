package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every recorded friction is also a friction_recorded event in the events
// of each task it names, new or merged into a known pattern.
func TestFrictionAddWritesEvents(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Task("t2")
	id := strings.TrimSpace(w.Ok("friction", "add", "--type", "worker_failure", "--task", "t1",
		"--description", "solver times out", "--pattern", "solver timeout"))
	r := w.Run("friction", "add", "--type", "worker_failure", "--task", "t2",
		"--description", "solver times out again", "--pattern", "solver timeout")
	again := strings.TrimSpace(r.Stdout)
	if again != id {
		t.Fatalf("a repeat of the pattern made %s, want the known %s", again, id)
	}
	for task, want := range map[string]string{
		"t1": "friction_recorded t1 " + id + " new=true occurrences=1 type=worker_failure",
		"t2": "friction_recorded t2 " + id + " new=false occurrences=2 type=worker_failure",
	} {
		log, err := os.ReadFile(filepath.Join(w.Root, "tasks", task, "events.log"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), want) {
			t.Errorf("events of %s lack %q:\n%s", task, want, log)
		}
	}
}
