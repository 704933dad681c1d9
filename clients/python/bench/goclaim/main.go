// Command goclaim is the Go client's side of the Python package's
// benchmark (clients/python/bench/bench.py): one process holding the
// workspace open, as a Go agent would. A line "put KEY JSON" stores the
// task's env entry KEY (the Go store's put, timed beside the same floor
// as the package's); any other line names a subtask, claimed with
// service.Claim, waiting for the daemon's verdict. Each line is answered
// "<verdict or version> <milliseconds>".
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: goclaim ROOT TASK AGENT  (subtasks, or put KEY JSON, on stdin, one a line)")
		os.Exit(2)
	}
	root, task, agent := os.Args[1], os.Args[2], os.Args[3]
	ctx := context.Background()
	st, err := service.Open(ctx, root, service.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "goclaim:", err)
		os.Exit(1)
	}
	defer st.Close()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	env := workspace.Scope{Kind: workspace.ScopeThread, TaskID: task}
	for in.Scan() {
		if rest, ok := strings.CutPrefix(in.Text(), "put "); ok {
			key, value, _ := strings.Cut(rest, " ")
			t := time.Now()
			r, err := st.StoreEntry(ctx, env, workspace.StoreRequest{Key: key, Value: json.RawMessage(value), Agent: agent})
			answer(t, fmt.Sprint(r.Entry.Version), err)
			continue
		}
		t := time.Now()
		d, err := service.Claim(ctx, st, task, agent, in.Text(), service.DeliverOptions{Wait: 30 * time.Second})
		answer(t, string(d.Verdict.Verdict), err)
	}
}

func answer(t time.Time, what string, err error) {
	ms := float64(time.Since(t).Microseconds()) / 1000
	if err != nil {
		fmt.Printf("error %.3f %v\n", ms, err)
		return
	}
	fmt.Printf("%s %.3f\n", what, ms)
}
