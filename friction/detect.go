package friction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Defaults of Config (the same as workspace.json's friction settings).
const (
	DefaultRevisionLimit   = 2
	DefaultReviewerRepeats = 3
	DefaultFailureRepeats  = 2
	DefaultTimeoutLow      = 30 * time.Minute
	DefaultTimeoutMedium   = 2 * time.Hour
	DefaultTimeoutHigh     = 8 * time.Hour
)

// Events the detectors look at, as named in events.log. Every other event
// is ignored.
const (
	EventPlanRevisionNeeded       = "plan_revision_needed"
	EventCheckpointRevisionNeeded = "checkpoint_revision_needed"
	EventReviewIssues             = "review_issues"
	EventWorkFailed               = "work_failed"
	EventOutputRejected           = "output_rejected"
	EventEscalated                = "escalated"
)

// Config holds the detectors' thresholds. A zero or negative field means
// its default (see WithDefaults).
type Config struct {
	// RevisionLimit is how many times a plan (or checkpoint) is sent back
	// before it is friction.
	RevisionLimit int
	// ReviewerRepeats is in how many reviews the same normalised problem
	// must appear before it is friction.
	ReviewerRepeats int
	// FailureRepeats is how many failed or rejected pieces of work must
	// share a normalised cause before it is friction.
	FailureRepeats int
	// TimeoutLow, TimeoutMedium and TimeoutHigh bound how long a subtask of
	// each estimated complexity may stay in progress.
	TimeoutLow, TimeoutMedium, TimeoutHigh time.Duration
}

// DefaultConfig returns the default thresholds: revision limit 2, reviewer
// repeats 3, failure repeats 2, timeouts 30m / 2h / 8h.
func DefaultConfig() Config {
	return Config{
		RevisionLimit:   DefaultRevisionLimit,
		ReviewerRepeats: DefaultReviewerRepeats,
		FailureRepeats:  DefaultFailureRepeats,
		TimeoutLow:      DefaultTimeoutLow,
		TimeoutMedium:   DefaultTimeoutMedium,
		TimeoutHigh:     DefaultTimeoutHigh,
	}
}

// WithDefaults returns c with every zero or negative field set to its
// default.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.RevisionLimit <= 0 {
		c.RevisionLimit = d.RevisionLimit
	}
	if c.ReviewerRepeats <= 0 {
		c.ReviewerRepeats = d.ReviewerRepeats
	}
	if c.FailureRepeats <= 0 {
		c.FailureRepeats = d.FailureRepeats
	}
	if c.TimeoutLow <= 0 {
		c.TimeoutLow = d.TimeoutLow
	}
	if c.TimeoutMedium <= 0 {
		c.TimeoutMedium = d.TimeoutMedium
	}
	if c.TimeoutHigh <= 0 {
		c.TimeoutHigh = d.TimeoutHigh
	}
	return c
}

// Observation is one event the daemon has just emitted, as the detectors
// see it. Args are the event's positional arguments after the task id;
// Attrs its key=value pairs.
//
// The attributes read, by event:
//   - plan_revision_needed, checkpoint_revision_needed: revision_count
//     (when missing or not a number, the detector counts the events
//     itself), plan_id, reviewer.
//   - review_issues: problems (the review's problems joined by "\n"),
//     type, reviewer, and optionally review (the review id: a review seen
//     twice is then counted once).
//   - work_failed: Args [subtask, worker], error.
//   - output_rejected: reason, agent.
//   - escalated: reason, agent.
type Observation struct {
	// At is when the event happened; the detectors count events, not
	// time, so it is informational.
	At     time.Time
	TaskID string
	Event  string
	Args   []string
	Attrs  map[string]string
}

// Finding is one piece of friction a detector found, ready for Log.Record.
type Finding struct {
	// Type is one of the entry types.
	Type string
	// TaskID is the task whose event produced the finding.
	TaskID string
	// Tasks are further tasks the finding concerns (for a pattern that
	// reached its threshold: every task where it was seen). TaskID need
	// not be repeated here.
	Tasks []string
	// Description says what happened, for a person.
	Description string
	// Pattern is the normalised pattern entries are deduplicated on.
	Pattern string
	// SuggestedAction says what a person could do about it.
	SuggestedAction string
	// Occurrences is how many occurrences the finding stands for; zero
	// means one.
	Occurrences int
	// Once, when set, makes the finding count once per task: Log.Record
	// drops a finding whose (TaskID, Once) it has recorded before, and
	// remembers it in the tally. DetectTimeouts sets it so a subtask
	// that stays late is reported once, not at every scan.
	Once string
}

