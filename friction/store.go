package friction

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// Keeper is what the log needs of a store: the document it keeps the log
// in, its settings (the lock timeout, the detectors' thresholds), its
// clock and its events. Every workspace.Store is one.
type Keeper interface {
	workspace.FrictionStore
	Settings() workspace.Settings
	Now() time.Time
}

// Open returns the friction log of s; agent names the writer in the
// lock's holder record, or to a waiter that gives up.
func Open(s Keeper, agent string) *Log {
	return &Log{Storage: s.FrictionDoc(), Agent: agent, Timeout: time.Duration(s.Settings().LockTimeout), Now: s.Now}
}

// ConfigOf is the detectors' configuration the settings give, on every
// store.
func ConfigOf(f workspace.FrictionSettings) Config {
	return Config{RevisionLimit: f.RevisionLimit, ReviewerRepeats: f.ReviewerRepeats, FailureRepeats: f.FailureRepeats,
		TimeoutLow: time.Duration(f.TimeoutLow), TimeoutMedium: time.Duration(f.TimeoutMedium), TimeoutHigh: time.Duration(f.TimeoutHigh)}
}

// Recorded is the event `friction_recorded <task> <friction_id>
// type=T occurrences=N new=true|false` that notes entry e, recorded or
// merged (isNew false); Keeper.NoteFriction names the task.
func Recorded(e Entry, isNew bool) workspace.Event {
	return workspace.Event{Name: "friction_recorded", Args: []string{e.ID}, Attrs: map[string]string{
		"type": e.Type, "occurrences": strconv.Itoa(e.Occurrences), "new": strconv.FormatBool(isNew)}}
}

// observed are the events the detectors read.
var observed = map[string]bool{
	EventPlanRevisionNeeded: true, EventCheckpointRevisionNeeded: true,
	EventReviewIssues: true, EventWorkFailed: true,
	EventOutputRejected: true, EventEscalated: true,
}

// Observations are the events of evs the detectors read, as
// observations, in order.
func Observations(evs []workspace.Event) []Observation {
	var obs []Observation
	for _, e := range evs {
		if observed[e.Name] {
			obs = append(obs, Observation{At: e.Time, TaskID: e.TaskID, Event: e.Name, Args: e.Args, Attrs: e.Attrs})
		}
	}
	return obs
}

// ObserveEvents is what a daemon does with the events of a commit: it
// shows the detectors the ones they read (Observations), records what
// they find in s's friction log as agent, and notes every entry recorded
// or merged as friction_recorded in the events of the tasks that caused
// it. now is the log's clock (an entry stamped at or after it is new).
// The entries are returned with the log's error, if any.
func ObserveEvents(ctx context.Context, s Keeper, agent string, evs []workspace.Event, now time.Time) ([]Entry, error) {
	obs := Observations(evs)
	if len(obs) == 0 {
		return nil, nil
	}
	entries, err := Open(s, agent).Observe(ctx, obs, ConfigOf(s.Settings().Friction))
	tasks := make([]string, len(obs))
	for i, o := range obs {
		tasks[i] = o.TaskID
	}
	note(ctx, s, entries, now, tasks)
	return entries, err
}

// RecordTimeouts records a timeout finding for each subtask of items in
// progress longer than its complexity allows, as ObserveEvents records
// what a commit shows.
func RecordTimeouts(ctx context.Context, s Keeper, agent string, items []workspace.InProgress, now time.Time) ([]Entry, error) {
	fs := DetectTimeouts(items, now, ConfigOf(s.Settings().Friction))
	if len(fs) == 0 {
		return nil, nil
	}
	entries, err := Open(s, agent).Record(ctx, fs)
	tasks := make([]string, len(fs))
	for i, f := range fs {
		tasks[i] = f.TaskID
	}
	note(ctx, s, entries, now, tasks)
	return entries, err
}

// note notes each entry in the events of those of tasks it is about; an
// entry stamped at or after since is new.
func note(ctx context.Context, s Keeper, entries []Entry, since time.Time, tasks []string) {
	for _, e := range entries {
		var ts []string
		for _, t := range e.AffectedTasks {
			if slices.Contains(tasks, t) {
				ts = append(ts, t)
			}
		}
		s.NoteFriction(ctx, Recorded(e, !e.Timestamp.Before(since)), ts)
	}
}
