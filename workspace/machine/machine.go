package machine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/statecheck"
)

// Task phases (state.json phase).
const (
	PhasePlanning                 = "planning"
	PhasePlanReview               = "plan_review"
	PhaseWorkInProgress           = "work_in_progress"
	PhaseAwaitingCheckpointReview = "awaiting_checkpoint_review"
	PhaseCompleted                = "completed"
	PhaseFailed                   = "failed"
	PhaseCancelled                = "cancelled"
)

// Plan statuses (state.json plan_status).
const (
	PlanNone           = "none"
	PlanProposed       = "proposed"
	PlanApproved       = "approved"
	PlanRevisionNeeded = "revision_needed"
)

// Subtask statuses.
const (
	SubtaskBlocked    = "blocked"
	SubtaskPending    = "pending"
	SubtaskInProgress = "in_progress"
	SubtaskCompleted  = "completed"
	SubtaskFailed     = "failed"
)

// Checkpoint statuses.
const (
	CheckpointPending        = "pending"
	CheckpointAwaitingReview = "awaiting_review"
	CheckpointApproved       = "approved"
	CheckpointRevisionNeeded = "revision_needed"
)

// Worker statuses.
const (
	WorkerAvailable = "available"
	WorkerBusy      = "busy"
)

// Review types and verdicts.
const (
	ReviewPlan       = "plan_review"
	ReviewCheckpoint = "checkpoint_review"
	ReviewOutput     = "output_review"

	VerdictApproved       = "approved"
	VerdictRevisionNeeded = "revision_needed"
	VerdictRejected       = "rejected"
)

// Done marker statuses.
const (
	DoneCompleted = "completed"
	DoneFailed    = "failed"
	DoneCancelled = "cancelled"
)

// Event names the machine emits, as they appear in events.log.
const (
	EventPlanReady                = "plan_ready"
	EventPlanApproved             = "plan_approved"
	EventPlanRevisionNeeded       = "plan_revision_needed"
	EventReviewIssues             = "review_issues"
	EventReviewRecorded           = "review_recorded"
	EventWorkAssigned             = "work_assigned"
	EventWorkCompleted            = "work_completed"
	EventWorkFailed               = "work_failed"
	EventWorkUnblocked            = "work_unblocked"
	EventCheckpointReached        = "checkpoint_reached"
	EventCheckpointApproved       = "checkpoint_approved"
	EventCheckpointRevisionNeeded = "checkpoint_revision_needed"
	EventTaskCompleted            = "task_completed"
	EventTaskFailed               = "task_failed"
	EventTaskCancelled            = "task_cancelled"
	EventOutputRejected           = "output_rejected"
	EventClaimRefused             = "claim_refused"
	EventMarkerRefused            = "marker_refused"
	EventEscalated                = "escalated"
)

// Init returns the state of a task nobody has planned yet: status
// planning, plan_status none, empty (non-nil) maps and errors, last_updated
// the task's creation time and journal_seq 0.
func Init(task workspace.Task) workspace.State {
	return workspace.State{
		TaskID:      task.ID,
		PlanStatus:  PlanNone,
		Status:      vocab.StatusPlanning,
		Phase:       PhasePlanning,
		LastUpdated: task.CreatedAt.UTC(),
		Subtasks:    map[string]*workspace.SubtaskState{},
		Checkpoints: map[string]*workspace.CheckpointState{},
		Workers:     map[string]*workspace.WorkerState{},
		Errors:      []workspace.StateError{},
	}
}

// Apply folds one journal record into st and returns the new state and
// the events to append to events.log, in order.
//
// plan is the plan whose id and version st tracks (nil before any plan was
// accepted); a record proposing a plan carries it in rec.Plan. Use Step to
// also learn which plan the new state tracks.
//
// Apply is pure: it never mutates st, plan or rec, shares no mutable
// memory between its result and its input, reads no clock (every time it
// writes is rec.TakenAt in UTC) and never panics on any record. A record
// whose seq is not past st.JournalSeq returns st unchanged and no events,
// so a replay may safely start before the state's position. Every other
// record sets journal_seq and last_updated. A record the state cannot
// take is refused, not failed: it adds a StateError and an event and
// changes nothing else.
func Apply(st workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) (workspace.State, []workspace.Event) {
	next, _, events := Step(st, plan, rec)
	return next, events
}

// Step is Apply that also returns the plan the new state tracks: rec.Plan
// when the record's plan was accepted, plan otherwise. A daemon folding
// records one by one passes the returned plan to the next Step.
func Step(st workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) (workspace.State, *workspace.Plan, []workspace.Event) {
	st, plan, events, _ := step(st, plan, rec)
	return st, plan, events
}

