package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

const serveUsage = `workspaced serve — run the single-writer daemon of a workspace.

Usage:
  workspaced serve [--rescan DUR] [--cleanup-interval DUR] [--grace DUR] [--strict]
                   [--wakeups inotify|poll] [--poll DUR]
                   [--standby] [--lease DUR] [--log-format text|json] [--log-level debug|info|warn|error]
                   [--cpu-profile FILE]
                   [--listen ADDR [--token-file F] [--tls-cert F --tls-key F]
                    [--oauth-resource URL [--oauth-issuer URL]]
                    [--rate N] [--burst N] [--address-rate N] [--address-burst N]
                    [--trust-origin ORIGIN]... [--trust-proxy ADDR]...]

The daemon is the only writer of every tasks/<id>/state.json. It watches
tasks/ and every active task directory, takes each .claim.* and .done.*
marker into the task's journal/ with the next sequence number (one rename:
the commit point), and applies a burst of markers in one state write, after
keeping the previous state.json in backups/. It also rescans everything on
start, on a watcher overflow or error, and every --rescan, so no marker is
left behind. After a crash at any point every marker is applied exactly
once on the next start. A state.json that does not parse or validate is
restored from the newest valid backup plus the journal (state_restored);
a finished task's that parses is checked when its next marker comes.
The same daemon serves a directory and a postgres:// root: it decides when
each task is looked at, the store how a marker is made durable.

How the daemon learns of a marker (--wakeups): on Linux by inotify, a watch
of tasks/ and of every active task directory; with poll (the default where
there is no inotify: macOS, the BSDs) by looking at the modification time
of those directories every --poll (500ms), with no descriptor and no
kernel watch per task. Either way the rescans cover what a wake-up missed.
A postgres:// root wakes on its notifications and a poll of the markers
table, whatever --wakeups says. A sqlite:PATH root wakes on an fsnotify
watch of the database file and its write-ahead log and a poll of the
markers table every --poll (1s when not given).

A marker that does not parse waits --grace (it may still be being written),
then is rejected with its reason, as is one naming a missing, unsafe or
schema-invalid product. Every --cleanup-interval retention prunes finished
tasks (cleanup-interval 0 turns that off).

--cpu-profile FILE samples the daemon's CPU from start to exit into FILE,
for 'go tool pprof' (see docs/PERFORMANCE.md, where the time of a commit goes).

One daemon per root: a second serve exits 4 at once naming the pid serving.
On a postgres:// root the daemon leads through a lease row in the database
(renewed every few seconds; every commit checks its epoch, so a paused old
leader writes nothing); a second serve exits 4 naming the holder, or with
--standby waits and takes over when the leader dies: at once when its
process is gone, within the lease (--lease, 5s) when it stalls. There too
it records the friction it detects, checks subtasks for timeouts every
--rescan and prunes every --cleanup-interval; --grace does not apply (a
marker row is whole when inserted).
On a sqlite:PATH root the daemon leads by a flock of PATH.lock, which the
kernel drops when it dies: a second serve exits 4 naming the holder, or
with --standby waits and takes over at once when the leader goes.
On NFS, SMB or FUSE (the directory, or the sqlite database's directory)
it warns (refuses with --strict). Logs go to stderr;
once ready it logs its open-files limits (soft and hard).
It stops cleanly on SIGINT or SIGTERM.

With --listen ADDR it serves /healthz, /readyz (200 once it leads and its
start-up scan is done; 503 on a standby, during the scan, or with a task
stopped) and /metrics (Prometheus) there, on a loopback address unless
--token-file (then wanted by /metrics) is given; off this machine add
--tls-cert and --tls-key. On loopback or with TLS it serves the HTTP API
for programs at /api/v1/ too (docs/API.md): each request with a bearer
token of 'workspaced token add', or, on loopback without --token-file and
TLS, none and the agent named in the Workspace-Agent header (default cli).
With --oauth-resource URL (this listener's canonical URL) the API also
accepts the OAuth access tokens issued for it by --oauth-issuer (default
workspace.json's oauth.issuer, with its claims mapping), as mcp --http
does, serves its metadata at /.well-known/oauth-protected-resource and
trusts no request for its address.
The listener's limits are those of every listener (docs/SECURITY.md):
--rate and --burst for each token, --address-rate and --address-burst for
a client without one.
Under systemd (Type=notify) it says READY=1, STATUS=, WATCHDOG=1 and
STOPPING=1. See docs/OPERATIONS.md.

Defaults come from workspace.json ("daemon": {"rescan": "30s", "grace":
"5s", "cleanup_interval": "24h"}); flags override them. The daemon runs Go's
garbage collector as GOGC=400 (less CPU per marker) and, once it is ready,
under a soft memory limit of 48 MiB, or twice its live heap when a large
tree needs more (none during the start-up scan, which it would slow);
GOGC or GOMEMLIMIT in the environment wins. On Linux it runs with a timer
slack of 1 ms, so that Go's runtime checks on it about once a millisecond
while it works, not every 70 µs: started with less, it sets the slack and
starts its binary again in its place (the same process id and files);
under systemd, TimerSlackNSec=1ms in the unit spares that restart.

Examples:
  workspaced serve
  workspaced --root /srv/agents serve --log-format json
  workspaced serve --rescan 10s --cleanup-interval 0 --strict
  workspaced serve --wakeups poll --poll 100ms
  workspaced serve --listen 127.0.0.1:9464
  workspaced --root 'postgres://daemon@db/agents?schema=team_a' serve --standby
  workspaced --root sqlite:./agents.db serve

Exit codes: 0 stopped by a signal, 1 failure (--strict on an unsafe
filesystem, no workspace), 2 usage, 4 another daemon serves this root.
`

