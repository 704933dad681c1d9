package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

const locksUsage = `workspaced locks — who holds which lock.

Usage:
  workspaced locks [--all] [--json]

Lists the lock files of the root (every *.lock in a .locks/ directory, and
.workspaced.lock, the daemon's): whether each is held right now and the
holder record it carries (pid, agent, since). A record of a lock that is no
longer held describes its last holder. Without --all, only held locks are
listed. On a postgres:// or sqlite: root the locks are those ever taken,
by name, each with its latest holder; the daemon's comes first ("lease"
on PostgreSQL; "daemon" on sqlite:PATH, the flock of PATH.lock).

Examples:
  workspaced locks
  workspaced locks --all
  workspaced locks --json | jq -r '.[] | select(.held) | .path'

Exit codes: 0 ok, 1 failure, 2 usage, 3 no workspace.
`

// lockInfo is one line of `locks`.
type lockInfo struct {
	Path   string                `json:"path"`
	Held   bool                  `json:"held"`
	Holder *workspace.LockHolder `json:"holder"`
}

func cmdLocks(ctx context.Context, e *env, args []string) error {
	fs := newFlags("locks")
	all := fs.Bool("all", false, "also list the locks nobody holds now")
	asJSON := fs.Bool("json", false, "print a JSON array (every lock, held or not)")
	if err := parse(e, fs, locksUsage, args); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	held, err := w.Locks(ctx)
	if err != nil {
		return err
	}
	locks := make([]lockInfo, 0, len(held))
	for _, l := range held {
		locks = append(locks, lockInfo{Path: l.Name, Held: l.Held, Holder: l.Holder})
	}
	if *asJSON {
		return printJSON(e.stdout, locks)
	}
	var rows [][]string
	for _, l := range locks {
		if !l.Held && !*all {
			continue
		}
		state, holder := "free", "-"
		if l.Held {
			state = "held"
		}
		if l.Holder != nil {
			holder = "pid " + strconv.Itoa(l.Holder.PID)
			if l.Holder.Agent != "" {
				holder += " agent " + l.Holder.Agent
			}
			if !l.Holder.Since.IsZero() {
				holder += " since " + shortTime(l.Holder.Since)
				if l.Held {
					holder += " (" + vocab.Duration(time.Since(l.Holder.Since)) + ")"
				}
			}
			if !l.Held {
				holder = "last: " + holder
			}
		}
		rows = append(rows, []string{l.Path, state, holder})
	}
	if len(rows) == 0 {
		if *all {
			fmt.Fprintln(e.stdout, "no lock files")
		} else {
			fmt.Fprintf(e.stdout, "no lock is held (%d lock files; --all lists them)\n", len(locks))
		}
		return nil
	}
	table(e.stdout, []string{"LOCK", "STATE", "HOLDER"}, rows)
	return nil
}

const lockUsage = `workspaced lock — run a command under a workspace lock, like flock(1).

Usage:
  workspaced lock (--task T | --thread X) --name NAME [--agent A] [--timeout DUR] -- CMD [ARG...]

Takes the task's named lock tasks/<task>/.locks/<NAME>.lock (the same flock
any other process or language can take), runs CMD with stdin, stdout and
stderr passed through, releases the lock and exits with CMD's exit code.
The wait is bounded by --timeout (at most lock_timeout of workspace.json,
30s by default); a timeout exits 4 naming the holder. CMD gets
WORKSPACE_ROOT set to the root. If workspaced is killed, the kernel releases
the lock, and CMD is killed with it so it never runs on unlocked.

On a postgres:// root the lock is the task's named advisory lock, held by
this process's connection while CMD runs (the same lock the store's other
users take), its holder recorded for 'workspaced locks'. On a sqlite:PATH
root it is the flock of PATH.locks/tasks/<task>/.locks/<NAME>.lock, its
holder recorded in the locks table; CMD gets WORKSPACE_ROOT=sqlite:PATH.

Examples:
  workspaced lock --task t1 --name counter -- sh -c 'n=$(cat n); echo $((n+1)) > n'
  workspaced lock --task t1 --name deploy --timeout 5s -- ./deploy.sh
  workspaced lock --task t1 --name k -- sh -c 'v=$(workspaced env get --task t1 --key k); ...'

Exit codes: CMD's exit code; 1 failure, 2 usage, 3 task not found, 4 lock
timeout, 126 CMD cannot be run, 127 CMD not found, 128+N CMD killed by signal N.
`

