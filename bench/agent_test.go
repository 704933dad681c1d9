package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// TestQuietStdin reads lines written into a pipe in pieces, with pauses
// that make the reader wait for data, and then the end of the input.
func TestQuietStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := []string{"st_1", "now st_2", strings.Repeat("x", 100_000), "go"}
	go func() {
		defer w.Close()
		all := strings.Join(want, "\n") + "\n"
		for len(all) > 0 {
			n := min(len(all), 7000)
			if _, err := io.WriteString(w, all[:n]); err != nil {
				return
			}
			all = all[n:]
			time.Sleep(time.Millisecond)
		}
	}()
	sc := bufio.NewScanner(quietStdin(r))
	sc.Buffer(nil, 1<<20)
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read %d lines %.40q…, want %d lines %.40q…", len(got), got, len(want), want)
	}
	// Something that is not a pipe is read as it is.
	sr := strings.NewReader("a\n")
	if quietStdin(sr) != io.Reader(sr) {
		t.Errorf("quietStdin wrapped a strings.Reader")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "commands"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if quietStdin(f) != io.Reader(f) {
		t.Errorf("quietStdin wrapped a regular file")
	}
}

// TestDropMarker renames the temporary file into place and fails, naming
// the file, when there is nothing to rename or no directory.
func TestDropMarker(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".tmp-a"), []byte(`{"agent_id":"a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dropMarker(dir, ".tmp-a", ".done.a"); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".done.a")); err != nil || string(b) != `{"agent_id":"a"}` {
		t.Errorf(".done.a = %q, %v; want the temporary file's content", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".tmp-a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file still there: %v", err)
	}
	err := dropMarker(dir, ".tmp-a", ".done.b")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), ".tmp-a") {
		t.Errorf("drop of a missing file: %v, want not-exist naming .tmp-a", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".done.b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed drop left .done.b: %v", err)
	}
	if err := dropMarker(filepath.Join(dir, "missing"), ".tmp-a", ".done.a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("drop into a missing directory: %v, want not-exist", err)
	}
}

// TestAgentMainReports drives an agent through pipes, as the harness
// does: its markers are dropped valid, and their stamps come when asked,
// in drop order, each taken around its drop.
func TestAgentMainReports(t *testing.T) {
	root := t.TempDir()
	ws, err := workspace.Init(root, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	taskDir := filepath.Join(root, "tasks", "t1")
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := AgentMain(root, "t1", "agent_1", inR, outW)
		outW.Close()
		inR.Close()
		done <- err
	}()
	lines := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("agent said nothing more (%v)", lines.Err())
		}
		return lines.Text()
	}
	if l := next(); l != "ready" {
		t.Fatalf("first line %q, want ready", l)
	}
	before := time.Now()
	io.WriteString(inW, "now st_1\nst_2\nst_3\nsync\n")
	if l := next(); l != "prepared" {
		t.Fatalf("after sync: %q, want prepared (no stamp before report)", l)
	}
	io.WriteString(inW, "go\nreport\n")
	var last time.Time
	for _, want := range []string{"st_1", "st_2", "st_3"} {
		sub, ns, _ := strings.Cut(next(), " ")
		v, err := strconv.ParseInt(ns, 10, 64)
		if sub != want || err != nil {
			t.Fatalf("stamp %q %q, want %s and a number", sub, ns, want)
		}
		at := time.Unix(0, v)
		if at.Before(before) || at.After(time.Now()) || at.Before(last) {
			t.Errorf("%s stamped %v: not within the drops (after %v, %v)", sub, at, before, last)
		}
		last = at
		b, err := os.ReadFile(filepath.Join(taskDir, workspace.DonePrefix+"agent_1."+sub))
		if err != nil {
			t.Fatalf("marker of %s: %v", sub, err)
		}
		var m workspace.Marker
		if err := json.Unmarshal(b, &m); err != nil || m.AgentID != "agent_1" || m.SubtaskID != sub {
			t.Errorf("marker of %s = %s (%v)", sub, b, err)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("agent: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(taskDir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestAgentExitAbortsWait: an agent process that exits early makes the
// harness's wait fail at once, naming it, not at its deadline.
func TestAgentExitAbortsWait(t *testing.T) {
	cm := newCommits()
	opt := Options{AgentCmd: []string{"sh", "-c", "echo ready"}}
	a, err := startAgent(opt, cm, t.TempDir(), "t1", "agent_7")
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	errc := make(chan error, 1)
	go func() { errc <- cm.wait([]string{"t1/st_1"}, time.Now().Add(time.Hour)) }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "agent_7 exited early") {
			t.Errorf("wait: %v, want the agent named as exited early", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("wait still blocked a minute after the agent exited")
	}
	// An agent closed by the harness does not abort the waits that
	// follow (this one stays until its input ends).
	cm2 := newCommits()
	opt.AgentCmd = []string{"sh", "-c", "echo ready; cat >/dev/null"}
	b, err := startAgent(opt, cm2, t.TempDir(), "t1", "agent_8")
	if err != nil {
		t.Fatal(err)
	}
	b.close()
	cm2.hook("t1", workspace.State{Status: "executing"})
	if err := cm2.wait([]string{"t1/"}, time.Now().Add(time.Minute)); err != nil {
		t.Errorf("wait after a clean close: %v", err)
	}
}