func cmdServe(ctx context.Context, e *env, args []string) error {
	fs := newFlags("serve")
	rescan := fs.Duration("rescan", 0, "rescan everything every `DUR`, e.g. 30s (default from workspace.json, else 30s)")
	cleanup := fs.Duration("cleanup-interval", 0, "prune finished tasks every `DUR`, e.g. 24h; 0 turns cleanup off (default from workspace.json, else 24h)")
	grace := fs.Duration("grace", 0, "let a marker that does not parse wait `DUR` before rejecting it, e.g. 5s (default from workspace.json, else 5s)")
	strict := fs.Bool("strict", false, "refuse to serve a root on NFS, SMB or FUSE")
	lease := fs.Duration("lease", 0, "on a postgres:// root, how long the lease runs without renewal, `DUR` (default 5s): how long a standby waits for a stalled leader")
	wakeups := fs.String("wakeups", "", "how the daemon learns of markers on a directory root, `inotify|poll` (default inotify on Linux, poll elsewhere)")
	poll := fs.Duration("poll", 0, "with --wakeups poll, look at the active task directories every `DUR` (default 500ms)")
	standby := fs.Bool("standby", false, "on a postgres:// root, wait for the leading daemon's lease instead of exiting 4, and take over when it lapses")
	format := fs.String("log-format", "text", "the log format, `text|json`")
	level := fs.String("log-level", "info", "log this level and above, `debug|info|warn|error`")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the daemon to `FILE` until it exits (go tool pprof reads it)")
	ops := addOpsFlags(fs)
	if err := parse(e, fs, serveUsage, args); err != nil {
		return err
	}
	if e.process {
		if err := withTimerSlack(daemonTimerSlack); err != nil {
			fmt.Fprintf(e.stderr, "workspaced: serve: %v; serving with the timer slack it has\n", err)
		}
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	opsToken, err := ops.check()
	if err != nil {
		return err
	}
	logger, err := newLogger(e, *format, *level)
	if err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"rescan", *rescan}, {"grace", *grace}, {"cleanup-interval", *cleanup}} {
		if d.v < 0 {
			return usageHint("serve", "--%s must not be negative", d.name)
		}
	}
	// 0 turns cleanup off; not given, the settings say.
	var cleanupEvery time.Duration
	if flagWasSet(fs, "cleanup-interval") {
		cleanupEvery = *cleanup
		if *cleanup == 0 {
			cleanupEvery = -1
		}
	}
	if *lease < 0 || *poll < 0 {
		return usageHint("serve", "--lease and --poll must not be negative")
	}
	if *wakeups != "" && *wakeups != "inotify" && *wakeups != "poll" {
		return usageHint("serve", "--wakeups %q: use inotify or poll", *wakeups)
	}
	if *standby && service.KindOf(e.root) == service.Files {
		return usageHint("serve", "--standby needs a postgres:// or sqlite: root: a directory has one daemon, its lock held by the kernel")
	}
	e.opened = true
	st, err := service.Open(context.Background(), e.root, service.Options{Grace: *grace, Logger: logger}) // refuses a directory that is not a workspace
	if err != nil {
		return err
	}
	defer st.Close()
	served, wake, err := service.Serve(st, *wakeups, *poll)
	if err != nil {
		return err
	}
	tuneGC(daemonGCPercent)
	// Once ready, not before: a second daemon, refused, logs nothing.
	ready := func() { fitMemoryLimit(daemonMemLimit); logOpenFilesLimit(logger) }
	return runDaemon(ctx, daemon.Config{Store: served, Rescan: *rescan, CleanupInterval: cleanupEvery, Logger: logger, Wake: wake,
		Lead:  workspace.LeadOptions{Standby: *standby, TTL: *lease, Strict: *strict, Logger: logger},
		Ready: ready}, ops, opsToken, st)
}

func flagWasSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

func newLogger(e *env, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageHint("serve", "--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		// Durations for people (cleanup_interval=24h, not 24h0m0s); the
		// JSON format keeps nanoseconds for programs.
		text := *opts
		text.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(vocab.Duration(a.Value.Duration()))
			}
			return a
		}
		return slog.New(slog.NewTextHandler(e.stderr, &text)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	}
	return nil, usageHint("serve", "--log-format %q: use text or json", format)
}

// A burst of markers allocates much and keeps little, so a daemon lets its
// heap grow further between collections than Go's default (less CPU per
// marker). Once it is ready it sets a soft memory limit well within the
// RSS it is meant to stay under (64 MiB with 10,000 tasks), or twice its
// live heap when the tree needs more (see memLimitFor). No limit holds
// during the start-up scan: under one below the scan's transient heap the
// collector would run over and over (a tree of 20,000 tasks took three
// times the CPU). GOGC or GOMEMLIMIT in the environment win.
const (
	daemonGCPercent = 400
	daemonMemLimit  = 48 << 20
)
