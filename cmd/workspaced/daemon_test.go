package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

// The daemon is tested as a process: the real binary's serve, markers
// dropped as agents drop them, and invariants checked on the files. Its
// long tests (SIGKILL at random points, bursts, filesystem faults, scale)
// are in e2e/torture and e2e/files.

// serve starts the daemon on the workspace with a short grace period,
// its root found through WORKSPACE_ROOT as a user's shell would give it,
// and returns once it holds the workspace's lock.
func (w *ws) serve(extra ...string) *clitest.Daemon {
	w.T.Helper()
	cmd := clitest.Command(append([]string{"serve", "--grace", "200ms", "--log-level", "warn"}, extra...)...)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	d := w.StartCmd(cmd)
	w.AwaitLead(d)
	return d
}

func TestServeSecondExitsFour(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	first := w.serve()
	clitest.Eventually(t, "the first daemon to serve", func() (bool, string) {
		r := w.Run("status", "--json")
		var s files.Status
		_ = json.Unmarshal([]byte(r.Stdout), &s)
		return s.Serving && s.PID == first.Cmd.Process.Pid, r.String()
	})
	start := time.Now()
	r := w.Fails(4, fmt.Sprintf("another daemon (pid %d) is serving", first.Cmd.Process.Pid), "serve")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the second serve took %s to give up", took)
	}
	_ = r
	if !first.Running() {
		t.Fatal("the first daemon stopped")
	}
	first.Stop()
	out := w.Ok("status")
	if !strings.Contains(out, "not serving") {
		t.Errorf("status after stop: %q", out)
	}
}

func TestServeRestoresCorruptState(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		corrupt func(t *testing.T, path string)
	}{
		{"truncated", func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"zeroed", func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			if err := os.WriteFile(p, make([]byte, fi.Size()), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"invalid", func(t *testing.T, p string) {
			data, _ := os.ReadFile(p)
			bad := strings.Replace(string(data), `"status": "executing"`, `"status": "exploded"`, 1)
			bad = strings.Replace(bad, `"status": "completed"`, `"status": "exploded"`, 1)
			if bad == string(data) {
				t.Fatal("nothing to make invalid")
			}
			if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWS(t)
			x := w.Open()
			srv := w.serve()
			clitest.ExecutingTask(t, x, "t1", 6)
			for s := 1; s <= 5; s++ {
				sub := fmt.Sprintf("st_%d", s)
				if _, err := x.WriteOutput(t.Context(), "t1", sub, "w1", []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
				if _, err := x.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "w1", OutputFile: "outputs/" + sub + ".json"}); err != nil {
					t.Fatal(err)
				}
				clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == int64(2+s) })
			}
			srv.Stop()
			statePath := filepath.Join(w.Root, "tasks", "t1", "state.json")
			want, err := os.ReadFile(statePath)
			if err != nil {
				t.Fatal(err)
			}
			var list []struct {
				Name  string `json:"name"`
				Valid bool   `json:"valid"`
			}
			clitest.Decode(t, w.Ok("backup", "list", "--task", "t1", "--json"), &list)
			if len(list) < 4 {
				t.Fatalf("want at least 4 backups, got %d", len(list))
			}
			// The newest two backups are corrupt too.
			for _, b := range list[:2] {
				p := filepath.Join(w.Root, "tasks", "t1", "backups", b.Name)
				if err := os.WriteFile(p, []byte(`{"task_id": "t1", "sta`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.corrupt(t, statePath)
			if r := w.Run("state", "show", "--task", "t1"); r.Code == 0 {
				t.Fatalf("state show of a corrupt state.json succeeded: %v", r)
			}
			srv = w.serve()
			st := clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == 7 })
			got, _ := os.ReadFile(statePath)
			if string(got) != string(want) {
				t.Errorf("restored state differs from the one before the corruption:\n%s\nwant\n%s", got, want)
			}
			// Events follow the state write: wait for the event too.
			restored := ""
			clitest.Eventually(t, "a state_restored event", func() (bool, string) {
				evs, _, err := x.ReadEvents(t.Context(), "t1")
				if err != nil {
					return false, err.Error()
				}
				for _, e := range evs {
					if e.Name == files.EventStateRestored {
						restored = e.Attrs["from"]
					}
				}
				return restored != "", "none yet"
			})
			if restored != list[2].Name {
				t.Errorf("state_restored from %q, want the newest valid backup %q", restored, list[2].Name)
			}
			if out := w.Ok("state", "rebuild", "--task", "t1"); !strings.Contains(out, "matches") {
				t.Errorf("state rebuild after restore:\n%s", out)
			}
			if st.Status != "executing" || st.Subtasks["st_5"].Status != "completed" {
				t.Errorf("restored state: %s, st_5 %s", st.Status, st.Subtasks["st_5"].Status)
			}
			srv.Stop()
		})
	}
}