func cmdLock(ctx context.Context, e *env, args []string) error {
	fs := newFlags("lock")
	task := fs.String("task", "", "task `ID`")
	thread := fs.String("thread", "", "thread `ID` (resolves its task)")
	name := fs.String("name", "", "lock `NAME` (an id)")
	agent := fs.String("agent", "", "holder `AGENT` for the record (default $WORKSPACE_AGENT, else \"cli\")")
	timeout := fs.Duration("timeout", 0, "give up after `DUR` (default and upper bound: lock_timeout)")
	if err := parseArgs(e, fs, lockUsage, args); err != nil {
		return err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageHint("lock", "missing the command: workspaced lock --task T --name NAME -- CMD [ARG...]")
	}
	if err := need(fs, "name"); err != nil {
		return err
	}
	if flagSet(fs, "timeout") && *timeout <= 0 {
		return usageHint("lock", "--timeout must be positive")
	}
	if service.KindOf(e.root) != service.Files {
		return lockStore(ctx, e, *task, *thread, *name, agentOr(*agent, "cli"), *timeout, argv)
	}
	// On files the lock is a flock a child process runs under.
	w, id, err := e.openTaskTree(ctx, "lock", *task, *thread)
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err := w.GetTask(ctx, id); err != nil {
		return err
	}
	lctx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	rel := path.Join(workspace.TaskDir(id), ".locks", *name+".lock")
	l, err := w.LockNamed(lctx, id, *name, agentOr(*agent, "cli"))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			h, _ := locking.ReadHolder(filepath.Join(w.Dir(), filepath.FromSlash(rel)))
			return &workspace.Error{Kind: workspace.ErrLocked, Op: "lock " + rel,
				Msg:  fmt.Sprintf("held by %s: gave up after %s", h, vocab.Duration(*timeout)),
				Hint: "another process holds it; see 'workspaced locks', or wait longer with --timeout"}
		}
		return err
	}
	defer l.Release()
	return runLocked(ctx, e, w.Dir(), argv)
}

// lockStore is lock on a store that keeps its own locks (PostgreSQL: a
// session advisory lock, its holder recorded): the lock is held by this
// process's connection while CMD runs, and given back when CMD ends.
func lockStore(ctx context.Context, e *env, task, thread, name, agent string, timeout time.Duration, argv []string) error {
	st, id, err := e.openTask(ctx, "lock", task, thread)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.GetTask(ctx, id); err != nil {
		return err
	}
	lctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	l, err := st.LockTaskNamed(lctx, id, name, agent)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return &workspace.Error{Kind: workspace.ErrLocked, Op: "lock " + name + " of task " + id,
				Msg:  fmt.Sprintf("held by %s: gave up after %s", holderOf(ctx, st, id, name), vocab.Duration(timeout)),
				Hint: "another process holds it; see 'workspaced locks', or wait longer with --timeout"}
		}
		return err
	}
	defer l.Release()
	return runLocked(ctx, e, e.root, argv)
}

// holderOf is the recorded holder of a task's lock name, held now, for a
// message ("an unknown holder" when the store cannot say).
func holderOf(ctx context.Context, st workspace.Store, id, name string) *locking.Holder {
	locks, _ := st.Locks(ctx)
	for _, l := range locks {
		if l.TaskID == id && l.Lock == name && l.Held {
			return (*locking.Holder)(l.Holder)
		}
	}
	return nil
}

// runLocked runs argv with the streams passed through and returns its exit
// status as an *exitError.
func runLocked(ctx context.Context, e *env, root string, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	cmd.Env = append(os.Environ(), "WORKSPACE_ROOT="+root)
	killWithParent(cmd)
	if err := startLocked(cmd); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		fmt.Fprintf(e.stderr, "workspaced: lock: run %s: %v\n", argv[0], err)
		fmt.Fprintln(e.stderr, "hint: check the command's name, that it is executable, and that it is on $PATH")
		return &exitError{code: code}
	}
	done := make(chan struct{})
	go func() {
		// Interrupted (SIGINT/SIGTERM): pass it on and wait for CMD, so
		// the lock is released only after CMD has stopped.
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitError{code: 128 + int(ws.Signal())}
		}
		return &exitError{code: ee.ExitCode()}
	}
	return fmt.Errorf("lock: run %s: %w", argv[0], err)
}