// Tally is the detectors' running memory across tasks, kept in
// friction.json under "tally" so that thresholds survive restarts. Detect
// never mutates the Tally it is given: it works on a deep copy (Clone).
type Tally struct {
	// Failures counts failed or rejected work by normalised cause.
	Failures map[string]Count `json:"failures,omitempty"`
	// Problems counts review problems by normalised problem.
	Problems map[string]Count `json:"problems,omitempty"`
	// Tasks holds per-task memory, by task id.
	Tasks map[string]TaskTally `json:"tasks,omitempty"`
}

// Count is how often one normalised problem or cause has been seen, and
// where.
type Count struct {
	// Count is the number of reviews (or failures) that carried it.
	Count int `json:"count"`
	// Tasks are the tasks where it was seen, sorted, without duplicates.
	Tasks []string `json:"tasks"`
	// Reviews are the "<task>/<review>" ids already counted (only for
	// reviews that named their id), sorted, without duplicates.
	Reviews []string `json:"reviews,omitempty"`
}

// TaskTally is the detectors' memory of one task.
type TaskTally struct {
	// Revisions counts revisions by what was sent back ("plan",
	// "checkpoint") when the events did not carry a revision_count.
	Revisions map[string]int `json:"revisions,omitempty"`
	// Reported are the once-only findings already recorded for the task
	// ("revision:plan", "timeout:st_3@<started>"), sorted.
	Reported []string `json:"reported,omitempty"`
}

// Clone returns a deep copy of t.
func (t Tally) Clone() Tally {
	var c Tally
	if t.Failures != nil {
		c.Failures = make(map[string]Count, len(t.Failures))
		for k, v := range t.Failures {
			c.Failures[k] = v.clone()
		}
	}
	if t.Problems != nil {
		c.Problems = make(map[string]Count, len(t.Problems))
		for k, v := range t.Problems {
			c.Problems[k] = v.clone()
		}
	}
	if t.Tasks != nil {
		c.Tasks = make(map[string]TaskTally, len(t.Tasks))
		for k, v := range t.Tasks {
			c.Tasks[k] = TaskTally{Revisions: maps.Clone(v.Revisions), Reported: slices.Clone(v.Reported)}
		}
	}
	return c
}

func (c Count) clone() Count {
	return Count{Count: c.Count, Tasks: slices.Clone(c.Tasks), Reviews: slices.Clone(c.Reviews)}
}

// reported reports whether the once-key was recorded for task.
func (t *Tally) reported(task, key string) bool {
	_, ok := slices.BinarySearch(t.Tasks[task].Reported, key)
	return ok
}

// report records the once-key for task; t must be owned by the caller.
func (t *Tally) report(task, key string) {
	if t.Tasks == nil {
		t.Tasks = map[string]TaskTally{}
	}
	tt := t.Tasks[task]
	tt.Reported = mergeSorted(tt.Reported, key)
	t.Tasks[task] = tt
}

// Detect runs every detector over one observation. It returns the new
// tally and the findings, in a fixed order. Detect is pure: it does no I/O
// and does not modify t (the returned Tally shares no memory with it).
//
//   - repeated_revision: the plan (or a checkpoint) of a task sent back for
//     revision RevisionLimit times or more; found once per task and kind.
//   - reviewer_pattern: a normalised review problem counted in
//     ReviewerRepeats distinct reviews, across tasks. The finding at the
//     threshold names every task seen so far with that many occurrences;
//     every later review with the problem gives a finding of one more
//     occurrence.
//   - worker_failure: work_failed errors and output_rejected reasons
//     sharing a normalised cause FailureRepeats times, counted and
//     reported the same way.
//   - escalation: every escalated event.
func Detect(t Tally, obs Observation, cfg Config) (Tally, []Finding) {
	t = t.Clone()
	fs := detect(&t, obs, cfg)
	return t, fs
}

