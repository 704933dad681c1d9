package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// A finished task's state.json is passed over at start when it parses
// (only its status and journal_seq are needed then), and checked whole
// when the task is next committed: one that does not validate is then
// restored from its backups and the journal; a full check (ReadState,
// validate) names it invalid meanwhile. One that does not parse is restored at start, as before.
func TestFinishedStateCheckedWhenServed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		corrupt func(t *testing.T, data []byte) []byte
		atStart bool // restored before any marker comes
	}{
		{name: "schema-invalid", corrupt: func(t *testing.T, data []byte) []byte {
			var st map[string]any
			if err := json.Unmarshal(data, &st); err != nil {
				t.Fatal(err)
			}
			st["subtasks"].(map[string]any)["st_1"].(map[string]any)["status"] = "exploded"
			out, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{name: "torn", atStart: true, corrupt: func(t *testing.T, data []byte) []byte { return data[:len(data)/2] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, ws := newWorkspace(t)
			prepare(t, ws, "t1", 1)
			h := startDaemon(t, dir, daemon.Config{Rescan: 50 * time.Millisecond})
			approve(t, ws, "t1")
			completeSubtask(t, ws, "t1", "st_1", "w1")
			want := awaitState(t, ws, "t1", func(st workspace.State) bool { return st.Status == "completed" })
			h.stop()

			path := filepath.Join(dir, "tasks", "t1", "state.json")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, tc.corrupt(t, data))
			startDaemon(t, dir, daemon.Config{Rescan: 50 * time.Millisecond})
			if !tc.atStart {
				st, err := ReadStatus(context.Background(), ws)
				if err != nil {
					t.Fatal(err)
				}
				// Status reads the head of a state only (validate checks
				// it whole): this one's head is sound.
				if len(st.Tasks) != 1 || st.Tasks[0].Status != "completed" || st.Tasks[0].Error != "" {
					t.Errorf("status of the task with a schema-invalid state.json: %+v, want it completed", st.Tasks)
				}
				// A read does not check the schema either (the daemon
				// does on loading, validate on demand): it reads what
				// the file says.
				if st, err := ws.ReadState(context.Background(), "t1"); err != nil || st.Subtasks["st_1"].Status != "exploded" {
					t.Errorf("ReadState of the schema-invalid state.json: %v, want it read as written", err)
				}
				// A marker (a claim: writing an output reads the state)
				// makes the daemon commit the task, which checks its
				// state whole.
				if _, err := ws.WriteClaim(context.Background(), "t1", "w2", "st_1"); err != nil {
					t.Fatal(err)
				}
			}
			await(t, "a state_restored event", func() (bool, string) {
				evs, _, err := ws.ReadEvents(context.Background(), "t1")
				if err != nil {
					return false, err.Error()
				}
				for _, e := range evs {
					if e.Name == EventStateRestored {
						return true, ""
					}
				}
				return false, "no state_restored event"
			})
			// A read does not check the schema: the state restored is
			// the first one read whose st_1 is completed again.
			got := awaitState(t, ws, "t1", func(st workspace.State) bool {
				ss := st.Subtasks["st_1"]
				return st.JournalSeq >= want.JournalSeq && ss != nil && ss.Status == "completed"
			})
			if got.Status != "completed" || got.Subtasks["st_1"].Status != "completed" {
				t.Errorf("restored state: status %s, st_1 %s; want completed", got.Status, got.Subtasks["st_1"].Status)
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStatusNamesBrokenStateHead: status names invalid a state.json that
// does not parse, or whose task_id, status or journal_seq is missing or
// wrong, with what is wrong; a sound one is counted by its status.
func TestStatusNamesBrokenStateHead(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, data, status, err string }{
		{"sound", `{"task_id":"t1","status":"completed","phase":"done","journal_seq":3}`, "completed", ""},
		{"torn", `{"task_id":"t1","sta`, "invalid", "parse tasks/t1/state.json"},
		{"no task_id", `{"status":"completed","journal_seq":3}`, "invalid", "task_id is missing"},
		{"another task", `{"task_id":"t2","status":"completed","journal_seq":3}`, "invalid", `state of task "t2"`},
		{"no status", `{"task_id":"t1","journal_seq":3}`, "invalid", "status is missing"},
		{"unknown status", `{"task_id":"t1","status":"done","journal_seq":3}`, "invalid", `status "done" is not a task status`},
		{"no journal_seq", `{"task_id":"t1","status":"completed"}`, "invalid", "journal_seq is missing"},
		{"negative journal_seq", `{"task_id":"t1","status":"completed","journal_seq":-2}`, "invalid", "journal_seq -2 is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, ws := newWorkspace(t)
			prepare(t, ws, "t1", 1)
			writeFile(t, filepath.Join(dir, "tasks", "t1", "state.json"), []byte(tc.data))
			st, err := ReadStatus(t.Context(), ws)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Tasks) != 1 || st.Tasks[0].Status != tc.status || st.ByStatus[tc.status] != 1 ||
				(tc.err == "") != (st.Tasks[0].Error == "") || !strings.Contains(st.Tasks[0].Error, tc.err) {
				t.Fatalf("status: %+v, want %s naming %q", st.Tasks, tc.status, tc.err)
			}
		})
	}
}
