// Package opsmetrics holds what workspaced's long-running commands
// measure for Prometheus: the daemon (serve), the panel (web) and the MCP
// server (mcp --http). Every metric is named workspaced_… with its unit,
// and no label carries a task id, an agent or anything else unbounded.
// docs/OPERATIONS.md lists them.
package opsmetrics

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

// The labels' values, fixed in advance so that a marker costs no label
// look-up.
var (
	kinds    = []string{workspace.KindClaim, workspace.KindDone}
	verdicts = []string{workspace.VerdictWon, workspace.VerdictLost, workspace.VerdictApplied, workspace.VerdictRefused, workspace.VerdictNotFound}
	faults   = []string{workspace.FaultDiskFull, workspace.FaultReadOnly, workspace.FaultPermission, workspace.FaultOpenFiles,
		workspace.FaultUnreachable, workspace.FaultOther}
)

// Buckets: commits take from a millisecond (a burst on a fast disk) to
// seconds (a database far away); a marker waits from milliseconds to
// minutes (its grace, a stopped task).
var (
	durationBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)     // 0.5 ms … 16 s
	markerBuckets   = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512} // DefaultMax is 128
	latencyBuckets  = prometheus.ExponentialBuckets(0.001, 2.5, 14)    // 1 ms … 2.5 min
)

// Daemon is what workspaced serve measures: a daemon.Observer, the
// readiness /readyz answers, and a collector of what the daemon's live
// report and the store say at each scrape. It is safe for concurrent use.
type Daemon struct {
	leading  atomic.Bool
	standby  atomic.Bool
	ready    atomic.Bool
	epoch    atomic.Int64
	queued   atomic.Int64
	inFlight atomic.Int64
	live     func() workspace.Live
	waiting  func(context.Context) (int64, error) // nil: the store cannot tell cheaply

	applied    [][]prometheus.Counter // [kind][verdict]
	appliedVec *prometheus.CounterVec
	commitSecs prometheus.Histogram
	perCommit  prometheus.Histogram
	latency    prometheus.Histogram
	failures   *prometheus.CounterVec
	evWritten  prometheus.Counter
	evLost     prometheus.Counter
	rescans    prometheus.Counter
	cleanups   *prometheus.CounterVec
	removed    prometheus.Counter
	friction   *prometheus.CounterVec

	descs  map[string]*prometheus.Desc
	mu     sync.Mutex // one scrape of the store at a time
	now    func() time.Time
	cutoff time.Duration
}

var _ daemon.Observer = (*Daemon)(nil)

