package machine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// Events of an amendment of a running plan.
const (
	// EventPlanAmended: a newer version of the running plan applies.
	EventPlanAmended = "plan_amended"
	// EventAmendmentProposed: an amendment waits for its plan review.
	EventAmendmentProposed = "amendment_proposed"
	// EventAmendmentRejected: the review of an amendment did not approve
	// it, or the work moved on so that it no longer applies.
	EventAmendmentRejected = "amendment_rejected"
)

// Diff is what a newer version of a running plan changes: the subtasks
// it adds, and the subtasks and checkpoints it changes or withdraws.
type Diff struct {
	Added     []string
	Changed   []string
	Withdrawn []string
}

// Empty reports whether the diff changes nothing the state tracks.
func (d Diff) Empty() bool {
	return len(d.Added)+len(d.Changed)+len(d.Withdrawn) == 0
}

// AddsOnly reports whether the diff only adds subtasks.
func (d Diff) AddsOnly() bool {
	return len(d.Added) > 0 && len(d.Changed)+len(d.Withdrawn) == 0
}

// NeedsReview says whether an amendment with this diff waits for a plan
// review under the amendment_review setting policy ("" is
// workspace.AmendReviewChanges).
func (d Diff) NeedsReview(policy string) bool {
	switch policy {
	case workspace.AmendReviewAlways:
		return true
	case workspace.AmendReviewNever:
		return false
	}
	return !d.AddsOnly()
}

// Amend reports what next, a newer version of cur (the plan st runs),
// changes, or why it cannot apply: it must be a plan the machine can run,
// keep cur's id, and leave every subtask that started (in progress,
// completed or failed) and every checkpoint no longer pending as it is.
// The daemon judges an amendment with it; a client may ask it first.
func Amend(cur, next *workspace.Plan, st workspace.State) (Diff, error) {
	var d Diff
	if next.ID != cur.ID {
		return d, fmt.Errorf("plan %s is not the running plan %s: an amendment keeps the plan's id", next.ID, cur.ID)
	}
	if next.Version <= cur.Version {
		return d, fmt.Errorf("plan %s v%d is not newer than the running v%d", next.ID, next.Version, cur.Version)
	}
	if err := checkPlan(next, st.TaskID); err != nil {
		return d, fmt.Errorf("plan %s v%d: %v", next.ID, next.Version, err)
	}
	subs := make(map[string]workspace.Subtask, len(next.Subtasks))
	for _, s := range next.Subtasks {
		subs[s.ID] = s
	}
	for _, s := range cur.Subtasks {
		n, kept := subs[s.ID]
		if kept && sameSubtask(s, n) {
			continue
		}
		what := "changed"
		if !kept {
			what = "withdrawn"
		}
		if ss := st.Subtasks[s.ID]; ss != nil && ss.Status != SubtaskPending && ss.Status != SubtaskBlocked {
			return d, fmt.Errorf("subtask %s is %s and cannot be %s: only pending and blocked subtasks can", s.ID, ss.Status, what)
		}
		if kept {
			d.Changed = append(d.Changed, s.ID)
		} else {
			d.Withdrawn = append(d.Withdrawn, s.ID)
		}
	}
	had := make(map[string]bool, len(cur.Subtasks))
	for _, s := range cur.Subtasks {
		had[s.ID] = true
	}
	for _, s := range next.Subtasks {
		if !had[s.ID] {
			d.Added = append(d.Added, s.ID)
		}
	}
	cps := make(map[string]workspace.Checkpoint, len(next.Checkpoints))
	for _, c := range next.Checkpoints {
		cps[c.ID] = c
	}
	old := make(map[string]bool, len(cur.Checkpoints))
	for _, c := range cur.Checkpoints {
		old[c.ID] = true
		n, kept := cps[c.ID]
		if kept && slices.Equal(c.Subtasks, n.Subtasks) && c.Description == n.Description {
			continue
		}
		if cs := st.Checkpoints[c.ID]; cs != nil && cs.Status != CheckpointPending {
			return d, fmt.Errorf("checkpoint %s is %s and cannot change: only pending checkpoints can", c.ID, cs.Status)
		}
		if kept {
			d.Changed = append(d.Changed, c.ID)
		} else {
			d.Withdrawn = append(d.Withdrawn, c.ID)
		}
	}
	for _, c := range next.Checkpoints {
		if !old[c.ID] {
			// A new checkpoint holds the task back until it is reviewed:
			// a change, not an addition.
			d.Changed = append(d.Changed, c.ID)
		}
	}
	return d, nil
}

// sameSubtask reports whether a and b describe the same work.
func sameSubtask(a, b workspace.Subtask) bool {
	return a.Description == b.Description && slices.Equal(a.Dependencies, b.Dependencies) &&
		a.EstimatedComplexity == b.EstimatedComplexity && a.Parallelizable == b.Parallelizable && a.MaxRetries == b.MaxRetries
}