// step is Step that also returns the tally the step kept of the new
// state, so that the tests can check it against a fresh count.
func step(st workspace.State, plan *workspace.Plan, rec workspace.JournalRecord) (workspace.State, *workspace.Plan, []workspace.Event, *tally) {
	t := &tally{}
	if rec.Seq <= st.JournalSeq {
		return st, plan, nil, t
	}
	st = clone(st)
	plan, events := stepOwned(&st, plan, nil, rec, t, nil)
	return st, plan, events, t
}

// stepOwned applies rec to a state the caller owns, in place: its maps
// and pointers must not be shared with anything the caller was given. t
// is the tally of st, kept across the records of one fold. amended is the
// plan of the amendment awaiting review, when the state has one and rec
// may review it (nil otherwise). changed, when set, collects the entries
// rec changes.
func stepOwned(st *workspace.State, plan, amended *workspace.Plan, rec workspace.JournalRecord, t *tally, changed *statecheck.Changed) (*workspace.Plan, []workspace.Event) {
	if rec.Seq <= st.JournalSeq {
		return plan, nil
	}
	a := &applier{st: st, plan: plan, amended: amended, rec: rec, at: rec.TakenAt.UTC(), t: t, changed: changed}
	a.st.JournalSeq = rec.Seq
	a.st.LastUpdated = a.at
	a.apply()
	if a.adopted != nil {
		plan = a.adopted
	}
	return plan, a.events
}

// Replay folds recs, in journal order, over the initial state of task. It
// is Continue from Init(task).
func Replay(task workspace.Task, plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord) (workspace.State, []workspace.Event, error) {
	return Continue(Init(task), plans, recs)
}

// Continue folds recs, in journal order, over st (typically a state.json
// restored from disk or a backup), skipping records at or before its
// journal_seq. The plan a proposal carries is tracked from its record;
// when st already tracks a plan version that no record carried, plans
// loads it (plans may be nil when st tracks none), as it loads the
// version of an amendment awaiting review when a plan review comes. The only error is a
// plan that cannot be loaded or is not the one st names; the state and
// events returned with it are those of the records folded before.
func Continue(st workspace.State, plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord) (workspace.State, []workspace.Event, error) {
	return continueFold(st, plans, recs, nil)
}

// continueFold is Continue that calls after, when set, once each record is
// applied, with the record, the state and the tally the fold keeps of it,
// so that the tests can check the tally against a fresh count at every
// step.
func continueFold(st workspace.State, plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord,
	after func(workspace.JournalRecord, *workspace.State, *tally)) (workspace.State, []workspace.Event, error) {
	// One copy for the whole fold: the records then change it in place,
	// and one tally of it.
	st = clone(st)
	_, events, err := foldOwned(&st, nil, plans, recs, &tally{}, nil, after)
	return st, events, err
}

// foldOwned folds recs into *st, a state the caller owns, in place (see
// stepOwned), starting from plan (the plan st tracks, or nil when it is
// to be loaded), with t the tally of st; it notes in changed, when set,
// the entries it changes. It returns the plan st tracks when known.
func foldOwned(st *workspace.State, plan *workspace.Plan, plans func(version int) (*workspace.Plan, error), recs []workspace.JournalRecord,
	t *tally, changed *statecheck.Changed, after func(workspace.JournalRecord, *workspace.State, *tally)) (*workspace.Plan, []workspace.Event, error) {
	var events []workspace.Event
	for _, rec := range recs {
		if rec.Seq <= st.JournalSeq {
			continue
		}
		needed := rec.Rejected == "" && !vocab.Finished(st.Status) && st.PlanVersion > 0
		if needed && (plan == nil || plan.ID != st.PlanID || plan.Version != st.PlanVersion) {
			if plans == nil {
				return plan, events, fmt.Errorf("record %d: state tracks plan %s v%d but no plan loader was given", rec.Seq, st.PlanID, st.PlanVersion)
			}
			p, err := plans(st.PlanVersion)
			if err != nil {
				return plan, events, fmt.Errorf("record %d: load plan %s v%d: %w", rec.Seq, st.PlanID, st.PlanVersion, err)
			}
			if p == nil || p.ID != st.PlanID || p.Version != st.PlanVersion {
				got := "nothing"
				if p != nil {
					got = fmt.Sprintf("plan %s v%d", p.ID, p.Version)
				}
				return plan, events, fmt.Errorf("record %d: load plan %s v%d: got %s", rec.Seq, st.PlanID, st.PlanVersion, got)
			}
			plan = p
		}
		var amended *workspace.Plan
		if am := st.Amendment; needed && am != nil && rec.Review != nil && rec.Review.Type == ReviewPlan && plans != nil {
			p, err := plans(am.Version)
			if err != nil || p == nil || p.ID != st.PlanID || p.Version != am.Version {
				return plan, events, fmt.Errorf("record %d: load amendment %s v%d: %v", rec.Seq, st.PlanID, am.Version, err)
			}
			amended = p
		}
		var ev []workspace.Event
		plan, ev = stepOwned(st, plan, amended, rec, t, changed)
		events = append(events, ev...)
		if after != nil {
			after(rec, st, t)
		}
	}
	return plan, events, nil
}

