// Package clitest runs workspaced as a user does, for the tests of
// cmd/workspaced and the process tests of e2e/: a WS runs commands against
// one workspace root, in the test's own process through the command's run
// where the cmd tests registered it (InProcess) and that is the same
// thing, else by starting the binary, which testbin builds once per
// `go test` run on first use.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/testbin"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/workspace/sqlite"
)

// Main runs the tests (with a shared PostgreSQL cluster when one is used).
// With -v it says how many times the binary was started and how many
// commands ran in-process. Call it from TestMain:
// os.Exit(clitest.Main(m)).
func Main(m *testing.M) int {
	code := pgtest.Main(m)
	if testing.Verbose() {
		fmt.Printf("clitest: the binary started %d times, %d commands in-process\n", starts.Load(), inProcessRuns.Load())
	}
	return code
}

// Bin is the path of the binary, built on first use; it panics when the
// binary cannot be built.
func Bin() string {
	p, err := testbin.Path()
	if err != nil {
		panic(err)
	}
	return p
}

// Command is exec.Command of the binary with args, counted as one start.
func Command(args ...string) *exec.Cmd {
	starts.Add(1)
	return exec.Command(Bin(), args...)
}

// CommandContext is exec.CommandContext of the binary with args,
// counted as one start.
func CommandContext(ctx context.Context, args ...string) *exec.Cmd {
	starts.Add(1)
	return exec.CommandContext(ctx, Bin(), args...)
}

// RunFunc is a command's whole program as its main calls it: the
// arguments after the program's name, the streams, and the exit code.
type RunFunc func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int

var (
	inProcess     RunFunc
	starts        atomic.Int64 // processes of the binary started
	inProcessRuns atomic.Int64 // commands run through inProcess
)

// steering are the variables that steer workspaced.
var steering = []string{"WORKSPACE_ROOT", "WORKSPACE_AGENT", "WORKSPACE_TOKEN"}

// InProcess makes a WS run its commands through run, in the test's own
// process, wherever that is the same as starting the binary: see
// WS.InProcess. It removes the variables that steer workspaced from the
// test process's environment, as CleanEnv does from a child's. Call it
// from TestMain, before the tests run.
func InProcess(run RunFunc) {
	inProcess = run
	for _, v := range steering {
		_ = os.Unsetenv(v)
	}
}

// CleanEnv is the test process's environment without the variables that
// steer workspaced.
func CleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if slices.ContainsFunc(steering, func(v string) bool { return strings.HasPrefix(kv, v+"=") }) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Result is what one run of the binary gave.
type Result struct {
	Code           int
	Stdout, Stderr string
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Exec runs the binary in dir with env and optional stdin; it is safe to
// call from many goroutines. Only a failure to run at all is an error.
func Exec(dir string, env []string, stdin string, args ...string) (Result, error) {
	cmd := Command(args...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("run workspaced %q: %w", args, err)
	}
	return r, nil
}

// WS is one workspace root and the environment its commands run in
// (WORKSPACE_ROOT set to Root).
type WS struct {
	T    testing.TB
	Root string // the root as commands are given it: a directory, sqlite:PATH or postgres://
	Dir  string // the working directory commands run in
	Env  []string

	// Process makes every command start the binary, for a test of the
	// process itself, even where it could run in-process.
	Process bool
}

// New makes a WS for root, runs `workspaced init` and returns it.
func New(t testing.TB, root string) *WS {
	t.Helper()
	w := At(t, root)
	w.Ok("init")
	return w
}

// At makes a WS for root as it is, without `workspaced init`, its
// commands run in a fresh directory. With root "" it is a WS for the
// commands that need no workspace (help, version, completion), and no
// WORKSPACE_ROOT is set.
func At(t testing.TB, root string) *WS {
	w := &WS{T: t, Root: root, Dir: t.TempDir(), Env: CleanEnv()}
	if root != "" {
		w.Env = append(w.Env, "WORKSPACE_ROOT="+root)
	}
	return w
}

// NewSQLite is New on a fresh sqlite: root; DB is the database's path.
func NewSQLite(t testing.TB) (w *WS, db string) {
	t.Helper()
	db = filepath.Join(t.TempDir(), "agents.db")
	return New(t, "sqlite:"+db), db
}

// RunIn runs the command args with stdin: in-process where InProcess
// allows it, else by starting the binary.
func (w *WS) RunIn(stdin string, args ...string) Result {
	w.T.Helper()
	r, err := w.Exec(stdin, args...)
	if err != nil {
		w.T.Fatal(err)
	}
	return r
}

// Exec is RunIn for any goroutine: only a failure to run at all is an
// error, and it does not touch w.T.
func (w *WS) Exec(stdin string, args ...string) (Result, error) {
	if root, ok := w.InProcess(args); ok {
		return runInProcess(root, stdin, args), nil
	}
	return Exec(w.Dir, w.Env, stdin, args...)
}

// Run runs the command args, as RunIn does.
func (w *WS) Run(args ...string) Result {
	w.T.Helper()
	return w.RunIn("", args...)
}

// OkIn runs the binary with stdin and fails the test unless it exits 0;
// unlike Ok it lets stderr speak (a warning, a hint).
func (w *WS) OkIn(stdin string, args ...string) Result {
	w.T.Helper()
	r := w.RunIn(stdin, args...)
	if r.Code != 0 {
		w.T.Fatalf("workspaced %q: want exit 0, got %v", args, r)
	}
	return r
}

// Ok runs the binary and fails the test unless it exits 0 with nothing
// on stderr; it returns stdout.
func (w *WS) Ok(args ...string) string {
	w.T.Helper()
	r := w.Run(args...)
	if r.Code != 0 || r.Stderr != "" {
		w.T.Fatalf("workspaced %q: want exit 0 and empty stderr, got %v", args, r)
	}
	return r.Stdout
}

// Fails runs the binary and checks the exit code and that stderr is one
// "workspaced: ..." error naming want, with stdout empty.
func (w *WS) Fails(code int, want string, args ...string) Result {
	w.T.Helper()
	r := w.Run(args...)
	CheckFailure(w.T, r, code, want, args)
	return r
}

// CheckFailure fails t unless r, the run of args, exited code with stdout
// empty and stderr one "workspaced: ..." error naming want.
func CheckFailure(t testing.TB, r Result, code int, want string, args []string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("workspaced %q: want exit %d, got %v", args, code, r)
	}
	if !strings.HasPrefix(r.Stderr, "workspaced: ") {
		t.Fatalf("workspaced %q: stderr should start with \"workspaced: \": %v", args, r)
	}
	if !strings.Contains(r.Stderr, want) {
		t.Fatalf("workspaced %q: stderr should contain %q: %v", args, want, r)
	}
	if r.Stdout != "" {
		t.Fatalf("workspaced %q: stdout should be empty on failure: %v", args, r)
	}
}