// detect is Detect on a tally the caller owns.
func detect(t *Tally, obs Observation, cfg Config) []Finding {
	cfg = cfg.WithDefaults()
	if obs.TaskID == "" {
		return nil
	}
	switch obs.Event {
	case EventPlanRevisionNeeded:
		return detectRevision(t, obs, cfg, "plan")
	case EventCheckpointRevisionNeeded:
		return detectRevision(t, obs, cfg, "checkpoint")
	case EventReviewIssues:
		return detectReviewer(t, obs, cfg)
	case EventWorkFailed:
		what := "work"
		if len(obs.Args) > 0 && obs.Args[0] != "" {
			what = "subtask " + obs.Args[0]
		}
		if len(obs.Args) > 1 && obs.Args[1] != "" {
			what += " (worker " + obs.Args[1] + ")"
		}
		return detectFailure(t, obs, cfg, obs.Attrs["error"], what+" failed")
	case EventOutputRejected:
		what := "an output"
		if a := obs.Attrs["agent"]; a != "" {
			what += " of " + a
		}
		return detectFailure(t, obs, cfg, obs.Attrs["reason"], what+" was rejected")
	case EventEscalated:
		return detectEscalation(obs)
	}
	return nil
}

func detectRevision(t *Tally, obs Observation, cfg Config, kind string) []Finding {
	n, err := strconv.Atoi(strings.TrimSpace(obs.Attrs["revision_count"]))
	if err != nil || n < 0 {
		// No usable count on the event: count the events ourselves.
		if t.Tasks == nil {
			t.Tasks = map[string]TaskTally{}
		}
		tt := t.Tasks[obs.TaskID]
		if tt.Revisions == nil {
			tt.Revisions = map[string]int{}
		}
		tt.Revisions[kind]++
		n = tt.Revisions[kind]
		t.Tasks[obs.TaskID] = tt
	}
	once := "revision:" + kind
	if n < cfg.RevisionLimit || t.reported(obs.TaskID, once) {
		return nil
	}
	t.report(obs.TaskID, once)
	desc := fmt.Sprintf("The %s of task %s was sent back for revision %s", kind, obs.TaskID, times(n))
	var extra []string
	if p := obs.Attrs["plan_id"]; p != "" {
		extra = append(extra, "plan "+p)
	}
	if r := obs.Attrs["reviewer"]; r != "" {
		extra = append(extra, "reviewer "+r)
	}
	if len(extra) > 0 {
		desc += " (" + strings.Join(extra, ", ") + ")"
	}
	action := "Review the planner's prompt and the task's description: its plans are sent back repeatedly. " +
		"Compare the reviews in tasks/" + obs.TaskID + "/reviews/ to see what the reviewer keeps asking for."
	if kind == "checkpoint" {
		action = "Review the workers' instructions for this kind of task: their work is sent back at checkpoints repeatedly. " +
			"Compare the reviews in tasks/" + obs.TaskID + "/reviews/ to see what the reviewer keeps asking for."
	}
	return []Finding{{
		Type:            TypeRepeatedRevision,
		TaskID:          obs.TaskID,
		Description:     desc + ".",
		Pattern:         fmt.Sprintf("%s sent back for revision %d+ times", kind, cfg.RevisionLimit),
		SuggestedAction: action,
	}}
}

func detectReviewer(t *Tally, obs Observation, cfg Config) []Finding {
	review := ""
	if id := obs.Attrs["review"]; id != "" {
		review = obs.TaskID + "/" + id
	}
	// One review counts each distinct problem once, in first-seen order.
	var problems []string
	raw := map[string]string{}
	for line := range strings.SplitSeq(obs.Attrs["problems"], "\n") {
		p := Normalize(line)
		if p == "" {
			continue
		}
		if _, dup := raw[p]; dup {
			continue
		}
		raw[p] = strings.TrimSpace(listMarker.ReplaceAllString(strings.TrimSpace(line), ""))
		problems = append(problems, p)
	}
	if t.Problems == nil && len(problems) > 0 {
		t.Problems = map[string]Count{}
	}
	var out []Finding
	for _, p := range problems {
		c := t.Problems[p]
		if review != "" {
			if _, seen := slices.BinarySearch(c.Reviews, review); seen {
				continue
			}
			c.Reviews = mergeSorted(c.Reviews, review)
		}
		c.Count++
		c.Tasks = mergeSorted(c.Tasks, obs.TaskID)
		t.Problems[p] = c
		if c.Count < cfg.ReviewerRepeats {
			continue
		}
		who := "the reviewer"
		if r := obs.Attrs["reviewer"]; r != "" {
			who = "reviewer " + r
		}
		f := Finding{
			Type:    TypeReviewerPattern,
			TaskID:  obs.TaskID,
			Pattern: p,
			Description: fmt.Sprintf("The same review problem came up in %s across %s (latest by %s in task %s): %q.",
				count(c.Count, "review", "reviews"), count(len(c.Tasks), "task", "tasks"), who, obs.TaskID, raw[p]),
			SuggestedAction: "Tell the agents whose work is reviewed about this recurring problem (add it to their prompt or checklist), " +
				"or check whether the reviewer's expectation is the right one.",
			Occurrences: 1,
		}
		if c.Count == cfg.ReviewerRepeats {
			f.Tasks = slices.Clone(c.Tasks)
			f.Occurrences = c.Count
		}
		out = append(out, f)
	}
	return out
}

