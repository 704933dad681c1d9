package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

const benchUsage = `workspaced bench — measure the workload against the disk's own floor.

Usage:
  workspaced bench [--quick] [--json] [--dir DIR] [--ext4] [--no-python]
  workspaced --root postgres://… bench [--quick] [--json] [--dir DIR] [--no-python] [--no-files]
  workspaced --root sqlite:PATH bench [--quick] [--json] [--dir DIR] [--ext4] [--no-python] [--no-files]
  workspaced [--root sqlite:PATH|postgres://…] bench --scale [--sizes 100,1000,10000] [--profile FILE] [--json] [--dir DIR] [--ext4]
  workspaced bench --vs-daemon PATH [--daemon PATH] [--row 32|1] [--pairs N] [--json] [--dir DIR] [--ext4]
  workspaced --root postgres://… bench --vs-daemon PATH [--daemon PATH] [--row 32|1] [--pairs N] [--json]
  workspaced --root sqlite:PATH bench --vs-daemon PATH [--daemon PATH] [--row 32|1] [--pairs N] [--json] [--dir DIR] [--ext4]

Runs a self-contained workload on temporary workspaces made in DIR (default:
the directory holding the root, so the same filesystem) and removed after:

  floor     a 1 KiB temporary write + fsync + rename + directory fsync
  env       store / get / update / list at 1 KiB and 100 KiB
  watcher   how soon the harness sees a state.json renamed into place
  daemon    a real 'workspaced serve' and agent processes dropping done
            markers, each marker's rename → the first read of state.json
            showing it (p50, p99, markers/s): 1 agent, one marker at a
            time; 8 and 32 agents finishing a subtask at the same moment,
            in rounds (8, or 3 with --quick); 32 agents dropping 8 (3)
            markers each back to back. The agents are ordinary: Go
            processes writing with the os package (temporary file, fsync,
            rename, directory fsync), and, when python3 is on PATH, Python
            processes using examples/agents/python/workspace_agent.py
            (their own rows; --no-python leaves them out)
  idle      a 'workspaced serve' on a tree of 10,000 tasks (1,000 with
            --quick): CPU used over idle seconds, and its RSS

Each figure is printed beside the floor measured in the same run: latency
as a multiple of the floor's p50, throughput as a multiple of what one
durable write per marker would allow. The daemon's figures use the lower
of that floor and one measured between their own rounds (a shared disk's
speed drifts from minute to minute); their note says which. The report
names the filesystem measured and its mount options.

On a postgres:// root (--root or WORKSPACE_ROOT) the same workload runs
twice and both are printed: on files, in DIR (default: the temporary
directory's filesystem), then on PostgreSQL, in a temporary schema of
that database (created and dropped; the role needs CREATE there), beside
PostgreSQL's own floor, one INSERT … ON CONFLICT DO UPDATE of a 1 KiB row
in its own committed transaction: env store / get / update at 1 KiB and
100 KiB and the listing of 1,000 entries of 100 KiB without their values
as multiples of that floor sampled with each; a real 'workspaced serve'
with 1 agent, one marker at a time, and 32 agent processes finishing a
subtask at once (markers/s as a multiple of one commit per marker), and
the daemon alone draining 32 agents' markers inserted while it was
stopped (SIGSTOP, then SIGCONT); each agent is a connection of its own
inserting its markers with the statement of docs/PROTOCOL.md. A row
"32 agents inserting at once, no daemon", run before the daemon starts,
times those agents' inserts alone (the harness hears each commit on the
markers' channel): the bound of the 32-agents row.

On a sqlite: root the same workload runs twice and both are printed: on
files, then on SQLite, in a temporary database file made in DIR (default:
the directory holding the database, so its disk) and removed after,
beside SQLite's own floor there: one INSERT … ON CONFLICT DO UPDATE of a
1 KiB row in its own committed transaction, WAL with synchronous=FULL,
in a database file of its own. The rows are PostgreSQL's; each agent
inserts its markers through a store of its own (each insert durable
when it returns), and the harness reads the states at every write to
the database it hears (every millisecond for 200 ms after one). The
row "32 agents inserting at once, no daemon" is the bound of the
32-agents row here too. --no-files leaves out the run on files: the
database's rows only. With --vs-daemon each daemon serves a temporary
database of its own in DIR, beside SQLite's floor.

--scale measures how a marker's cost grows with its task instead: in
tasks whose approved plan has 100, 1,000 and 10,000 independent subtasks
(--sizes), one Go agent drops 60 done markers one at a time, then 32 agents
finish a subtask each at the same moment, twice, in another task of that
size. Each row gives the daemon process's CPU per marker (read from its CPU
clock, all threads, in ns) and the markers' latency (drop → the first read
of a state showing it, p50 and p99), the state document's size, and how
soon a waiter hears the verdict on its claim (30 claims waited for one at
a time after the lone markers: the commit → workspace.Wait's return, p50
and p99). It runs on files, then on the database a sqlite: or postgres://
root names. Beside the daemon's lone markers, a lone floor on files and
SQLite: a minimal process of its own (the daemon's GOGC and timer slack)
that, woken by a watch, does only what any daemon must for a lone marker
(takes it into the journal durably, logs its event, writes a state of the
row's size durably), its CPU per marker measured the same way; the table
gives the daemon's ÷ it.
--profile FILE has each daemon write a CPU profile of its run to
FILE.files, FILE.sqlite or FILE.postgres (see serve).

--ext4 makes a 1 GiB sparse image in DIR, formats it with mkfs.ext4's
defaults (journaled), loop-mounts it and measures there; the mount and the
image are removed afterwards, also after an error or an interrupt. It
needs root.

--vs-daemon PATH compares the daemon of this binary (A) with the daemon of
the binary at PATH (B): both serve their own workspace in the same
filesystem the whole time, and one row's round runs on each in turn, N
pairs (default 40; one warm-up round each first), A first in even pairs
and B first in odd ones. --row picks the row:

  32  (the default) 32 Go agents finishing a subtask at once; a round's
      figure is its time, first rename → last state showing it
  1   one Go agent dropping one marker at a time, each once the state
      showed the one before, 20 a round; a round's figure is the median
      of its markers' latencies (rename → first read of the state
      showing it), as in the "1 agent" row

It prints per daemon the median of the rounds' figures, markers/s, p50
and p99 (and vs floor: the rate's on row 32, p50 ÷ floor p50 on row 1),
and per pair B's figure ÷ A's with their median, its 95 % confidence
interval, min and max and how many pairs A won (a median above 1: A is
faster), beside the floor measured between rounds. A difference is
resolved only when the interval leaves 1 out; a shared machine may need
a few hundred pairs to resolve 10 %. On a postgres:// root each daemon
serves a temporary schema of its own in that database (created and
dropped; its own lease, so both lead at once), the agents insert their
markers as above, and the floor is PostgreSQL's; --ext4 and --dir do not
apply there. --daemon PATH makes the binary at PATH daemon A instead of
this one, to compare two other builds; the agents are always this
binary's.

Examples:
  workspaced bench --quick
  workspaced --root /srv/agents bench --json > bench.json
  workspaced bench --dir /mnt/nvme
  workspaced --root 'postgres://bench@db/agents' bench --quick
  workspaced --root sqlite:./agents.db bench --quick
  sudo workspaced bench --ext4
  sudo workspaced bench --ext4 --vs-daemon ./workspaced-main --pairs 40
  workspaced --root sqlite:./agents.db bench --scale
  sudo workspaced bench --ext4 --daemon ./build-a --vs-daemon ./build-b --pairs 200
  sudo workspaced bench --ext4 --vs-daemon ./workspaced-main --row 1 --pairs 40
  workspaced --root 'postgres://bench@db/agents' bench --vs-daemon ./workspaced-main --row 32

Exit codes: 0 ok, 1 failure (also --ext4 without root), 2 usage.
`