// NewDaemon registers the daemon's metrics on reg. live is the daemon's
// report (daemon.Live); store, when it is a workspace.MarkerCounter, is asked for
// the markers waiting at each scrape.
func NewDaemon(reg prometheus.Registerer, live func() workspace.Live, store any) *Daemon {
	m := &Daemon{live: live, now: time.Now, cutoff: 2 * time.Second}
	if mc, ok := workspace.As[workspace.MarkerCounter](store); ok {
		m.waiting = mc.MarkersWaiting
	}
	m.appliedVec = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_markers_applied_total",
		Help: "Markers applied (journaled into a state written), by kind and verdict."}, []string{"kind", "verdict"})
	m.applied = make([][]prometheus.Counter, len(kinds))
	for i, k := range kinds {
		for _, v := range verdicts {
			m.applied[i] = append(m.applied[i], m.appliedVec.WithLabelValues(k, v))
		}
	}
	m.commitSecs = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "workspaced_commit_duration_seconds",
		Help: "Time of each commit that applied markers, from its start to the state written.", Buckets: durationBuckets})
	m.perCommit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "workspaced_commit_markers",
		Help: "Markers applied by each commit that applied any.", Buckets: markerBuckets})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "workspaced_marker_latency_seconds",
		Help: "Time from a marker's drop to the commit that applied it.", Buckets: latencyBuckets})
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_commit_failures_total",
		Help: "Commits that failed (retried with backoff), by fault."}, []string{"fault"})
	m.evWritten = prometheus.NewCounter(prometheus.CounterOpts{Name: "workspaced_events_written_total",
		Help: "Events appended to the tasks' event logs."})
	m.evLost = prometheus.NewCounter(prometheus.CounterOpts{Name: "workspaced_events_lost_total",
		Help: "Events that could not be appended (the state was written)."})
	m.rescans = prometheus.NewCounter(prometheus.CounterOpts{Name: "workspaced_rescans_total",
		Help: "Full scans of every task after the start-up scan (the periodic rescan, a watch overflow)."})
	m.cleanups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_retention_runs_total",
		Help: "Retention runs, by outcome (ok, error)."}, []string{"outcome"})
	m.removed = prometheus.NewCounter(prometheus.CounterOpts{Name: "workspaced_retention_tasks_removed_total",
		Help: "Tasks removed by retention."})
	m.friction = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workspaced_friction_recorded_total",
		Help: "Friction entries the daemon's detectors recorded, by type."}, []string{"type"})
	for _, f := range faults {
		m.failures.WithLabelValues(f)
	}
	for _, o := range []string{"ok", "error"} {
		m.cleanups.WithLabelValues(o)
	}
	m.descs = map[string]*prometheus.Desc{
		"leading":  prometheus.NewDesc("workspaced_leading", "1 while this daemon leads (is the workspace's single writer), else 0.", nil, nil),
		"standby":  prometheus.NewDesc("workspaced_standby", "1 while this daemon waits as a standby for the leader to go.", nil, nil),
		"ready":    prometheus.NewDesc("workspaced_ready", "1 once the daemon leads and its start-up scan is done.", nil, nil),
		"epoch":    prometheus.NewDesc("workspaced_lease_epoch", "The epoch of the leadership last taken (0 on a directory root).", nil, nil),
		"waiting":  prometheus.NewDesc("workspaced_markers_waiting", "Markers waiting to be taken, counted in the store at the scrape (PostgreSQL only).", nil, nil),
		"queued":   prometheus.NewDesc("workspaced_tasks_queued", "Tasks woken and waiting for a commit (the commits' view).", nil, nil),
		"inflight": prometheus.NewDesc("workspaced_commits_in_flight", "Commits under way.", nil, nil),
		"tasks":    prometheus.NewDesc("workspaced_tasks_active", "Tasks the daemon serves (unfinished, or with markers waiting).", nil, nil),
		"stopped":  prometheus.NewDesc("workspaced_tasks_stopped", "Tasks whose commit fails, retried with backoff, by fault.", []string{"fault"}, nil),
		"unwatch":  prometheus.NewDesc("workspaced_tasks_unwatched", "Active tasks the wake-up source could not watch (served by the rescans).", nil, nil),
	}
	reg.MustRegister(m.appliedVec, m.commitSecs, m.perCommit, m.latency, m.failures, m.evWritten, m.evLost,
		m.rescans, m.cleanups, m.removed, m.friction, m)
	return m
}

// Leading notes that the daemon leads with epoch; its start-up scan
// follows.
func (m *Daemon) Leading(epoch int64) {
	m.epoch.Store(epoch)
	m.standby.Store(false)
	m.leading.Store(true)
}

// Stepped notes that the daemon no longer leads.
func (m *Daemon) Stepped() {
	m.leading.Store(false)
	m.ready.Store(false)
}

// Ready notes that the start-up scan is done (daemon.Config.Ready).
func (m *Daemon) Ready() { m.ready.Store(true) }

// Standby notes that the daemon waits for another to stop leading
// (workspace.LeadOptions.Waiting).
func (m *Daemon) Standby() { m.standby.Store(true) }

// Committed counts one commit: its markers by kind and verdict, their
// latency, its events, and its time when it applied any.
func (m *Daemon) Committed(took time.Duration, a workspace.Applied, err error) {
	if err != nil {
		m.failures.WithLabelValues(workspace.FaultKind(err)).Inc()
	}
	if n := len(a.Events); n > 0 {
		m.evWritten.Add(float64(n - a.EventsLost))
		if a.EventsLost > 0 {
			m.evLost.Add(float64(a.EventsLost))
		}
	}
	if len(a.Marks) == 0 {
		return
	}
	m.commitSecs.Observe(took.Seconds())
	m.perCommit.Observe(float64(len(a.Marks)))
	now := m.now()
	for _, mk := range a.Marks {
		m.counter(mk).Inc()
		if !mk.Dropped.IsZero() {
			m.latency.Observe(max(now.Sub(mk.Dropped).Seconds(), 0))
		}
	}
}