// applier carries one application of one record. st is a private deep
// copy that may be changed freely; checks come before changes so a refusal
// leaves it as it was.
type applier struct {
	st   *workspace.State
	plan *workspace.Plan
	// amended is the plan of the amendment awaiting review, loaded for a
	// plan review (nil otherwise).
	amended *workspace.Plan
	rec     workspace.JournalRecord
	at      time.Time
	events  []workspace.Event
	// adopted is the plan the state tracks from this record on, when
	// the record changed it.
	adopted *workspace.Plan
	t       *tally
	// changed, when set, collects the entries the record changes.
	changed *statecheck.Changed
}

// tally counts the subtasks of a state being folded, so that the checks
// every finished subtask runs (is any subtask blocked, does its worker
// hold another one, is every subtask completed) need not walk the whole
// task: folding a burst then costs what the burst changes, not that times
// the task's size. It is counted on first use within a fold and kept true
// by setStatus, the one way the machine changes a subtask's status; a plan
// approval, which makes the subtasks anew, has it counted again.
type tally struct {
	counted                        bool
	blocked, inProgress, completed int
	held                           map[string]int // in_progress subtasks by worker
	plan                           *workspace.Plan
	planIDs                        int // the distinct subtask ids of plan
}

// tally returns the tally of the state, counting it if needed.
func (a *applier) tally() *tally {
	t := a.t
	if !t.counted {
		*t = tally{counted: true, held: map[string]int{}, plan: t.plan, planIDs: t.planIDs}
		for _, ss := range a.st.Subtasks {
			if ss != nil {
				t.add(ss, 1)
			}
		}
	}
	return t
}

// add adds n (1 or -1) subtasks like ss to the tally.
func (t *tally) add(ss *workspace.SubtaskState, n int) {
	switch ss.Status {
	case SubtaskBlocked:
		t.blocked += n
	case SubtaskInProgress:
		t.inProgress += n
		t.held[ss.Worker] += n
	case SubtaskCompleted:
		t.completed += n
	}
}

// holds reports whether agent holds an in_progress subtask.
func (a *applier) holds(agent string) bool {
	return a.tally().held[agent] > 0
}

// setStatus changes the status of ss, keeping the tally true. The worker
// of an in_progress subtask is set before it and cleared after it.
func (a *applier) setStatus(ss *workspace.SubtaskState, status string) {
	if t := a.t; t.counted {
		t.add(ss, -1)
		ss.Status = status
		t.add(ss, 1)
		return
	}
	ss.Status = status
}

// allCompleted reports whether every subtask of the plan is completed.
func (a *applier) allCompleted() bool {
	t := a.tally()
	if t.plan != a.plan {
		ids := make(map[string]bool, len(a.plan.Subtasks))
		for _, s := range a.plan.Subtasks {
			ids[s.ID] = true
		}
		t.plan, t.planIDs = a.plan, len(ids)
	}
	// Fewer completed subtasks than the plan has ids: one is not, and
	// only the last ones to complete pay for the walk below.
	if t.completed < t.planIDs {
		return false
	}
	for _, s := range a.plan.Subtasks {
		if ss := a.st.Subtasks[s.ID]; ss == nil || ss.Status != SubtaskCompleted {
			return false
		}
	}
	return true
}

func (a *applier) apply() {
	rec := a.rec
	if rec.Rejected != "" {
		a.rejected()
		return
	}
	if rec.Kind == workspace.KindDone {
		defer a.escalations()
	}
	if vocab.Finished(a.st.Status) {
		a.refuse("task is " + a.st.Status)
		return
	}
	switch rec.Kind {
	case workspace.KindClaim:
		a.claim()
	case workspace.KindDone:
		switch {
		case rec.Marker.Status == DoneCancelled:
			a.cancel()
		case rec.Plan != nil && a.st.PlanStatus == PlanApproved:
			a.amend()
		case rec.Plan != nil:
			a.propose()
		case rec.Review != nil:
			a.review()
		case rec.Marker.SubtaskID != "":
			a.subtaskDone()
		default:
			a.refuse("done marker names no plan, review or subtask")
		}
	default:
		a.refuse(fmt.Sprintf("unknown record kind %q", rec.Kind))
	}
}

