package workspace

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/workspaced/workspaced/friction"
)

// Config is the detectors' configuration these settings give, on every
// store.
func (f FrictionSettings) Config() friction.Config {
	return friction.Config{RevisionLimit: f.RevisionLimit, ReviewerRepeats: f.ReviewerRepeats, FailureRepeats: f.FailureRepeats,
		TimeoutLow: time.Duration(f.TimeoutLow), TimeoutMedium: time.Duration(f.TimeoutMedium), TimeoutHigh: time.Duration(f.TimeoutHigh)}
}

// FrictionRecorded is the event `friction_recorded <task> <friction_id>
// type=T occurrences=N new=true|false` that notes entry e, recorded or
// merged (isNew false), in the events of task.
func FrictionRecorded(e friction.Entry, isNew bool, task string) Event {
	return Event{Name: "friction_recorded", TaskID: task, Args: []string{e.ID}, Attrs: map[string]string{
		"type": e.Type, "occurrences": strconv.Itoa(e.Occurrences), "new": strconv.FormatBool(isNew)}}
}

// frictionEvents are the events the friction detectors read.
var frictionEvents = map[string]bool{
	friction.EventPlanRevisionNeeded: true, friction.EventCheckpointRevisionNeeded: true,
	friction.EventReviewIssues: true, friction.EventWorkFailed: true,
	friction.EventOutputRejected: true, friction.EventEscalated: true,
}

// FrictionObservations are the events of evs the friction detectors read,
// as observations, in order.
func FrictionObservations(evs []Event) []friction.Observation {
	var obs []friction.Observation
	for _, e := range evs {
		if frictionEvents[e.Name] {
			obs = append(obs, friction.Observation{At: e.Time, TaskID: e.TaskID, Event: e.Name, Args: e.Args, Attrs: e.Attrs})
		}
	}
	return obs
}

// ObserveFriction is what a daemon does with the events of a commit: it
// shows the detectors the ones they read (FrictionObservations), records
// what they find in s's friction log as agent, and notes every entry
// recorded or merged as friction_recorded in the events of the tasks that
// caused it. now is the log's clock (an entry stamped at or after it is
// new). The entries are returned with the log's error, if any.
func ObserveFriction(ctx context.Context, s FrictionStore, agent string, evs []Event, now time.Time) ([]friction.Entry, error) {
	obs := FrictionObservations(evs)
	if len(obs) == 0 {
		return nil, nil
	}
	entries, err := s.Friction(ctx, agent).Observe(ctx, obs, s.FrictionConfig(ctx))
	tasks := make([]string, len(obs))
	for i, o := range obs {
		tasks[i] = o.TaskID
	}
	noteFriction(ctx, s, entries, now, tasks)
	return entries, err
}

// RecordTimeouts records a timeout finding for each subtask of items in
// progress longer than its complexity allows, as ObserveFriction records
// what a commit shows.
func RecordTimeouts(ctx context.Context, s FrictionStore, agent string, items []friction.InProgress, now time.Time) ([]friction.Entry, error) {
	fs := friction.DetectTimeouts(items, now, s.FrictionConfig(ctx))
	if len(fs) == 0 {
		return nil, nil
	}
	entries, err := s.Friction(ctx, agent).Record(ctx, fs)
	tasks := make([]string, len(fs))
	for i, f := range fs {
		tasks[i] = f.TaskID
	}
	noteFriction(ctx, s, entries, now, tasks)
	return entries, err
}

// noteFriction notes each entry in the events of those of tasks it is
// about; an entry stamped at or after since is new.
func noteFriction(ctx context.Context, s FrictionStore, entries []friction.Entry, since time.Time, tasks []string) {
	for _, e := range entries {
		var ts []string
		for _, t := range e.AffectedTasks {
			if slices.Contains(tasks, t) {
				ts = append(ts, t)
			}
		}
		s.NoteFriction(ctx, e, !e.Timestamp.Before(since), ts)
	}
}