// counter is the counter of a mark's kind and verdict.
func (m *Daemon) counter(mk workspace.Mark) prometheus.Counter {
	for i, k := range kinds {
		if k != mk.Kind {
			continue
		}
		for j, v := range verdicts {
			if v == mk.Verdict {
				return m.applied[i][j]
			}
		}
	}
	return m.appliedVec.WithLabelValues(mk.Kind, mk.Verdict)
}

// Pending notes the loop's queue and the commits under way.
func (m *Daemon) Pending(queued, committing int) {
	m.queued.Store(int64(queued))
	m.inFlight.Store(int64(committing))
}

// Rescanned counts a full scan.
func (m *Daemon) Rescanned() { m.rescans.Inc() }

// Cleaned counts a retention run.
func (m *Daemon) Cleaned(removed int, err error) {
	if err != nil {
		m.cleanups.WithLabelValues("error").Inc()
		return
	}
	m.cleanups.WithLabelValues("ok").Inc()
	m.removed.Add(float64(removed))
}

// Friction counts the entries the detectors recorded, by type.
func (m *Daemon) Friction(entries []friction.Entry) {
	for _, e := range entries {
		t := e.Type
		if !friction.IsType(t) {
			t = "other"
		}
		m.friction.WithLabelValues(t).Inc()
	}
}

// Readiness is nil when the daemon can do its job — it leads, its
// start-up scan is done and no task is stopped — else why not, in words
// /readyz answers with.
func (m *Daemon) Readiness() error {
	switch {
	case m.standby.Load() && !m.leading.Load():
		return fmt.Errorf("standby: another daemon leads this workspace")
	case !m.leading.Load():
		return fmt.Errorf("starting: not leading yet")
	case !m.ready.Load():
		return fmt.Errorf("starting: the start-up scan is under way")
	}
	if st := m.live().Stopped; len(st) > 0 {
		return fmt.Errorf("degraded: task %s stopped (%s): %s; %d task(s) stopped", st[0].Task, st[0].Fault, st[0].Error, len(st))
	}
	return nil
}

// Status is the daemon's state in one line (systemd's STATUS=): leading
// epoch N, standby, starting, or degraded naming a stopped task.
func (m *Daemon) Status() string {
	err := m.Readiness()
	switch {
	case err == nil && m.epoch.Load() > 0:
		return fmt.Sprintf("leading epoch %d", m.epoch.Load())
	case err == nil:
		return "leading"
	}
	return err.Error()
}

// Describe sends the descriptions of the metrics read at each scrape.
func (m *Daemon) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// Collect reads the daemon's state, its live report and, where the store
// can tell cheaply, the markers waiting.
func (m *Daemon) Collect(ch chan<- prometheus.Metric) {
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.GaugeValue, v, labels...)
	}
	gauge("leading", b2f(m.leading.Load()))
	gauge("standby", b2f(m.standby.Load() && !m.leading.Load()))
	gauge("ready", b2f(m.leading.Load() && m.ready.Load()))
	gauge("epoch", float64(m.epoch.Load()))
	gauge("queued", float64(m.queued.Load()))
	gauge("inflight", float64(m.inFlight.Load()))
	live := m.live()
	gauge("tasks", float64(live.Tasks))
	gauge("unwatch", float64(live.Unwatched))
	stopped := map[string]int{}
	for _, s := range live.Stopped {
		stopped[s.Fault]++
	}
	for _, f := range faults {
		gauge("stopped", float64(stopped[f]), f)
	}
	if m.waiting != nil && m.leading.Load() {
		m.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), m.cutoff)
		n, err := m.waiting(ctx)
		cancel()
		m.mu.Unlock()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(m.descs["waiting"], err)
		} else {
			gauge("waiting", float64(n))
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
