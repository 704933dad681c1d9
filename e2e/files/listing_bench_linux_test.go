package files_test

import (
	"slices"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
)

// BenchmarkListing measures the wall time of `workspaced task list` and
// `workspaced status` over the start-up benchmark's tree of 20,000 tasks
// (1,000 active, 19,000 completed; written once, the page cache warm).
// Run it with
//
//	go test -run '^$' -bench Listing -benchtime 5x ./e2e/files/
//
// It reports the median wall time of each command over its iterations
// (task_list_s, status_s) and the load average when it ended (load1).
func BenchmarkListing(b *testing.B) {
	root := startupTree(b)
	cmds := []struct {
		metric string
		args   []string
	}{
		{"task_list_s", []string{"task", "list"}},
		{"status_s", []string{"status"}},
	}
	walls := make([][]float64, len(cmds))
	for range b.N {
		for k, c := range cmds {
			cmd := clitest.Command(append([]string{"--root", root}, c.args...)...)
			cmd.Env = clitest.CleanEnv()
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %v\n%s", c.args, err, clitest.TailLines(string(out), 20))
			}
			walls[k] = append(walls[k], time.Since(start).Seconds())
		}
	}
	for k, c := range cmds {
		slices.Sort(walls[k])
		b.ReportMetric(walls[k][len(walls[k])/2], c.metric)
	}
	b.ReportMetric(loadAvg1(), "load1")
}