// amend takes a plan proposed while the task executes: an amendment of
// the running plan, applied at once or held for a review as the record's
// amendment_review says.
func (a *applier) amend() {
	st, p := a.st, a.rec.Plan
	if !a.planReady() {
		return
	}
	if am := st.Amendment; am != nil {
		a.refuse(fmt.Sprintf("plan %s v%d: amendment v%d awaits its review; a plan review decides it first", p.ID, p.Version, am.Version))
		return
	}
	d, err := Amend(a.plan, p, *st)
	if err != nil {
		a.refuse(err.Error())
		return
	}
	if d.Empty() {
		a.refuse(fmt.Sprintf("plan %s v%d changes no subtask or checkpoint of the approved v%d: an approved plan changes only by an amendment that adds subtasks or changes or withdraws pending ones", p.ID, p.Version, st.PlanVersion))
		return
	}
	agent := a.rec.Marker.AgentID
	if !d.NeedsReview(a.rec.AmendmentReview) {
		a.applyAmendment(p, d, agent, "")
		return
	}
	st.Amendment = &workspace.AmendmentState{Version: p.Version, ProposedBy: agent, ProposedAt: a.at,
		Added: d.Added, Changed: d.Changed, Withdrawn: d.Withdrawn}
	a.emit(EventAmendmentProposed, []string{p.ID}, diffAttrs(d, "version", strconv.Itoa(p.Version), "agent", agent))
}

// amendmentReview takes the plan review of the amendment awaiting one:
// approved, the amendment applies, if the work has not moved on so that
// it no longer can; otherwise it is dropped, and the running plan stays.
func (a *applier) amendmentReview(r *workspace.Review) {
	st := a.st
	am := st.Amendment
	who := reviewer(r, a.rec.Marker)
	if r.Verdict != VerdictApproved {
		st.Amendment = nil
		a.emit(EventAmendmentRejected, []string{st.PlanID}, attrs("version", strconv.Itoa(am.Version), "verdict", r.Verdict, "reviewer", who, "issues", problems(r)))
		a.issues(r)
		return
	}
	p := a.amended
	if p == nil || p.ID != st.PlanID || p.Version != am.Version {
		a.refuse(fmt.Sprintf("plan %s v%d is not available to the state machine", st.PlanID, am.Version))
		return
	}
	if !a.planReady() {
		return
	}
	d, err := Amend(a.plan, p, *st)
	if err != nil {
		st.Amendment = nil
		a.emit(EventAmendmentRejected, []string{st.PlanID}, attrs("version", strconv.Itoa(am.Version), "verdict", r.Verdict, "reviewer", who,
			"reason", "approved, but no longer applies: "+err.Error()))
		return
	}
	st.Amendment = nil
	a.applyAmendment(p, d, am.ProposedBy, who)
	a.issues(r)
}

// applyAmendment makes p, whose diff from the running plan is d, the
// running plan: withdrawn subtasks and checkpoints leave the state, added
// ones join it, and every subtask not yet started is blocked or pending
// by its dependencies in p.
func (a *applier) applyAmendment(p *workspace.Plan, d Diff, agent, reviewedBy string) {
	st := a.st
	from := st.PlanVersion
	// Entries leave and join the maps: every one counts as changed.
	a.changed.Everything()
	subs, cps := map[string]bool{}, map[string]bool{}
	for _, s := range p.Subtasks {
		subs[s.ID] = true
	}
	for _, c := range p.Checkpoints {
		cps[c.ID] = true
	}
	for _, id := range d.Withdrawn {
		if ss := st.Subtasks[id]; ss != nil && !subs[id] {
			a.setStatus(ss, "")
			delete(st.Subtasks, id)
		}
		if !cps[id] {
			delete(st.Checkpoints, id)
		}
	}
	for _, id := range d.Added {
		ss := &workspace.SubtaskState{}
		st.Subtasks[id] = ss
		a.setStatus(ss, SubtaskPending)
	}
	for _, c := range p.Checkpoints {
		if st.Checkpoints[c.ID] == nil {
			st.Checkpoints[c.ID] = &workspace.CheckpointState{Status: CheckpointPending}
		}
	}
	st.PlanVersion = p.Version
	a.plan, a.adopted = p, p
	a.emit(EventPlanAmended, []string{p.ID}, diffAttrs(d, "version", strconv.Itoa(p.Version), "from", strconv.Itoa(from), "agent", agent, "reviewer", reviewedBy))
	a.reblock()
	a.unblock()
	a.advance()
}

// diffAttrs are kv and the diff's lists, comma-separated.
func diffAttrs(d Diff, kv ...string) map[string]string {
	return attrs(append(kv, "added", strings.Join(d.Added, ","), "changed", strings.Join(d.Changed, ","), "withdrawn", strings.Join(d.Withdrawn, ","))...)
}