// benchAgentArg is the first argument of the agent processes the workload
// starts (the binary re-executed as `workspaced bench agent …`). It is
// not a command for people and is left out of the help.
const benchAgentArg = "agent"

// benchLoneFloorArg is the first argument of the lone floor's process of
// --scale (bench.LoneFloorMain), also left out of the help.
const benchLoneFloorArg = "lone-floor"

func cmdBench(ctx context.Context, e *env, args []string) (err error) {
	if len(args) > 0 && args[0] == benchAgentArg {
		return cmdBenchAgent(e, args[1:])
	}
	if len(args) > 0 && args[0] == benchLoneFloorArg {
		return cmdBenchLoneFloor(e, args[1:])
	}
	fs := newFlags("bench")
	quick := fs.Bool("quick", false, "fewer iterations and a 1,000-task tree")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	dir := fs.String("dir", "", "make the temporary workspaces in `DIR`, the filesystem measured (default: the directory holding the root)")
	ext4 := fs.Bool("ext4", false, "measure on a journaled ext4 image loop-mounted for the run (needs root)")
	noPython := fs.Bool("no-python", false, "leave out the Python agents' rows")
	noFiles := fs.Bool("no-files", false, "on a sqlite: or postgres:// root, leave out the run on files")
	vs := fs.String("vs-daemon", "", "compare this binary's daemon with the one of the binary at `PATH`, in paired rounds")
	self := fs.String("daemon", "", "with --vs-daemon: the binary at `PATH` serves as A instead of this one")
	pairs := fs.Int("pairs", bench.DefaultPairs, "--vs-daemon runs `N` pairs of rounds")
	scale := fs.Bool("scale", false, "measure a marker's cost in tasks of growing size instead")
	profile := fs.String("profile", "", "with --scale: each daemon writes a CPU profile to `FILE`.<store>")
	sizes := fs.String("sizes", "", "with --scale: the tasks' sizes in subtasks, `LIST` of comma-separated counts (default 100,1000,10000)")
	prow := fs.Int("row", bench.RowAtOnce, "--vs-daemon compares row `N`: 32 (agents at once) or 1 (one agent's marker → state)")
	if err := parse(e, fs, benchUsage, args); err != nil {
		return err
	}
	if *pairs < 1 {
		return usageHint("bench", "--pairs must be at least 1")
	}
	if *prow != bench.RowAtOnce && *prow != bench.RowSingle {
		return usageHint("bench", "--row is 32 (agents at once) or 1 (one agent's marker → state), not %d", *prow)
	}
	for _, f := range []string{"pairs", "daemon", "row"} {
		if flagWasSet(fs, f) && *vs == "" {
			return usageHint("bench", "--%s goes with --vs-daemon", f)
		}
	}
	if (flagWasSet(fs, "sizes") || flagWasSet(fs, "profile")) && !*scale {
		return usageHint("bench", "--sizes and --profile go with --scale")
	}
	if *scale && (*vs != "" || *quick || *noPython) {
		return usageHint("bench", "--scale runs only its own rows: --vs-daemon, --quick and --no-python do not apply")
	}
	scaleSizes, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	if *vs != "" && (*quick || *noPython) {
		return usageHint("bench", "--vs-daemon runs only its paired rounds: --quick and --no-python do not apply (--pairs sets its length)")
	}
	sq := service.KindOf(e.root) == service.SQLite
	pg := service.KindOf(e.root) == service.PostgreSQL
	if *noFiles && (*scale || *vs != "") {
		return usageHint("bench", "--no-files goes with the workload, not with --scale or --vs-daemon")
	}
	if *noFiles && !sq && !pg {
		return usageHint("bench", "--no-files leaves out the run on files beside a database's: it needs a sqlite: or postgres:// root")
	}
	if pg && *vs != "" && (*ext4 || *dir != "") {
		return usageHint("bench", "--vs-daemon on a postgres:// root runs in its database: --ext4 and --dir do not apply")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: find this binary: %w", err)
	}
	other, serveA := "", exe
	if *vs != "" {
		if other, err = executable("--vs-daemon", *vs); err != nil {
			return err
		}
	}
	if *self != "" {
		if serveA, err = executable("--daemon", *self); err != nil {
			return err
		}
	}
	if *dir == "" && pg {
		*dir = os.TempDir()
	}
	if *dir == "" && sq {
		db, err := service.DatabaseFile(e.root)
		if err != nil {
			return err
		}
		*dir = filepath.Dir(db)
	}
	if *dir == "" {
		abs, err := filepath.Abs(e.root)
		if err != nil {
			return err
		}
		*dir = filepath.Dir(abs)
	}
	if *ext4 {
		mnt, err := mountExt4(ctx, *dir, os.Geteuid() == 0)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := mnt.Close(); cerr != nil && err == nil {
				err = cerr
			} else if cerr != nil {
				fmt.Fprintf(e.stderr, "workspaced: %v\n", cerr)
			}
		}()
		*dir = mnt.Dir
	}
	var progress io.Writer
	if !*asJSON {
		progress = e.stderr
	}
	agentCmd := []string{exe, "bench", benchAgentArg}
	if *scale {
		sopt := bench.ScaleOptions{Dir: *dir, Sizes: scaleSizes, AgentCmd: agentCmd, ServeCmd: []string{exe, "--root"},
			FloorCmd: []string{exe, "bench", benchLoneFloorArg}, SQLite: sq, Profile: *profile, Progress: progress}
		if pg {
			sopt.Postgres = e.root
		}
		return runScale(ctx, e, sopt, *asJSON)
	}
	if other != "" {
		popt := bench.PairedOptions{Dir: *dir, Row: *prow, Pairs: *pairs, AgentCmd: agentCmd,
			ServeA: []string{serveA, "--root"}, ServeB: []string{other, "--root"}, Progress: progress}
		if pg {
			popt.Postgres = e.root
		}
		popt.SQLite = sq
		rep, err := bench.RunPaired(ctx, popt)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, rep)
		}
		printPaired(e.stdout, rep)
		return nil
	}
	opt := bench.Options{Dir: *dir, Quick: *quick, AgentCmd: agentCmd, ServeCmd: []string{exe, "--root"},
		NoPython: *noPython, NoFiles: *noFiles, Progress: progress}
	if pg {
		opt.Postgres = e.root
	}
	opt.SQLite = sq
	rep, err := bench.Run(ctx, opt)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, rep)
	}
	out := e.stdout
	fmt.Fprintf(out, "workspaced bench (%s)\nfilesystem: %s\n\n", map[bool]string{true: "quick", false: "full"}[*quick], rep.FS)
	if !*noFiles {
		rows := [][]string{row(rep.Floor)}
		for _, r := range rep.Results {
			rows = append(rows, row(r))
		}
		table(out, []string{"OPERATION", "OPS", "OPS/S", "P50 MS", "P99 MS", "VS FLOOR", "NOTE"}, rows)
	}
	if rep.IdleTasks > 0 { // else not measured, and a note says why
		fmt.Fprintf(out, "\ndaemon idle with %d tasks: %.1f ms CPU over %.0f s, RSS %.1f MiB (targets: no CPU between events, RSS < 64 MiB)\n",
			rep.IdleTasks, rep.IdleCPUms, rep.IdleSeconds, rep.RSSMiB)
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	// A database's rows: its floor first, then its notes.
	database := func(floor bench.Result, results []bench.Result, notes []string) {
		rows := [][]string{row(floor)}
		for _, r := range results {
			rows = append(rows, row(r))
		}
		table(out, []string{"OPERATION", "OPS", "OPS/S", "P50 MS", "P99 MS", "VS FLOOR", "NOTE"}, rows)
		for _, n := range notes {
			fmt.Fprintln(out, "note:", n)
		}
	}
	if p := rep.Postgres; p != nil {
		fmt.Fprintf(out, "\nPostgreSQL: %s\nschema: %s (temporary, dropped)\n\n", p.Server, p.Schema)
		database(p.Floor, p.Results, p.Notes)
	}
	if q := rep.SQLite; q != nil {
		fmt.Fprintf(out, "\nSQLite %s\ndatabase: %s (temporary, removed)\n\n", q.Version, q.Path)
		database(q.Floor, q.Results, q.Notes)
	}
	return nil
}