// Task creates a task with the given id.
func (w *WS) Task(id string) {
	w.T.Helper()
	if got := w.Ok("task", "create", "--id", id, "--description", "test task "+id); got != id+"\n" {
		w.T.Fatalf("task create printed %q, want %q", got, id+"\n")
	}
}

// Decode parses JSON output into v, failing the test on error.
func Decode(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
}

// Log is an io.Writer safe for a process's stdout and stderr at once.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Daemon is a `workspaced serve` process started by Serve or Start.
type Daemon struct {
	Cmd  *exec.Cmd
	Log  *Log // its stdout and stderr
	t    testing.TB
	done chan struct{}
}

// Serve starts `workspaced --root ROOT serve --log-level warn ARGS…` and,
// for a directory or sqlite: root, returns once it holds the workspace's
// lock (for a postgres:// root at once). The test's cleanup kills it.
func (w *WS) Serve(args ...string) *Daemon {
	w.T.Helper()
	d := w.Start(args...)
	w.AwaitLead(d)
	return d
}

// AwaitLead returns once d, a daemon of w's root, holds the workspace's
// lock (for a postgres:// root at once), and fails the test if d exits
// first or does not within 60 s.
func (w *WS) AwaitLead(d *Daemon) {
	w.T.Helper()
	lock := LockPath(w.Root)
	if lock == "" {
		return
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if held, _, _ := locking.Held(lock); held {
			return
		}
		select {
		case <-d.done:
			w.T.Fatalf("serve exited before leading: %s", d.Log)
		default:
		}
		if time.Now().After(deadline) {
			w.T.Fatalf("serve does not hold %s after 60 s: %s", lock, d.Log)
		}
	}
}

// Start is Serve without the wait: it returns as soon as the process has
// started, so that a test may kill it at any point of its start-up.
func (w *WS) Start(args ...string) *Daemon {
	w.T.Helper()
	cmd := Command(append([]string{"--root", w.Root, "serve", "--log-level", "warn"}, args...)...)
	cmd.Dir, cmd.Env = w.Dir, CleanEnv()
	return w.StartCmd(cmd)
}

// StartCmd starts cmd, a daemon of w's root however it is launched (in a
// namespace of its own, say), as a Daemon: its output goes to the
// Daemon's Log and the test's cleanup kills it.
func (w *WS) StartCmd(cmd *exec.Cmd) *Daemon {
	w.T.Helper()
	d := &Daemon{Cmd: cmd, Log: &Log{}, t: w.T, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = d.Log, d.Log
	if err := cmd.Start(); err != nil {
		w.T.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(d.done) }()
	w.T.Cleanup(d.Kill)
	return d
}

// Kill SIGKILLs the daemon and waits until it is gone.
func (d *Daemon) Kill() {
	_ = d.Cmd.Process.Kill()
	<-d.done
}

// Stop sends SIGTERM and fails the test unless the daemon exits 0 within
// two minutes. A clean stop first settles the journal: one syncfs, then
// every taken marker unlinked, which after a burst of 20,000 markers on a
// disk that discards each freed block at once, under -race on a loaded
// machine, has alone taken over 30 s.
func (d *Daemon) Stop() {
	d.t.Helper()
	_ = d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(2 * time.Minute):
		d.t.Fatal("daemon did not stop within 2 minutes of SIGTERM")
	}
	if code := d.Cmd.ProcessState.ExitCode(); code != 0 {
		d.t.Fatalf("daemon exited %d after SIGTERM; log:\n%s", code, d.Log)
	}
}

// Running reports whether the daemon's process has not exited yet.
func (d *Daemon) Running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.Cmd.Process.Pid }

// Done is closed once the daemon's process has exited.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// LockPath is the file whose flock the daemon of root holds: PATH.lock
// for sqlite:PATH (a relative PATH taken from the test's directory), .workspaced.lock in a directory, "" for PostgreSQL.
func LockPath(root string) string {
	switch {
	case strings.HasPrefix(root, "postgres://"), strings.HasPrefix(root, "postgresql://"):
		return ""
	case sqlite.IsURL(root):
		p, err := sqlite.ParsePath(root)
		if err != nil {
			return ""
		}
		return p + ".lock"
	default:
		return filepath.Join(root, ".workspaced.lock")
	}
}
