package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/bench"
)

// parseSizes reads --sizes: task sizes separated by commas, each at least
// 100 (the workload's markers must fit in a task). "" is the default.
func parseSizes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(f, "_", "")))
		if err != nil || n < 100 || n > 100_000 {
			return nil, usageHint("bench", "--sizes takes subtask counts from 100 to 100000 separated by commas (100,1000,10000), not %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runScale runs bench --scale and prints its report.
func runScale(ctx context.Context, e *env, opt bench.ScaleOptions, asJSON bool) error {
	rep, err := bench.RunScale(ctx, opt)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.stdout, rep)
	}
	out := e.stdout
	fmt.Fprintf(out, "workspaced bench --scale: a marker's cost by its task's size\nfilesystem: %s\n\n", rep.FS)
	base := map[string]bench.ScaleRow{}
	var rows [][]string
	for _, r := range rep.Rows {
		if _, ok := base[r.Store]; !ok {
			base[r.Store] = r
		}
		b := base[r.Store]
		ratio := func(v, at float64) string {
			if at <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f×", v/at)
		}
		rows = append(rows, []string{r.Store, fmt.Sprint(r.Subtasks), fmt.Sprintf("%.0f", r.StateKB),
			fmt.Sprintf("%.2f", r.Lone.CPUms), ratio(r.Lone.CPUms, b.Lone.CPUms), fmt.Sprintf("%.2f", r.Floor.CPUms), ratio(r.Floor.CPUms, b.Floor.CPUms),
			loneFloorCPU(r), loneFloorRatio(r),
			fmt.Sprintf("%.2f", r.Lone.P50), fmt.Sprintf("%.2f", r.Lone.P99),
			fmt.Sprintf("%.2f", r.Burst.CPUms), ratio(r.Burst.CPUms, b.Burst.CPUms), fmt.Sprintf("%.2f", r.Burst.P50), fmt.Sprintf("%.2f", r.Burst.P99),
			fmt.Sprintf("%.2f", r.Verdict.P50), fmt.Sprintf("%.2f", r.Verdict.P99)})
	}
	table(out, []string{"STORE", "SUBTASKS", "STATE KIB", "LONE CPU MS", "VS FIRST", "FLOOR CPU MS", "VS FIRST", "LONE FLOOR CPU MS", "LONE ÷ LONE FLOOR", "LONE P50", "LONE P99",
		"BURST CPU MS", "VS FIRST", "BURST P50", "BURST P99", "VERDICT P50", "VERDICT P99"}, rows)
	if len(rep.Rows) > 0 {
		r := rep.Rows[0]
		fmt.Fprintf(out, "\nlone: %d markers one at a time; burst: %d markers, %d agents at once; CPU ms per marker, latency in ms (drop → state); VS FIRST: ÷ the store's smallest task; verdict: %d claims waited for one at a time, ms from the commit to the verdict heard\n",
			r.Lone.Markers, r.Burst.Markers, bench.ScaleBurst, r.Verdict.Waiters)
		fmt.Fprintf(out, "floor: the bare write of a document of the state's size in the store, CPU ms per write of the writing thread (%d writes)\n", r.Floor.Writes)
		fmt.Fprintf(out, "lone floor: a minimal process doing only what any daemon must for a lone marker, its CPU ms per marker measured as the daemon's (none on PostgreSQL)\n")
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	return nil
}

// loneFloorCPU and loneFloorRatio are r's lone floor and the daemon's
// lone markers ÷ it, or "-" where the row has none (PostgreSQL).
func loneFloorCPU(r bench.ScaleRow) string {
	if r.LoneFloor == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", r.LoneFloor.CPUms)
}

func loneFloorRatio(r bench.ScaleRow) string {
	if r.LoneFloor == nil || r.LoneFloor.CPUms <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", r.Lone.CPUms/r.LoneFloor.CPUms)
}
