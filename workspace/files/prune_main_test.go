package files

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/retention"
)

// The test binary doubles as the helper processes of the tests, chosen by
// this variable: "hold" takes a lock and holds it until stdin closes;
// "prune" runs a Pruner and prints each task id as it is handled, so the
// parent can kill it at a chosen point.
const childEnv = "RETENTION_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "hold":
		os.Exit(childHold())
	case "prune":
		os.Exit(childPrune())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, os.Getenv(childEnv))
		os.Exit(2)
	}
}

// childHold takes the lock at $LOCK_PATH as agent $LOCK_AGENT, says
// "locked", and holds it until stdin reaches EOF.
func childHold() int {
	lk, err := locking.TryAcquire(os.Getenv("LOCK_PATH"), locking.Options{Agent: os.Getenv("LOCK_AGENT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	if err := lk.Release(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childPrune runs a Pruner over $PRUNE_ROOT at $PRUNE_NOW with the default
// policy, printing each handled task id; $PRUNE_FALLBACK=1 disables the
// atomic exchange; $PRUNE_CRASH_AT=N makes the process kill itself with
// SIGKILL at the N-th step of summarising or removing, after printing
// "crash at <step>" ($PRUNE_CRASH_KIND=K: the N-th step named K, the
// first without N); $PRUNE_BATCH=N sets the batch size.
func childPrune() int {
	now, err := time.Parse(time.RFC3339Nano, os.Getenv("PRUNE_NOW"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	root, err := os.OpenRoot(os.Getenv("PRUNE_ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer root.Close()
	p := &Pruner{
		Root:   root,
		Policy: retention.DefaultPolicy(),
		Now:    func() time.Time { return now },
		Agent:  "cleanup-child",
		OnProgress: func(d retention.Decision) {
			fmt.Fprintln(os.Stdout, d.TaskID, d.Action)
		},
	}
	if os.Getenv("PRUNE_FALLBACK") == "1" {
		p.exchange = noExchange
	}
	if n, _ := strconv.Atoi(os.Getenv("PRUNE_BATCH")); n > 0 {
		p.batch = n
	}
	n, _ := strconv.Atoi(os.Getenv("PRUNE_CRASH_AT"))
	kind := os.Getenv("PRUNE_CRASH_KIND")
	if kind != "" {
		n = max(n, 1)
	}
	if n > 0 {
		calls := 0
		p.step = func(step string) {
			if kind != "" && step != kind {
				return
			}
			if calls++; calls == n {
				fmt.Fprintln(os.Stdout, "crash at", step)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	rep, err := p.Run(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintln(os.Stderr, rep.Errors)
		return 1
	}
	return 0
}

// noExchange stands for a kernel without RENAME_EXCHANGE.
func noExchange(*os.File, string, string) error { return errUnsupported }
