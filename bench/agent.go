package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/postgres"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// AgentMain is the Go agent process. On a directory it drops done
// markers with the same os calls any Go program makes to write a file
// atomically: the marker is written to a temporary dot-file in the task
// directory, fsynced and closed, then renamed into place, and the
// directory is fsynced. On a postgres:// root it inserts each marker row
// with a connection of its own (a statement of docs/PROTOCOL.md, its own
// committed transaction); on a sqlite: root, through a store of its own
// (DropNamedMarker: one transaction, durable when it returns).
//
// It prints "ready" once the workspace is open, then reads commands from
// stdin, one a line: "now <subtask>" writes and drops that marker;
// "<subtask>" writes its temporary file (prepares its row) and holds it;
// "sync" answers "prepared"; "go" drops every held marker back to back;
// "report" prints, for each marker dropped since the last report,
// "<subtask> <unix nanoseconds just before its rename (its insert)>". The
// stamps wait for "report" so that the harness reads them after a round,
// not during it.
func AgentMain(root, task, name string, in io.Reader, out io.Writer) error {
	var (
		d   dropper
		err error
	)
	switch {
	case postgres.IsURL(root):
		d, err = newPGDropper(root, task, name)
	case sqlite.IsURL(root):
		d, err = newSQLiteDropper(root, task, name)
	default:
		d, err = newFileDropper(root, task, name)
	}
	if err != nil {
		return err
	}
	defer d.close()
	return agentLoop(d, in, out)
}

// agentDropTimeout bounds one marker's drop by an agent of a database
// store: past it the agent fails and exits, and the harness reports it.
const agentDropTimeout = 2 * time.Minute

// dropper is how an agent process drops a done marker: prepare does
// everything but the step that makes it visible, drop does that step.
type dropper interface {
	prepare(sub string) (held any, err error)
	drop(held any) error
	close()
}

// fileDropper drops marker files in a task directory.
type fileDropper struct {
	ws   *files.Store
	dir  string
	name string
}

func newFileDropper(root, task, name string) (*fileDropper, error) {
	ws, err := files.Open(root, workspace.Options{})
	if err != nil {
		return nil, err
	}
	return &fileDropper{ws: ws, dir: filepath.Join(ws.Dir(), "tasks", task), name: name}, nil
}

func (f *fileDropper) close() { f.ws.Close() }

// fileHeld is a marker written to its temporary file.
type fileHeld struct{ sub, tmp string }

func (f *fileDropper) prepare(sub string) (any, error) {
	now := time.Now().UTC()
	m := workspace.Marker{AgentID: f.name, SubtaskID: sub, OutputFile: "outputs/" + sub + ".json", Status: "completed", CompletedAt: &now}
	data, err := atomicfile.Marshal(m)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(f.dir, ".tmp-"+f.name+"-"+sub)
	fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return nil, err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return nil, err
	}
	return fileHeld{sub, tmp}, fh.Close()
}

func (f *fileDropper) drop(held any) error {
	h := held.(fileHeld)
	if err := os.Rename(h.tmp, filepath.Join(f.dir, workspace.DonePrefix+f.name+"."+h.sub)); err != nil {
		return err
	}
	d, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// agentLoop reads the harness's commands and drops markers with d.
func agentLoop(d dropper, in io.Reader, out io.Writer) error {
	bw := bufio.NewWriter(out)
	fmt.Fprintln(bw, "ready")
	if err := bw.Flush(); err != nil {
		return err
	}
	var stamps []byte
	drop := func(sub string, h any) error {
		t0 := time.Now()
		if err := d.drop(h); err != nil {
			return err
		}
		// Kept until "report": the harness reads it after the round.
		stamps = fmt.Appendf(stamps, "%s %d\n", sub, t0.UnixNano())
		return nil
	}
	sc := bufio.NewScanner(in)
	type heldMarker struct {
		sub  string
		held any
	}
	var held []heldMarker
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case line == "sync":
			fmt.Fprintln(bw, "prepared")
			if err := bw.Flush(); err != nil {
				return err
			}
		case line == "report":
			bw.Write(stamps)
			stamps = stamps[:0]
			if err := bw.Flush(); err != nil {
				return err
			}
		case line == "go":
			for _, h := range held {
				if err := drop(h.sub, h.held); err != nil {
					return err
				}
			}
			held = nil
		case strings.HasPrefix(line, "now "):
			sub := strings.TrimPrefix(line, "now ")
			h, err := d.prepare(sub)
			if err != nil {
				return err
			}
			if err := drop(sub, h); err != nil {
				return err
			}
		default:
			h, err := d.prepare(line)
			if err != nil {
				return err
			}
			held = append(held, heldMarker{line, h})
		}
	}
	return sc.Err()
}

// agent is the harness's side of one agent process (Go or Python: both
// speak AgentMain's protocol).
type agent struct {
	name    string
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan string
	closing atomic.Bool
}

// startAgent starts argv as an agent process named name and waits for its
// "ready"; if it exits before close, cm's waits fail at once rather than
// at their deadline.
func startAgent(argv []string, cm *commits, name string) (*agent, error) {
	a, err := spawnAgent(argv, cm, name)
	if err != nil {
		return nil, err
	}
	if err := a.ready(); err != nil {
		return nil, err
	}
	return a, nil
}

// spawnAgent starts argv as an agent process named name without waiting
// for it to say ready: see startAgent.
func spawnAgent(argv []string, cm *commits, name string) (*agent, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start agent %s: %w", name, err)
	}
	a := &agent{name: name, cmd: cmd, in: in, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(outp)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
		if !a.closing.Load() {
			cm.abort(fmt.Errorf("bench: agent process %s exited early (what it said is above, on stderr)", name))
		}
	}()
	return a, nil
}

// ready waits for the agent's first line, "ready"; on any other it closes
// the agent and says what it said.
func (a *agent) ready() error {
	if line, ok := <-a.lines; !ok || line != "ready" {
		a.close()
		return fmt.Errorf("bench: agent %s did not start (said %q)", a.name, line)
	}
	return nil
}

// stamp reads one "<subtask> <unixnano>" line.
func (a *agent) stamp() (string, time.Time, error) {
	line, ok := <-a.lines
	if !ok {
		return "", time.Time{}, fmt.Errorf("bench: agent %s exited early", a.name)
	}
	sub, ns, _ := strings.Cut(line, " ")
	v, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("bench: agent %s said %q", a.name, line)
	}
	return sub, time.Unix(0, v), nil
}

// report asks the agent for the stamps of the markers it dropped since it
// was last asked, and reads them.
func (a *agent) report(n int) ([]string, []time.Time, error) {
	if _, err := io.WriteString(a.in, "report\n"); err != nil {
		return nil, nil, err
	}
	subs, ts := make([]string, 0, n), make([]time.Time, 0, n)
	for range n {
		sub, t0, err := a.stamp()
		if err != nil {
			return nil, nil, err
		}
		subs, ts = append(subs, sub), append(ts, t0)
	}
	return subs, ts, nil
}

// close ends the agent's input and waits for it to exit, reading what it
// still says (Wait must come after the last read of its output).
func (a *agent) close() {
	a.closing.Store(true)
	a.in.Close()
	for range a.lines {
	}
	_ = a.cmd.Wait()
}

// closeAll closes every agent of as that was started.
func closeAll(as []*agent) {
	for _, a := range as {
		if a != nil {
			a.close()
		}
	}
}