// emit appends an event at the record's time. A marker dropped with a
// token (Marker.Token) names it in every event it causes, beside the
// agent, as the events of entry writes do.
func (a *applier) emit(name string, args []string, attrs map[string]string) {
	if tok := a.rec.Marker.Token; workspace.ValidTokenID(tok) {
		named := make(map[string]string, len(attrs)+1)
		for k, v := range attrs {
			named[k] = v
		}
		named[workspace.EventToken] = tok
		attrs = named
	}
	a.events = append(a.events, workspace.Event{Time: a.at, Name: name, TaskID: a.st.TaskID, Args: args, Attrs: attrs})
}

// attrs builds an attribute map from key, value pairs, leaving out empty
// values; nil when nothing is left.
func attrs(kv ...string) map[string]string {
	var m map[string]string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if m == nil {
			m = map[string]string{}
		}
		m[kv[i]] = kv[i+1]
	}
	return m
}

func args(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (a *applier) addError(msg, kind string) {
	a.st.Errors = append(a.st.Errors, workspace.StateError{
		At: a.at, Seq: a.rec.Seq, Agent: a.rec.Marker.AgentID, SubtaskID: a.rec.Marker.SubtaskID, Message: msg, Kind: kind,
	})
}

// refuse records why the record was not applied.
func (a *applier) refuse(reason string) {
	name, kind := EventMarkerRefused, ""
	if a.rec.Kind == workspace.KindClaim {
		// A refused claim — most often a lost race — is the verdict on
		// one marker, not an error of the task.
		name, kind = EventClaimRefused, workspace.ErrorClaimRefused
	}
	a.addError(reason, kind)
	a.emit(name, args(a.rec.Marker.SubtaskID), attrs("agent", a.rec.Marker.AgentID, "reason", reason, "file", a.rec.File))
}

func (a *applier) rejected() {
	a.addError(a.rec.Rejected, "")
	a.emit(EventOutputRejected, args(a.rec.Marker.SubtaskID), attrs("agent", a.rec.Marker.AgentID, "reason", a.rec.Rejected, "file", a.rec.File))
}

func (a *applier) escalations() {
	m := a.rec.Marker
	if m.Escalate != "" {
		a.emit(EventEscalated, args(m.SubtaskID), attrs("agent", m.AgentID, "reason", m.Escalate))
	}
	if r := a.rec.Review; r != nil && r.Escalate != "" && r.Escalate != m.Escalate {
		a.emit(EventEscalated, args(r.Target), attrs("agent", reviewer(r, m), "reason", r.Escalate))
	}
}

// reviewer names the agent that acted on a review: the one whose done
// marker carried it. The reviewer the document names is only a fallback
// for a marker without an agent; it says who wrote the file (the CLI
// writes "cli" when given no agent), not who acted.
func reviewer(r *workspace.Review, m workspace.Marker) string {
	if m.AgentID != "" {
		return m.AgentID
	}
	return r.Reviewer
}

// seeWorker gives an agent that takes a subtask a workers entry. Only
// take calls it: the orchestrator proposing plans and the reviewers
// judging them are not workers.
func (a *applier) seeWorker(agent string) {
	if agent == "" {
		return
	}
	if _, ok := a.st.Workers[agent]; !ok {
		a.st.Workers[agent] = &workspace.WorkerState{Status: WorkerAvailable}
		a.changed.Worker(agent)
	}
}

// planReady reports whether the plan handed to the machine is the one the
// state tracks, refusing the record when it is not.
func (a *applier) planReady() bool {
	p := a.plan
	if p == nil || p.ID != a.st.PlanID || p.Version != a.st.PlanVersion {
		a.refuse(fmt.Sprintf("plan %s v%d is not available to the state machine", a.st.PlanID, a.st.PlanVersion))
		return false
	}
	return true
}

func (a *applier) cancel() {
	m := a.rec.Marker
	a.finish(vocab.StatusCancelled, PhaseCancelled)
	a.emit(EventTaskCancelled, nil, attrs("agent", m.AgentID, "reason", m.Error))
}

// finish moves the task to a final status; a finished task holds no
// worker busy.
func (a *applier) finish(status, phase string) {
	a.st.Status = status
	a.st.Phase = phase
	at := a.at
	a.st.CompletedAt = &at
	for id, w := range a.st.Workers {
		w.Status = WorkerAvailable
		w.CurrentTask = ""
		a.changed.Worker(id)
	}
}

func (a *applier) propose() {
	p := a.rec.Plan
	st := a.st
	if st.Status != vocab.StatusPlanning || st.PlanStatus == PlanApproved {
		a.refuse(fmt.Sprintf("plan %s v%d is already approved; the task is %s", st.PlanID, st.PlanVersion, st.Status))
		return
	}
	if err := checkPlan(p, st.TaskID); err != nil {
		a.refuse(fmt.Sprintf("plan %s v%d: %v", p.ID, p.Version, err))
		return
	}
	if p.Version < st.PlanVersion || (p.Version == st.PlanVersion && st.PlanStatus == PlanRevisionNeeded) {
		a.refuse(fmt.Sprintf("plan %s v%d is not newer than v%d, which was reviewed", p.ID, p.Version, st.PlanVersion))
		return
	}
	st.PlanID = p.ID
	st.PlanVersion = p.Version
	st.PlanStatus = PlanProposed
	st.Phase = PhasePlanReview
	a.adopted = p
	a.emit(EventPlanReady, []string{p.ID}, attrs("version", strconv.Itoa(p.Version), "agent", a.rec.Marker.AgentID))
}

func (a *applier) review() {
	r := a.rec.Review
	switch r.Verdict {
	case VerdictApproved, VerdictRevisionNeeded, VerdictRejected:
	default:
		a.refuse(fmt.Sprintf("review %s has unknown verdict %q", r.ID, r.Verdict))
		return
	}
	switch r.Type {
	case ReviewPlan:
		a.planReview(r)
	case ReviewCheckpoint:
		a.checkpointReview(r)
	case ReviewOutput:
		a.emit(EventReviewRecorded, []string{r.ID}, attrs("type", r.Type, "reviewer", reviewer(r, a.rec.Marker), "verdict", r.Verdict, "target", r.Target))
		a.issues(r)
	default:
		a.refuse(fmt.Sprintf("review %s has unknown type %q", r.ID, r.Type))
	}
}

func problems(r *workspace.Review) string {
	ps := make([]string, 0, len(r.Issues))
	for _, is := range r.Issues {
		ps = append(ps, is.Problem)
	}
	return strings.Join(ps, "\n")
}

// issues emits review_issues for a review that found any.
func (a *applier) issues(r *workspace.Review) {
	if len(r.Issues) == 0 {
		return
	}
	a.emit(EventReviewIssues, []string{r.ID}, attrs("type", r.Type, "reviewer", reviewer(r, a.rec.Marker), "problems", problems(r)))
}

func (a *applier) planReview(r *workspace.Review) {
	st := a.st
	if st.PlanStatus == PlanApproved && st.Amendment != nil {
		a.amendmentReview(r)
		return
	}
	if st.PlanStatus != PlanProposed {
		a.refuse(fmt.Sprintf("no plan awaits review (plan_status %s)", st.PlanStatus))
		return
	}
	if r.Verdict != VerdictApproved {
		st.PlanStatus = PlanRevisionNeeded
		st.RevisionCount++
		st.Phase = PhasePlanning
		a.emit(EventPlanRevisionNeeded, []string{st.PlanID}, attrs(
			"version", strconv.Itoa(st.PlanVersion), "verdict", r.Verdict,
			"revision_count", strconv.Itoa(st.RevisionCount),
			"reviewer", reviewer(r, a.rec.Marker), "issues", problems(r)))
		a.issues(r)
		return
	}
	if !a.planReady() {
		return
	}
	at := a.at
	st.PlanStatus = PlanApproved
	st.Status = vocab.StatusExecuting
	st.Phase = PhaseWorkInProgress
	st.StartedAt = &at
	st.Subtasks = make(map[string]*workspace.SubtaskState, len(a.plan.Subtasks))
	for _, s := range a.plan.Subtasks {
		ss := &workspace.SubtaskState{Status: SubtaskPending}
		if len(s.Dependencies) > 0 {
			ss.Status = SubtaskBlocked
			ss.BlockedBy = slices.Clone(s.Dependencies)
		}
		st.Subtasks[s.ID] = ss
	}
	a.t.counted = false
	st.Checkpoints = make(map[string]*workspace.CheckpointState, len(a.plan.Checkpoints))
	for _, c := range a.plan.Checkpoints {
		st.Checkpoints[c.ID] = &workspace.CheckpointState{Status: CheckpointPending}
	}
	a.changed.Everything()
	a.emit(EventPlanApproved, []string{st.PlanID}, attrs("version", strconv.Itoa(st.PlanVersion), "reviewer", reviewer(r, a.rec.Marker)))
	a.issues(r)
	a.advance()
}

func (a *applier) checkpointReview(r *workspace.Review) {
	st := a.st
	if st.Status != vocab.StatusExecuting {
		a.refuse(fmt.Sprintf("checkpoint review %s: the task is %s, not executing", r.ID, st.Status))
		return
	}
	cs := st.Checkpoints[r.Target]
	if cs == nil {
		a.refuse(fmt.Sprintf("checkpoint review %s: unknown checkpoint %q", r.ID, r.Target))
		return
	}
	if cs.Status != CheckpointAwaitingReview {
		a.refuse(fmt.Sprintf("checkpoint %s is %s, not awaiting_review", r.Target, cs.Status))
		return
	}
	if !a.planReady() {
		return
	}
	at := a.at
	a.changed.Checkpoint(r.Target)
	cs.ReviewedAt = &at
	cs.Review = r.ID
	if r.Verdict == VerdictApproved {
		cs.Status = CheckpointApproved
		a.emit(EventCheckpointApproved, []string{r.Target}, attrs("reviewer", reviewer(r, a.rec.Marker)))
		a.issues(r)
		a.advance()
		return
	}
	cs.Status = CheckpointRevisionNeeded
	st.RevisionCount++
	members := map[string]bool{}
	for _, c := range a.plan.Checkpoints {
		if c.ID == r.Target {
			for _, id := range c.Subtasks {
				members[id] = true
			}
		}
	}
	for id := range members {
		if ss := st.Subtasks[id]; ss != nil {
			a.changed.Subtask(id)
			a.setStatus(ss, SubtaskPending)
			*ss = workspace.SubtaskState{Status: SubtaskPending, Attempts: ss.Attempts}
		}
	}
	// Another checkpoint waiting on a subtask sent back must wait for it again.
	for _, c := range a.plan.Checkpoints {
		other := st.Checkpoints[c.ID]
		if c.ID == r.Target || other == nil || other.Status != CheckpointAwaitingReview {
			continue
		}
		for _, id := range c.Subtasks {
			if members[id] {
				a.changed.Checkpoint(c.ID)
				other.Status = CheckpointPending
				other.ReachedAt = nil
				break
			}
		}
	}
	a.reblock()
	st.Phase = PhaseWorkInProgress
	a.emit(EventCheckpointRevisionNeeded, []string{r.Target}, attrs(
		"verdict", r.Verdict, "revision_count", strconv.Itoa(st.RevisionCount),
		"reviewer", reviewer(r, a.rec.Marker), "issues", problems(r)))
	a.issues(r)
}

// reblock puts every not-yet-started subtask with an incomplete dependency
// back to blocked, and brings blocked_by lists up to date.
func (a *applier) reblock() {
	for _, s := range a.plan.Subtasks {
		ss := a.st.Subtasks[s.ID]
		if ss == nil || (ss.Status != SubtaskPending && ss.Status != SubtaskBlocked) {
			continue
		}
		if blockers := a.blockers(s); len(blockers) > 0 {
			a.changed.Subtask(s.ID)
			a.setStatus(ss, SubtaskBlocked)
			ss.BlockedBy = blockers
		}
	}
}

// blockers lists the dependencies of s that are not completed, in the
// plan's order.
func (a *applier) blockers(s workspace.Subtask) []string {
	var out []string
	for _, d := range s.Dependencies {
		if ds := a.st.Subtasks[d]; ds == nil || ds.Status != SubtaskCompleted {
			out = append(out, d)
		}
	}
	return out
}

// runningPlan reports whether the task is executing an approved plan, and
// refuses the record when it is not: claims and subtask results need one.
func (a *applier) runningPlan() bool {
	if a.st.Status != vocab.StatusExecuting || a.st.PlanStatus != PlanApproved {
		a.refuse(fmt.Sprintf("no approved plan yet; the task is %s", a.st.Status))
		return false
	}
	return true
}

func (a *applier) claim() {
	st := a.st
	m := a.rec.Marker
	if !a.runningPlan() {
		return
	}
	if m.AgentID == "" {
		a.refuse("claim names no agent")
		return
	}
	if m.SubtaskID == "" {
		a.refuse("claim names no subtask")
		return
	}
	ss := st.Subtasks[m.SubtaskID]
	if ss == nil {
		a.refuse(fmt.Sprintf("unknown subtask %s", m.SubtaskID))
		return
	}
	switch ss.Status {
	case SubtaskPending:
	case SubtaskBlocked:
		a.refuse(fmt.Sprintf("subtask %s is blocked by %s", m.SubtaskID, strings.Join(ss.BlockedBy, ", ")))
		return
	case SubtaskInProgress, SubtaskCompleted:
		a.refuse(fmt.Sprintf("subtask %s already taken by %s", m.SubtaskID, ss.Worker))
		return
	default:
		a.refuse(fmt.Sprintf("subtask %s is %s", m.SubtaskID, ss.Status))
		return
	}
	a.take(ss, false)
}

// take gives a pending subtask to the record's agent.
func (a *applier) take(ss *workspace.SubtaskState, implicit bool) {
	m := a.rec.Marker
	at := a.at
	a.changed.Subtask(m.SubtaskID)
	a.changed.Worker(m.AgentID)
	ss.Worker = m.AgentID
	a.setStatus(ss, SubtaskInProgress)
	ss.StartedAt = &at
	ss.CompletedAt = nil
	ss.Attempts++
	a.seeWorker(m.AgentID)
	w := a.st.Workers[m.AgentID]
	w.Status = WorkerBusy
	w.CurrentTask = m.SubtaskID
	var at2 map[string]string
	if implicit {
		at2 = attrs("implicit", "true")
	}
	a.emit(EventWorkAssigned, []string{m.SubtaskID, m.AgentID}, at2)
}

// release frees agent of subtask id: busy with another subtask it still
// holds, available otherwise.
func (a *applier) release(agent, id string) {
	w := a.st.Workers[agent]
	if w == nil || (w.CurrentTask != id && w.CurrentTask != "") {
		return
	}
	a.changed.Worker(agent)
	w.Status, w.CurrentTask = WorkerAvailable, ""
	if !a.holds(agent) {
		return
	}
	for _, s := range a.plan.Subtasks {
		if ss := a.st.Subtasks[s.ID]; ss != nil && ss.Status == SubtaskInProgress && ss.Worker == agent {
			w.Status, w.CurrentTask = WorkerBusy, s.ID
			return
		}
	}
}

func (a *applier) subtaskDone() {
	st := a.st
	m := a.rec.Marker
	if !a.runningPlan() {
		return
	}
	if m.AgentID == "" {
		a.refuse("done marker names no agent")
		return
	}
	if m.Status != "" && m.Status != DoneCompleted && m.Status != DoneFailed {
		a.refuse(fmt.Sprintf("done marker has unknown status %q", m.Status))
		return
	}
	ss := st.Subtasks[m.SubtaskID]
	if ss == nil {
		a.refuse(fmt.Sprintf("unknown subtask %s", m.SubtaskID))
		return
	}
	switch ss.Status {
	case SubtaskPending, SubtaskInProgress:
	case SubtaskCompleted:
		a.refuse(fmt.Sprintf("subtask %s already completed by %s", m.SubtaskID, ss.Worker))
		return
	case SubtaskBlocked:
		a.refuse(fmt.Sprintf("subtask %s is blocked by %s", m.SubtaskID, strings.Join(ss.BlockedBy, ", ")))
		return
	default:
		a.refuse(fmt.Sprintf("subtask %s is %s", m.SubtaskID, ss.Status))
		return
	}
	if ss.Status == SubtaskInProgress && ss.Worker != m.AgentID {
		a.refuse(fmt.Sprintf("subtask %s is taken by %s, not %s", m.SubtaskID, ss.Worker, m.AgentID))
		return
	}
	if !a.planReady() {
		return
	}
	a.changed.Subtask(m.SubtaskID)
	if ss.Status == SubtaskPending {
		a.take(ss, true)
	}
	if m.Status == DoneFailed {
		a.fail(ss)
		return
	}
	at := a.at
	a.setStatus(ss, SubtaskCompleted)
	ss.CompletedAt = &at
	ss.Output = m.OutputFile
	ss.Error = ""
	a.release(m.AgentID, m.SubtaskID)
	a.emit(EventWorkCompleted, []string{m.SubtaskID, m.AgentID}, attrs("output", m.OutputFile))
	a.unblock()
	a.advance()
}

func (a *applier) fail(ss *workspace.SubtaskState) {
	m := a.rec.Marker
	msg := m.Error
	if msg == "" {
		msg = "failed without an error message"
	}
	ss.Error = msg
	a.addError(failureMessage(m.SubtaskID, m.Error), "")
	if ss.Attempts <= a.maxRetries(m.SubtaskID) {
		a.setStatus(ss, SubtaskPending)
		ss.Worker = ""
		ss.StartedAt = nil
		a.release(m.AgentID, m.SubtaskID)
		a.emit(EventWorkFailed, []string{m.SubtaskID, m.AgentID}, attrs("error", msg, "retry", "true", "attempts", strconv.Itoa(ss.Attempts)))
		return
	}
	a.setStatus(ss, SubtaskFailed)
	a.emit(EventWorkFailed, []string{m.SubtaskID, m.AgentID}, attrs("error", msg, "retry", "false", "attempts", strconv.Itoa(ss.Attempts)))
	a.finish(vocab.StatusFailed, PhaseFailed)
	a.emit(EventTaskFailed, nil, attrs("reason", fmt.Sprintf("subtask %s failed after %d attempt(s): %s", m.SubtaskID, ss.Attempts, msg)))
}

func (a *applier) maxRetries(id string) int {
	for _, s := range a.plan.Subtasks {
		if s.ID == id {
			return s.MaxRetries
		}
	}
	return 0
}

// unblock brings blocked_by up to date and releases every blocked subtask
// whose dependencies are all completed.
func (a *applier) unblock() {
	if a.tally().blocked == 0 {
		return
	}
	for _, s := range a.plan.Subtasks {
		ss := a.st.Subtasks[s.ID]
		if ss == nil || ss.Status != SubtaskBlocked {
			continue
		}
		a.changed.Subtask(s.ID)
		ss.BlockedBy = a.blockers(s)
		if len(ss.BlockedBy) == 0 {
			a.setStatus(ss, SubtaskPending)
			ss.BlockedBy = nil
			a.emit(EventWorkUnblocked, []string{s.ID}, nil)
		}
	}
}

// advance marks the checkpoints whose subtasks are all completed as
// reached, sets the phase, and completes the task when every subtask is
// completed and every checkpoint approved.
func (a *applier) advance() {
	st := a.st
	if st.Status != vocab.StatusExecuting {
		return
	}
	completed := func(id string) bool {
		ss := st.Subtasks[id]
		return ss != nil && ss.Status == SubtaskCompleted
	}
	for _, c := range a.plan.Checkpoints {
		cs := st.Checkpoints[c.ID]
		if cs == nil || (cs.Status != CheckpointPending && cs.Status != CheckpointRevisionNeeded) {
			continue
		}
		if slices.ContainsFunc(c.Subtasks, func(id string) bool { return !completed(id) }) {
			continue
		}
		at := a.at
		a.changed.Checkpoint(c.ID)
		cs.Status = CheckpointAwaitingReview
		cs.ReachedAt = &at
		a.emit(EventCheckpointReached, []string{c.ID}, nil)
	}
	if !a.allCompleted() {
		st.Phase = PhaseWorkInProgress
		return
	}
	for _, c := range a.plan.Checkpoints {
		if cs := st.Checkpoints[c.ID]; cs == nil || cs.Status != CheckpointApproved {
			st.Phase = PhaseAwaitingCheckpointReview
			return
		}
	}
	a.finish(vocab.StatusCompleted, PhaseCompleted)
	a.emit(EventTaskCompleted, nil, nil)
}

// clone deep-copies a state so the copy can be changed without touching
// the original.
func clone(st workspace.State) workspace.State {
	out := st
	out.StartedAt = cloneTime(st.StartedAt)
	out.CompletedAt = cloneTime(st.CompletedAt)
	out.Subtasks = make(map[string]*workspace.SubtaskState, len(st.Subtasks))
	for k, v := range st.Subtasks {
		if v == nil {
			continue
		}
		c := *v
		c.BlockedBy = slices.Clone(v.BlockedBy)
		c.StartedAt = cloneTime(v.StartedAt)
		c.CompletedAt = cloneTime(v.CompletedAt)
		out.Subtasks[k] = &c
	}
	out.Checkpoints = make(map[string]*workspace.CheckpointState, len(st.Checkpoints))
	for k, v := range st.Checkpoints {
		if v == nil {
			continue
		}
		c := *v
		c.ReachedAt = cloneTime(v.ReachedAt)
		c.ReviewedAt = cloneTime(v.ReviewedAt)
		out.Checkpoints[k] = &c
	}
	out.Workers = make(map[string]*workspace.WorkerState, len(st.Workers))
	for k, v := range st.Workers {
		if v == nil {
			continue
		}
		c := *v
		out.Workers[k] = &c
	}
	if am := st.Amendment; am != nil {
		c := *am
		c.Added = slices.Clone(am.Added)
		c.Changed = slices.Clone(am.Changed)
		c.Withdrawn = slices.Clone(am.Withdrawn)
		out.Amendment = &c
	}
	out.Errors = make([]workspace.StateError, len(st.Errors), len(st.Errors)+1)
	copy(out.Errors, st.Errors)
	return out
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