// mountExt4 is bench.MountExt4 with the hint a user needs when not root.
func mountExt4(ctx context.Context, parent string, isRoot bool) (*bench.Ext4, error) {
	mnt, err := bench.MountExt4(ctx, parent, bench.Ext4Size, isRoot)
	if errors.Is(err, bench.ErrNeedsRoot) {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "bench --ext4", Err: err,
			Hint: "run it as root, or measure on a filesystem you mounted yourself with --dir DIR"}
	}
	return mnt, err
}

// executable returns the absolute path of the binary a flag names, or a
// usage error when it is not an executable file.
func executable(flag, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", usageHint("bench", "%s %s: not an executable file", flag, p)
	}
	return abs, nil
}

// printPaired prints a --vs-daemon report for people.
func printPaired(out io.Writer, rep *bench.PairedReport) {
	what, figure := fmt.Sprintf("%d Go agents finishing a subtask at once", rep.Agents), "round time"
	if rep.Row == bench.RowSingle {
		what = fmt.Sprintf("1 Go agent, one marker at a time, %d a round: marker → state", rep.PerRound)
		figure = "median latency of a round"
	}
	fmt.Fprintf(out, "workspaced bench --vs-daemon --row %d: %d pairs of rounds, %s\n", rep.Row, rep.Pairs, what)
	if rep.Server != "" {
		fmt.Fprintf(out, "PostgreSQL: %s\nschemas: %s (temporary, dropped)\n", rep.Server, strings.Join(rep.Schemas, ", "))
	} else {
		fmt.Fprintf(out, "filesystem: %s\n", rep.FS)
	}
	fmt.Fprintf(out, "floor between rounds: p50 %.2f ms, p99 %.2f ms (%d samples)\n\n", rep.Floor.P50, rep.Floor.P99, rep.Floor.Ops)
	side := func(name string, s bench.PairedSide) []string {
		return []string{name, s.Serve, fmt.Sprint(s.Rounds), fmt.Sprintf("%.2f", s.MedianRoundMS), fmt.Sprintf("%.0f", s.MarkersPS),
			fmt.Sprintf("%.2f×", s.VsFloor), fmt.Sprintf("%.2f", s.P50), fmt.Sprintf("%.2f", s.P99)}
	}
	head := []string{"DAEMON", "BINARY", "ROUNDS", "MEDIAN ROUND MS", "MARKERS/S", "VS FLOOR", "P50 MS", "P99 MS"}
	if rep.Row == bench.RowSingle {
		head[3] = "MEDIAN LATENCY MS"
	}
	table(out, head, [][]string{side("A (this)", rep.A), side("B", rep.B)})
	fmt.Fprintf(out, "\nB ÷ A %s, per pair: median %.3f (95%% CI %.3f–%.3f), min %.3f, max %.3f; A faster in %d of %d pairs\n",
		figure, rep.RatioMedian, rep.RatioLow, rep.RatioHigh, rep.RatioMin, rep.RatioMax, rep.AFaster, len(rep.Ratios))
	if rep.RatioLow <= 1 && rep.RatioHigh >= 1 {
		fmt.Fprintln(out, "the interval holds 1: no difference resolved at this many pairs (more --pairs narrow it)")
	}
	var b strings.Builder
	for i, r := range rep.Ratios {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.2f", r)
	}
	fmt.Fprintf(out, "per pair: %s\n", b.String())
}

