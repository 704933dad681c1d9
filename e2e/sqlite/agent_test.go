package sqlite_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// An agent process here is `workspaced mcp` on stdio, driven by a
// goroutine of the test as an LLM runtime drives it: for each subtask of
// its share, claim_subtask, waited for until the daemon decides it (the
// tool waits while a daemon serves; while none does the driver waits for
// the verdict itself, as an agent polling get_task_state would), then
// signal_done with the output. A marker is reported written once its
// tool call answers with the marker's name.

// mcpAgent is one `workspaced mcp` process and the goroutine driving it.
type mcpAgent struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	next int
	log  clitest.Log // stderr
	done chan struct{}
	stop chan struct{} // closed by kill
	once sync.Once
	err  error // the driver's, nil when the process was killed or its share finished
}

// startAgent starts agent name on the subtasks subs of task and drives
// it; every marker it reports is noted in w.
func startAgent(t *testing.T, ws *clitest.WS, s *sqlite.Store, task, name string, subs []string, w *written) *mcpAgent {
	t.Helper()
	cmd := clitest.Command("mcp", "--task", task, "--agent", name)
	cmd.Dir, cmd.Env = ws.Dir, ws.Env
	a := &mcpAgent{cmd: cmd, done: make(chan struct{}), stop: make(chan struct{})}
	cmd.Stderr = &a.log
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.in, a.out = in, bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(a.done)
		a.err = a.drive(s, task, subs, w)
		in.Close()
		_, _ = io.Copy(io.Discard, a.out)
		if err := cmd.Wait(); err != nil && a.err == nil && !killed(cmd) {
			a.err = fmt.Errorf("mcp exited: %w", err)
		}
	}()
	t.Cleanup(a.kill)
	return a
}

func killed(cmd *exec.Cmd) bool {
	return cmd.ProcessState != nil && strings.Contains(cmd.ProcessState.String(), "killed")
}

// drive runs the agent's share; a process gone (killed) ends it without
// an error.
func (a *mcpAgent) drive(s *sqlite.Store, task string, subs []string, w *written) error {
	if _, _, err := a.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "crash-test", "version": "1"}}); err != nil {
		return gone(err)
	}
	if err := a.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return gone(err)
	}
	for _, sub := range subs {
		r, err := a.tool("claim_subtask", map[string]any{"subtask_id": sub})
		if err != nil {
			return gone(err)
		}
		if err := w.note("claim", task, sub, r.Marker); err != nil {
			return err
		}
		if r.Verdict == "queued" || r.Verdict == "undecided" {
			if err := decided(s, task, r.Marker, a.stop); err != nil {
				return err
			}
		}
		r, err = a.tool("signal_done", map[string]any{"subtask_id": sub, "output": map[string]any{"summary": "done " + sub}})
		if errors.Is(err, errFinal) {
			continue // its done was applied before this process's predecessor was killed
		}
		if err != nil {
			return gone(err)
		}
		if err := w.note("done", task, sub, r.Marker); err != nil {
			return err
		}
	}
	return nil
}

var (
	// errGone says the process went away mid-call.
	errGone = errors.New("the mcp process is gone")
	// errFinal says signal_done found the subtask finished already.
	errFinal = errors.New("the subtask is finished")
)

func gone(err error) error {
	if err == errGone {
		return nil
	}
	return err
}

// markerReply is the structured answer of a tool that dropped a marker.
type markerReply struct {
	Marker  string `json:"marker"`
	Verdict string `json:"verdict"`
}

// tool calls a tool that drops a marker and returns its reply; a refusal
// (isError with a marker) is a reply too.
func (a *mcpAgent) tool(name string, args any) (markerReply, error) {
	res, _, err := a.call("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return markerReply{}, err
	}
	var r struct {
		Content           []struct{ Text string } `json:"content"`
		StructuredContent markerReply             `json:"structuredContent"`
		IsError           bool                    `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return markerReply{}, fmt.Errorf("%s: %w: %s", name, err, res)
	}
	if r.StructuredContent.Marker == "" && r.IsError && len(r.Content) == 1 && strings.Contains(r.Content[0].Text, "its output is final") {
		return markerReply{}, errFinal
	}
	if r.StructuredContent.Marker == "" {
		return markerReply{}, fmt.Errorf("%s dropped no marker: %s", name, res)
	}
	r.StructuredContent.Marker = path.Base(r.StructuredContent.Marker)
	return r.StructuredContent, nil
}

// call sends one request and reads lines until its answer.
func (a *mcpAgent) call(method string, params any) (json.RawMessage, int, error) {
	a.next++
	id := a.next
	if err := a.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, id, err
	}
	for {
		line, err := a.out.ReadBytes('\n')
		if err != nil {
			return nil, id, errGone
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, id, fmt.Errorf("mcp printed %q: %w", line, err)
		}
		if m.ID == nil || *m.ID != id {
			continue // a notification
		}
		if m.Error != nil {
			return nil, id, fmt.Errorf("%s: %s", method, m.Error)
		}
		return m.Result, id, nil
	}
}

func (a *mcpAgent) send(v any) error {
	b, _ := json.Marshal(v)
	if _, err := a.in.Write(append(b, '\n')); err != nil {
		return errGone
	}
	return nil
}

// decided waits until the daemon has decided the marker, however long no
// daemon serves, or until stop is closed.
func decided(s *sqlite.Store, task, name string, stop <-chan struct{}) error {
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, where, err := s.ReadVerdict(task, name, 0)
		if err != nil {
			return err
		}
		if where == workspace.MarkerDecided {
			return nil
		}
		select {
		case <-stop:
			return nil
		default:
		}
	}
	return fmt.Errorf("marker %s of task %s not decided within 5 minutes", name, task)
}

// kill SIGKILLs the process and waits until its driver has ended.
func (a *mcpAgent) kill() {
	a.once.Do(func() { close(a.stop) })
	_ = a.cmd.Process.Kill()
	<-a.done
}

func (a *mcpAgent) running() bool {
	select {
	case <-a.done:
		return false
	default:
		return true
	}
}

// written records what the agents reported: the markers they wrote, by
// name, and the subtasks they have finished (the done written), each as
// TASK/SUBTASK.
type written struct {
	mu       sync.Mutex
	names    map[string]string // marker name → task/subtask
	finished map[string]bool   // task/subtask → its done written
}

func newWritten() *written {
	return &written{names: map[string]string{}, finished: map[string]bool{}}
}

func (w *written) note(kind, task, sub, name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, dup := w.names[name]; dup {
		return fmt.Errorf("marker %s reported twice (%s and %s/%s)", name, prev, task, sub)
	}
	w.names[name] = task + "/" + sub
	if kind == "done" {
		w.finished[task+"/"+sub] = true
	}
	return nil
}

// left is the subtasks of task without their done written.
func (w *written) left(task string, subs []string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range subs {
		if !w.finished[task+"/"+s] {
			out = append(out, s)
		}
	}
	return out
}

// snapshot copies the names written so far.
func (w *written) snapshot() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.names))
	for k, v := range w.names {
		out[k] = v
	}
	return out
}