func TestServeRejectsBadMarkers(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	x := w.Open()
	srv := w.serve()
	clitest.ExecutingTask(t, x, "t1", 12)
	dir := filepath.Join(w.Root, "tasks", "t1")
	now := time.Now().UTC().Format(workspace.TimeFormat)
	put := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	done := func(agent, sub, output string) string {
		return fmt.Sprintf(`{"agent_id":%q,"subtask_id":%q,"output_file":%q,"status":"completed","completed_at":%q}`, agent, sub, output, now)
	}
	// A claim that wins, so the second claim of st_1 is refused.
	if _, err := x.WriteClaim(t.Context(), "t1", "w1", "st_1"); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.Subtasks["st_1"].Status == "in_progress" })

	outside := filepath.Join(w.Dir, "outside.json")
	if err := os.WriteFile(outside, []byte(`{"subtask_id":"st_9"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "outputs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "outputs", "st_8.json"), []byte(`{"subtask_id": 8}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "outputs", "st_9.json")); err != nil {
		t.Fatal(err)
	}
	validElsewhere := filepath.Join(w.Dir, "marker.json")
	if err := os.WriteFile(validElsewhere, []byte(done("w5", "st_5", "outputs/st_5.json")), 0o644); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		file   string
		make   func(name string)
		reason string // in the journal record and the event
		event  string
	}{
		{".done.w2.half", func(n string) { put(n, `{"agent_id": "w2", "output_fi`) }, "not a valid done marker", "output_rejected"},
		{".claim.w3.notjson", func(n string) { put(n, "hello, daemon") }, "not a valid claim marker", "output_rejected"},
		{".claim.w4.deep", func(n string) { put(n, strings.Repeat("[", 200)+strings.Repeat("]", 200)) }, "nested deeper than", "output_rejected"},
		{".done.w4.huge", func(n string) { put(n, `{"agent_id":"w4","x":"`+strings.Repeat("x", 17<<20)+`"}`) }, "over the", "output_rejected"},
		{".done.w5.link", func(n string) {
			if err := os.Symlink(validElsewhere, filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}, "is a symlink", "output_rejected"},
		{".claim.w6.fifo", func(n string) {
			if err := syscall.Mkfifo(filepath.Join(dir, n), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "is a FIFO", "output_rejected"},
		{".done.w6.dir", func(n string) {
			if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "is a directory", "output_rejected"},
		{".done.w7.missing", func(n string) { put(n, done("w7", "st_7", "outputs/st_7.json")) }, "does not exist", "output_rejected"},
		{".done.w8.invalid", func(n string) { put(n, done("w8", "st_8", "outputs/st_8.json")) }, "schema", "output_rejected"},
		{".done.w9.symlinked", func(n string) { put(n, done("w9", "st_9", "outputs/st_9.json")) }, "symlink", "output_rejected"},
		{".done.w10.outside", func(n string) { put(n, done("w10", "st_10", "../../../outside.json")) }, "is not plan.json", "output_rejected"},
		{".done.w12.other", func(n string) {
			put("outputs/st_3.json", `{"subtask_id":"st_3"}`)
			put(n, done("w12", "st_12", "outputs/st_3.json"))
		}, "names subtask st_12, but its output_file outputs/st_3.json is subtask st_3's", "output_rejected"},
		{".claim.w2.taken", func(n string) {
			put(n, fmt.Sprintf(`{"agent_id":"w2","subtask_id":"st_1","claimed_at":%q}`, now))
		}, "already taken by w1", "claim_refused"},
	}
	for _, c := range cases {
		c.make(c.file)
	}
	// A valid marker after the bad ones is applied.
	if _, err := x.WriteOutput(t.Context(), "t1", "st_2", "w11", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := x.WriteDone(t.Context(), workspace.DoneRequest{TaskID: "t1", Agent: "w11", OutputFile: "outputs/st_2.json"}); err != nil {
		t.Fatal(err)
	}
	want := int64(3 + len(cases) + 1)
	st := clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.JournalSeq == want })
	if st.Subtasks["st_2"].Status != "completed" {
		t.Errorf("st_2 is %s after the valid done marker", st.Subtasks["st_2"].Status)
	}
	for _, sid := range []string{"st_3", "st_5", "st_7", "st_8", "st_9", "st_10", "st_12"} {
		if s := st.Subtasks[sid].Status; s != "pending" {
			t.Errorf("%s is %s, want pending (its marker was rejected)", sid, s)
		}
	}
	if !srv.Running() {
		t.Fatalf("daemon stopped:\n%s", srv.Log)
	}
	srv.Stop()
	recs := clitest.CheckJournal(t, x, "t1")
	byFile := map[string]workspace.JournalRecord{}
	for _, r := range recs {
		byFile[r.File] = r
	}
	evs, _, err := x.ReadEvents(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		r, ok := byFile[c.file]
		if !ok {
			t.Errorf("%s: not in the journal", c.file)
			continue
		}
		reason := r.Rejected
		if c.event == "claim_refused" {
			if r.Rejected != "" {
				t.Errorf("%s: rejected on reading (%s), want refused by the state", c.file, r.Rejected)
			}
			reason = errorFor(st, r.Seq)
		}
		if !strings.Contains(reason, c.reason) {
			t.Errorf("%s: reason %q, want it to mention %q", c.file, reason, c.reason)
		}
		found := false
		for _, e := range evs {
			if e.Name == c.event && e.Attrs["file"] == c.file && strings.Contains(e.Attrs["reason"], c.reason) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s event with its reason", c.file, c.event)
		}
	}
}

func errorFor(st workspace.State, seq int64) string {
	for _, e := range st.Errors {
		if e.Seq == seq {
			return e.Message
		}
	}
	return ""
}

func TestBackupRestoreCommand(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	x := w.Open()
	srv := w.serve()
	clitest.ExecutingTask(t, x, "t1", 2)
	w.Fails(4, "is serving this root", "backup", "restore", "--task", "t1")
	srv.Stop()
	statePath := filepath.Join(w.Root, "tasks", "t1", "state.json")
	if err := os.WriteFile(statePath, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := w.Ok("backup", "restore", "--task", "t1")
	if !strings.Contains(out, "restored") {
		t.Errorf("backup restore printed %q", out)
	}
	data, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := files.ValidateState("t1", data); err != nil {
		t.Fatalf("restored state does not validate: %v", err)
	}
	w.Fails(3, "", "backup", "restore", "--task", "t1", "--file", "state_nope.json")
	w.Fails(3, "no such task", "backup", "list", "--task", "nope")
	// The daemon replays the journal past the restored backup.
	srv = w.serve()
	clitest.StateWhere(t, x, "t1", func(st workspace.State) bool { return st.Status == "executing" && st.JournalSeq == 2 })
	srv.Stop()
	var js json.RawMessage
	clitest.Decode(t, w.Ok("state", "show", "--task", "t1", "--json"), &js)
	_ = atomicfile.Marshal
}

// The daemon's soft memory limit stays at its default for a small tree
// and grows to twice the live heap of a large one, so that the collector
// does not run over and over in an idle daemon.
func TestMemLimitFor(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int64
	}{
		{0, daemonMemLimit},
		{10 << 20, daemonMemLimit},
		{24 << 20, daemonMemLimit},
		{40 << 20, 80 << 20},
		{100 << 20, 200 << 20},
	} {
		if got := memLimitFor(daemonMemLimit, tt.live); got != tt.want {
			t.Errorf("memLimitFor(%d MiB) = %d MiB, want %d MiB", tt.live>>20, got>>20, tt.want>>20)
		}
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	fitMemoryLimit(daemonMemLimit)
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit = %d with GOMEMLIMIT set, want it left alone", got)
	}
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(1 << 20)
	fitMemoryLimit(daemonMemLimit)
	if got := debug.SetMemoryLimit(-1); got < daemonMemLimit {
		t.Errorf("memory limit = %d after fitMemoryLimit, want at least %d", got, daemonMemLimit)
	}
}

// tuneGC raises the GC target of a daemon process, unless GOGC says how,
// and sets no memory limit: the start-up scan runs without one (a limit
// below its transient heap made the collector run over and over), and
// fitMemoryLimit sets it once the daemon is ready.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	tuneGC(daemonGCPercent)
	if got := debug.SetGCPercent(100); got != daemonGCPercent {
		t.Errorf("GC percent = %d, want %d", got, daemonGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit = %d before the start-up scan, want none: a limit throttles the scan", got)
	}
	fitMemoryLimit(daemonMemLimit)
	if got := debug.SetMemoryLimit(-1); got < daemonMemLimit {
		t.Errorf("memory limit = %d once ready, want at least %d", got, daemonMemLimit)
	}

	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(1 << 30)
	tuneGC(daemonGCPercent)
	if got := debug.SetGCPercent(50); got != 50 {
		t.Errorf("GC percent = %d with GOGC=50 set, want it left alone", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit = %d with GOMEMLIMIT set, want it left alone", got)
	}
}