func detectFailure(t *Tally, obs Observation, cfg Config, cause, what string) []Finding {
	p := Normalize(cause)
	if p == "" {
		p = "no cause given"
	}
	if t.Failures == nil {
		t.Failures = map[string]Count{}
	}
	c := t.Failures[p]
	c.Count++
	c.Tasks = mergeSorted(c.Tasks, obs.TaskID)
	t.Failures[p] = c
	if c.Count < cfg.FailureRepeats {
		return nil
	}
	f := Finding{
		Type:    TypeWorkerFailure,
		TaskID:  obs.TaskID,
		Pattern: p,
		Description: fmt.Sprintf("%s of failed or rejected work across %s came from one cause (latest: in task %s, %s): %q.",
			count(c.Count, "piece", "pieces"), count(len(c.Tasks), "task", "tasks"), obs.TaskID, what, strings.TrimSpace(cause)),
		SuggestedAction: "Look at what the workers are missing for this cause (a tool, a permission, an instruction, an input the plan does not give them) " +
			"and fix it once for every task rather than retrying.",
		Occurrences: 1,
	}
	if c.Count == cfg.FailureRepeats {
		f.Tasks = slices.Clone(c.Tasks)
		f.Occurrences = c.Count
	}
	return []Finding{f}
}

func detectEscalation(obs Observation) []Finding {
	reason := strings.TrimSpace(obs.Attrs["reason"])
	p := Normalize(reason)
	if p == "" {
		p = "no reason given"
	}
	who := "An agent"
	if a := obs.Attrs["agent"]; a != "" {
		who = "Agent " + a
	}
	desc := fmt.Sprintf("%s escalated task %s to a human", who, obs.TaskID)
	if reason != "" {
		desc += fmt.Sprintf(": %q", reason)
	}
	return []Finding{{
		Type:        TypeEscalation,
		TaskID:      obs.TaskID,
		Description: desc + ".",
		Pattern:     p,
		SuggestedAction: "Answer the escalation in the task, then decide whether the agents could settle this kind of question themselves " +
			"(a rule in their prompt, a capability, a clearer task description).",
	}}
}

// DetectTimeouts returns a timeout finding for every subtask in progress
// for longer than its estimated complexity allows (strictly longer than
// cfg.TimeoutLow, TimeoutMedium or TimeoutHigh; an unknown complexity
// counts as medium; a zero StartedAt is skipped). Each finding carries a
// Once key naming the subtask and its start, so Log.Record reports one
// overrun once however often it is scanned, and a retry that overruns
// again is reported again. DetectTimeouts is pure.
func DetectTimeouts(items []workspace.InProgress, now time.Time, cfg Config) []Finding {
	cfg = cfg.WithDefaults()
	var out []Finding
	for _, it := range items {
		if it.TaskID == "" || it.StartedAt.IsZero() {
			continue
		}
		complexity := strings.ToLower(strings.TrimSpace(it.Complexity))
		var limit time.Duration
		switch complexity {
		case "low":
			limit = cfg.TimeoutLow
		case "high":
			limit = cfg.TimeoutHigh
		default:
			complexity = "medium"
			limit = cfg.TimeoutMedium
		}
		took := now.Sub(it.StartedAt)
		if took <= limit {
			continue
		}
		out = append(out, Finding{
			Type:   TypeTimeout,
			TaskID: it.TaskID,
			Description: fmt.Sprintf("Subtask %s of task %s (estimated %s complexity) has been in progress for %s, over the %s allowed.",
				it.SubtaskID, it.TaskID, complexity, vocab.Duration(took.Truncate(time.Minute)), vocab.Duration(limit)),
			Pattern: fmt.Sprintf("subtask of %s complexity in progress over %s", complexity, limit),
			SuggestedAction: "Check on the worker of this subtask (is it stuck or gone?) and whether " + complexity +
				" is the right estimate; split such subtasks in the plan, or raise the friction timeout in workspace.json if they just take longer.",
			Once: "timeout:" + it.SubtaskID + "@" + it.StartedAt.UTC().Format(time.RFC3339Nano),
		})
	}
	return out
}

// times says "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// count says "1 review" or "N reviews".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
