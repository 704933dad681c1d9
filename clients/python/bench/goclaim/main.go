// Command goclaim is the Go client's side of the Python package's claim
// benchmark (clients/python/bench/bench.py): one process holding the
// workspace open, as a Go agent would, claims each subtask named on a line
// of stdin with service.Claim, waiting for the daemon's verdict, and
// answers a line "<verdict> <milliseconds>".
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/workspaced/workspaced/service"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: goclaim ROOT TASK AGENT  (subtasks on stdin, one a line)")
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
	for in.Scan() {
		t := time.Now()
		d, err := service.Claim(ctx, st, task, agent, in.Text(), service.DeliverOptions{Wait: 30 * time.Second})
		ms := float64(time.Since(t).Microseconds()) / 1000
		if err != nil {
			fmt.Printf("error %.3f %v\n", ms, err)
			continue
		}
		fmt.Printf("%s %.3f\n", d.Verdict.Verdict, ms)
	}
}