// cmdBenchAgent is one agent process of the workload: bench.AgentMain on
// the workspace, task and agent name its flags give.
func cmdBenchAgent(e *env, args []string) error {
	fs := newFlags("bench agent")
	root := fs.String("agent-root", "", "workspace `DIR` the agent works in")
	task := fs.String("agent-task", "", "`TASK` whose subtasks it finishes")
	name := fs.String("agent-name", "", "agent `ID` on its markers")
	if err := parse(e, fs, "workspaced bench agent — one agent process of 'workspaced bench' (internal).\n", args); err != nil {
		return err
	}
	if err := need(fs, "agent-root", "agent-task", "agent-name"); err != nil {
		return err
	}
	return bench.AgentMain(*root, *task, *name, e.stdin, e.stdout)
}

// cmdBenchLoneFloor is the lone floor's process of --scale, with the
// daemon's collector target and timer slack (serve), which lower its CPU:
// a floor no daemon's settings could beat.
func cmdBenchLoneFloor(e *env, args []string) error {
	fs := newFlags("bench lone-floor")
	store := fs.String("store", "", "`files|sqlite`")
	dir := fs.String("dir", "", "the `DIR` the harness prepared")
	if err := parse(e, fs, "workspaced bench lone-floor — the lone floor's process of 'workspaced bench --scale' (internal).\n", args); err != nil {
		return err
	}
	if err := need(fs, "store", "dir"); err != nil {
		return err
	}
	if e.process {
		if err := withTimerSlack(daemonTimerSlack); err != nil {
			fmt.Fprintf(e.stderr, "workspaced: bench lone-floor: %v\n", err)
		}
		tuneGC(daemonGCPercent)
	}
	return bench.LoneFloorMain(*store, *dir, e.stdin, e.stdout)
}

func row(r bench.Result) []string {
	return []string{r.Name, fmt.Sprint(r.Ops), fmt.Sprintf("%.0f", r.OpsPS), fmt.Sprintf("%.2f", r.P50), fmt.Sprintf("%.2f", r.P99),
		fmt.Sprintf("%.2f×", r.VsFloor), r.Note}
}
