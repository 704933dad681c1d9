package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// The tools of a task's work: reading the task, its state, plan,
// subtasks, outputs and reviews; writing a plan or a review; claiming and
// finishing subtasks. A write goes through the workspace and ends with a
// marker, so the daemon is still the only one that changes the state; a
// read of a file an agent wrote goes through workspace.ReadTaskDoc, with
// the daemon's rules for agent files.

type subtaskInput struct {
	SubtaskID string `json:"subtask_id" pattern:"id"`
}

type planVersionInput struct {
	Version int `json:"version,omitempty" minimum:"1"`
}

type reviewIDInput struct {
	ReviewID string `json:"review_id" pattern:"id"`
}

type planSubtask struct {
	ID                  string   `json:"id" pattern:"id"`
	Description         string   `json:"description" jsonschema:"The work, in enough detail to do it without asking."`
	Dependencies        []string `json:"dependencies,omitempty" pattern:"id" jsonschema:"Subtasks that must complete first."`
	EstimatedComplexity string   `json:"estimated_complexity,omitempty" enum:"low,medium,high"`
	Parallelizable      bool     `json:"parallelizable,omitempty"`
	MaxRetries          int      `json:"max_retries,omitempty" minimum:"0" jsonschema:"Failed attempts retried (default 0)."`
}

type planCheckpoint struct {
	ID          string   `json:"id" pattern:"id"`
	Description string   `json:"description,omitempty"`
	Subtasks    []string `json:"subtasks" pattern:"id" jsonschema:"Subtasks a reviewer approves before the task completes."`
}

type writePlanInput struct {
	Summary     string           `json:"summary,omitempty"`
	Subtasks    []planSubtask    `json:"subtasks"`
	Checkpoints []planCheckpoint `json:"checkpoints,omitempty"`
	WorkerCount int              `json:"worker_count,omitempty" minimum:"1"`
	Risks       []string         `json:"risks,omitempty"`
	Assumptions []string         `json:"assumptions,omitempty"`
}

// Review types and verdicts, as the state machine knows them.
const (
	reviewPlan       = "plan_review"
	reviewCheckpoint = "checkpoint_review"
	reviewOutput     = "output_review"
	verdictApproved  = "approved"
)

type reviewIssue struct {
	Problem    string `json:"problem"`
	Severity   string `json:"severity,omitempty"`
	Location   string `json:"location,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
}

type writeReviewInput struct {
	Type     string        `json:"type" enum:"plan_review,checkpoint_review,output_review" jsonschema:"output_review changes no state."`
	Verdict  string        `json:"verdict" enum:"approved,revision_needed,rejected"`
	Target   string        `json:"target,omitempty" pattern:"id" jsonschema:"Checkpoint or subtask id (default: the proposed plan)."`
	Issues   []reviewIssue `json:"issues,omitempty"`
	Notes    string        `json:"notes,omitempty"`
	Escalate string        `json:"escalate,omitempty" jsonschema:"Why a human must decide."`
	ReviewID string        `json:"review_id,omitempty" pattern:"id"`
}

const (
	descGetTask      = "Read the task as submitted: description, context, constraints."
	descGetTaskState = "Read the task's state (the daemon's): status, plan_status, subtasks' status, worker and attempts, checkpoints, errors."
	descGetPlan      = "Read the task's plan: subtasks, dependencies, checkpoints."
	descGetSubtask   = "Read one subtask: the plan's words and, once approved, its status, worker, attempts."
	descGetOutput    = "Read the result a subtask's worker wrote."
	descListReviews  = "List the task's reviews, oldest first."
	descGetReview    = "Read one review."
	descWritePlan    = "Propose the task's plan (a new version; after revision_needed, the revised one). Returns the daemon's verdict."
	descWriteReview  = "Judge the plan or a checkpoint awaiting review, or a subtask's output. Returns the daemon's verdict."
)

// missing gives err, when it says something is not there, the message
// msg and the hint, in place of the workspace's words for a file.
func missing(err error, hint, format string, args ...any) error {
	if err == nil || !errors.Is(err, workspace.ErrNotFound) {
		return err
	}
	return &toolError{err: &workspace.Error{Kind: workspace.ErrNotFound, Msg: fmt.Sprintf(format, args...)}, hint: hint}
}

// stateError is a failed read of the task's state. A state the daemon has
// not written yet is said plainly, with what to do about it.
func stateError(task string, err error) error {
	return missing(err, "call "+ToolGetTaskState+" again in a moment; if it stays missing, no workspace daemon serves this workspace, and plans, reviews, claims and done reports wait until one does: tell whoever runs you",
		"task %s has no state yet: the workspace daemon writes it once it has seen the task", task)
}

// noPlanHint says what to do when a task has no plan yet.
const noPlanHint = "a planner writes it with " + ToolWritePlan + "; " + ToolGetTaskState + " shows where the task stands"

// readDoc reads a document of the served task with ReadTaskDoc, refusing
// one too large to hand a model in one answer (larger than a value may
// be).
func (s *Server) readDoc(ctx context.Context, rel string) (json.RawMessage, error) {
	doc, err := s.w.ReadTaskDoc(ctx, s.task, rel)
	if err != nil {
		return nil, err
	}
	if limit := s.w.Settings().Limits.ValueMaxBytes; len(doc) > limit {
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + rel,
			Msg: fmt.Sprintf("is %d bytes, more than one answer carries (%d)", len(doc), limit)}
	}
	return doc, nil
}

func (s *Server) getTask(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	t, err := s.w.GetTask(ctx, s.task)
	if err != nil {
		return "", missing(err, "there is nothing more to do in it", "task %s is gone (removed by retention or by hand)", s.task)
	}
	return toJSON(t)
}

func (s *Server) getTaskState(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	st, err := s.w.ReadState(ctx, s.task)
	if err != nil {
		return "", stateError(s.task, err)
	}
	return toJSON(st)
}

// docVersion is the version field of a plan document, 0 when it has none.
func docVersion(doc json.RawMessage) int {
	var v struct {
		Version int `json:"version"`
	}
	_ = json.Unmarshal(doc, &v)
	return v.Version
}

func (s *Server) getPlan(ctx context.Context, _ *mcp.CallToolRequest, in planVersionInput) (string, error) {
	if in.Version == 0 {
		// Once approved, the version the daemon runs.
		in.Version = service.RunningPlan(ctx, s.w, s.task)
	}
	if in.Version == 0 {
		doc, err := s.readDoc(ctx, "plan.json")
		if err != nil {
			return "", missing(err, noPlanHint, "task %s has no plan yet", s.task)
		}
		return string(doc), nil
	}
	doc, err := s.readDoc(ctx, "plans/plan_v"+strconv.Itoa(in.Version)+".json")
	if errors.Is(err, workspace.ErrNotFound) {
		// The current version is plan.json itself.
		cur, cerr := s.readDoc(ctx, "plan.json")
		if cerr == nil && docVersion(cur) == in.Version {
			return string(cur), nil
		}
		return "", missing(err, "call "+ToolGetPlan+" without version for the current plan; its version says how many there are", "task %s has no plan version %d", s.task, in.Version)
	}
	if err != nil {
		return "", err
	}
	return string(doc), nil
}

// subtaskView is get_subtask's answer: the plan's subtask and, once the
// plan is approved, its state.
type subtaskView struct {
	workspace.Subtask
	*workspace.SubtaskState
	PlanVersion int    `json:"plan_version"`
	Note        string `json:"note,omitempty"`
}

func (s *Server) getSubtask(ctx context.Context, _ *mcp.CallToolRequest, in subtaskInput) (string, error) {
	if err := workspace.ValidateID("subtask id", in.SubtaskID); err != nil {
		return "", err
	}
	// The plan the daemon tracks, once it tracks one; else the newest.
	st, serr := s.w.ReadState(ctx, s.task)
	if serr != nil && !errors.Is(serr, workspace.ErrNotFound) {
		return "", serr
	}
	version := 0
	if serr == nil {
		version = st.PlanVersion
	}
	p, err := s.w.ReadPlan(ctx, s.task, version)
	if err != nil {
		return "", missing(err, noPlanHint, "task %s has no plan yet, so no subtask %q", s.task, in.SubtaskID)
	}
	v := subtaskView{PlanVersion: p.Version}
	found := false
	for _, sub := range p.Subtasks {
		if sub.ID == in.SubtaskID {
			v.Subtask, found = sub, true
			break
		}
	}
	if !found {
		return "", &toolError{err: &workspace.Error{Kind: workspace.ErrNotFound, Msg: fmt.Sprintf("plan version %d of task %s has no subtask %q", p.Version, s.task, in.SubtaskID)},
			hint: "call " + ToolGetPlan + " to see its subtasks"}
	}
	switch {
	case serr != nil:
		v.Note = "the task has no state yet: the workspace daemon writes it once it has seen the task"
	case st.Subtasks[in.SubtaskID] != nil:
		v.SubtaskState = st.Subtasks[in.SubtaskID]
	default:
		v.Note = fmt.Sprintf("no subtask has started: plan_status is %q (they start once a plan_review approves the plan)", st.PlanStatus)
	}
	return toJSON(v)
}

func (s *Server) getOutput(ctx context.Context, _ *mcp.CallToolRequest, in subtaskInput) (string, error) {
	if err := workspace.ValidateID("subtask id", in.SubtaskID); err != nil {
		return "", err
	}
	doc, err := s.readDoc(ctx, "outputs/"+in.SubtaskID+".json")
	if err != nil {
		return "", missing(err, "call "+ToolGetSubtask+" to see its status: its worker writes the output when it finishes", "subtask %s of task %s has no output yet", in.SubtaskID, s.task)
	}
	return string(doc), nil
}

func (s *Server) listReviews(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	reviews, skipped, err := s.w.ListReviews(ctx, s.task)
	if err != nil {
		return "", err
	}
	return toJSON(struct {
		Reviews    []workspace.Review  `json:"reviews"`
		Unreadable []workspace.Skipped `json:"unreadable,omitempty"`
	}{reviews, skipped})
}

func (s *Server) getReview(ctx context.Context, _ *mcp.CallToolRequest, in reviewIDInput) (string, error) {
	if err := workspace.ValidateID("review id", in.ReviewID); err != nil {
		return "", err
	}
	doc, err := s.readDoc(ctx, "reviews/"+in.ReviewID+".json")
	if err != nil {
		return "", missing(err, "call "+ToolListReviews+" to see the reviews there are", "task %s has no review %q", s.task, in.ReviewID)
	}
	return string(doc), nil
}

func (s *Server) writePlan(ctx context.Context, req *mcp.CallToolRequest, in writePlanInput) (reply, error) {
	// An approved plan or a finished task is refused before anything is
	// written or dropped.
	if err := service.PlanOpen(ctx, s.w, ToolWritePlan, s.task); err != nil {
		return reply{}, err
	}
	// The arguments are the plan's fields and nothing else (the schema
	// is closed), every one of them typed.
	doc, err := json.Marshal(in)
	if err != nil {
		return reply{}, fmt.Errorf("encode plan: %w", err)
	}
	var p workspace.Plan
	d, err := service.Deliver(ctx, s.w, workspace.DoneRequest{TaskID: s.task, Agent: s.agent}, func(ctx context.Context) (string, error) {
		var err error
		p, err = service.WritePlan(ctx, s.w, s.task, s.agent, doc)
		return "plan.json", err
	}, s.deliverOptions())
	var me *service.MarkerError
	if errors.As(err, &me) {
		return reply{}, fmt.Errorf("wrote plan.json version %d, but no done marker proposes it: %w", p.Version, me.Err)
	}
	if err != nil {
		return reply{}, err
	}
	marker := d.Marker
	var b strings.Builder
	fmt.Fprintf(&b, "Wrote plan.json version %d (plan %s: %s", p.Version, p.ID, count(len(p.Subtasks), "subtask"))
	if len(p.Checkpoints) > 0 {
		fmt.Fprintf(&b, ", %s", count(len(p.Checkpoints), "checkpoint"))
	}
	fmt.Fprintf(&b, ") and proposed it for review (marker %s).\n", marker)
	r := markerOf(marker, d.Outcome)
	next := fmt.Sprintf("%s shows plan_status \"proposed\" at plan_version %d. A reviewer then approves it (status \"executing\": the subtasks start) "+
		"or sends it back (plan_status \"revision_needed\": read why with %s, and write the next version with %s).", ToolGetTaskState, p.Version, ToolListReviews, ToolWritePlan)
	return s.verdictReply(&b, r, fmt.Sprintf("plan version %d", p.Version), next,
		ToolGetTaskState+" shows where the task stands; "+ToolListReviews+" why a plan was sent back")
}

// count says n things, in the plural unless n is 1.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// reviewFree reports whether no review of the served task has id: none
// is stored under it, not even one that does not read as a review.
func (s *Server) reviewFree(ctx context.Context, id string) bool {
	_, err := s.w.ReadTaskDoc(ctx, s.task, "reviews/"+id+".json")
	return errors.Is(err, workspace.ErrNotFound)
}

// claimReviewID takes the task's review-id lock, finds a review id no
// review has and returns it with the lock held: id itself when given
// (taken is a conflict), else base, base_2, base_3, ..., the first free
// one. Holding the lock while the review is written keeps two reviewers
// from choosing one id, so a review once written is never replaced.
func (s *Server) claimReviewID(ctx context.Context, id, base string) (string, workspace.Lock, error) {
	for n := 1; ; n++ {
		cand := id
		if id == "" {
			cand = base
			if n > 1 {
				cand = base + "_" + strconv.Itoa(n)
			}
		}
		if err := workspace.ValidateID("review id", cand); err != nil {
			return "", nil, err
		}
		l, err := s.w.LockTaskNamed(ctx, s.task, "review-id", s.agent) // one name: ids may be 128 bytes long
		if err != nil {
			return "", nil, err
		}
		if s.reviewFree(ctx, cand) {
			return cand, l, nil
		}
		l.Release()
		if id != "" {
			return "", nil, &toolError{err: &workspace.Error{Kind: workspace.ErrConflict, Op: ToolWriteReview, Msg: fmt.Sprintf("review %q exists; a review once written is kept as it is", id)},
				hint: "leave review_id out to get a free one"}
		}
	}
}

func (s *Server) writeReview(ctx context.Context, req *mcp.CallToolRequest, in writeReviewInput) (reply, error) {
	text, marker, outcome, err := s.review(ctx, req, in)
	if err != nil {
		return reply{}, err
	}
	var b strings.Builder
	b.WriteString(text)
	r := markerOf(marker.Marker, marker.Outcome)
	return s.verdictReply(&b, r, in.Type+" "+path.Base(marker.Marker), ToolGetTaskState+" shows "+outcome,
		ToolGetTaskState+" shows what awaits a review")
}

// review writes the review the arguments describe, drops its marker and
// waits for the verdict (service.Deliver): it returns what it wrote, the
// delivery, and what the state shows once the daemon has applied it.
func (s *Server) review(ctx context.Context, req *mcp.CallToolRequest, in writeReviewInput) (text string, marker service.Delivery, outcome string, err error) {
	if err = s.beforeMarker(ctx, ToolWriteReview); err != nil {
		return "", marker, "", err
	}
	st, stErr := s.w.ReadState(ctx, s.task)
	haveState := stErr == nil
	if stErr != nil && !errors.Is(stErr, workspace.ErrNotFound) {
		return "", marker, "", stErr
	}
	target := in.Target
	var base string
	var notes []string
	switch in.Type {
	case reviewPlan:
		// The plan the daemon awaits a review of; before it has seen any
		// plan, the newest written.
		id, version := st.PlanID, st.PlanVersion
		if !haveState || version == 0 {
			p, err := s.w.ReadPlan(ctx, s.task, 0)
			if err != nil {
				return "", marker, "", missing(err, "a planner writes it with "+ToolWritePlan+"; review it once "+ToolGetTaskState+" shows plan_status \"proposed\"", "task %s has no plan to review yet", s.task)
			}
			id, version = p.ID, p.Version
		}
		if target == "" {
			target = fmt.Sprintf("%s_v%d", id, version)
		}
		base = "plan_v" + strconv.Itoa(version)
		if haveState && st.PlanStatus != "proposed" {
			notes = append(notes, fmt.Sprintf("The state shows plan_status %q, not \"proposed\": the daemon takes a plan review only while a plan awaits one, and records an error otherwise.", st.PlanStatus))
		}
		if in.Verdict == verdictApproved {
			outcome = "plan_status \"approved\" and status \"executing\": the subtasks start."
		} else {
			outcome = fmt.Sprintf("plan_status \"revision_needed\": the planner reads this review with %s and writes the next version with %s.", ToolListReviews, ToolWritePlan)
		}
	case reviewCheckpoint:
		hint := "call " + ToolGetTaskState + ": the checkpoints with status \"awaiting_review\" are the ones to judge"
		if target == "" {
			return "", marker, "", &toolError{err: &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolWriteReview, Msg: "a checkpoint_review needs target: the checkpoint's id"}, hint: hint}
		}
		if !haveState {
			return "", marker, "", stateError(s.task, stErr)
		}
		cs := st.Checkpoints[target]
		if cs == nil {
			return "", marker, "", &toolError{err: &workspace.Error{Kind: workspace.ErrNotFound, Op: ToolWriteReview, Msg: fmt.Sprintf("task %s has no checkpoint %q", s.task, target)}, hint: hint}
		}
		if cs.Status != "awaiting_review" {
			notes = append(notes, fmt.Sprintf("The state shows checkpoint %s %q, not \"awaiting_review\": the daemon takes a checkpoint review only once its subtasks are done, and records an error otherwise.", target, cs.Status))
		}
		base = target + "_review"
		if in.Verdict == verdictApproved {
			outcome = fmt.Sprintf("checkpoint %s \"approved\".", target)
		} else {
			outcome = fmt.Sprintf("checkpoint %s \"revision_needed\", and its subtasks back to \"pending\" for another attempt (get_output shows what they produced).", target)
		}
	case reviewOutput:
		if target == "" {
			return "", marker, "", &toolError{err: &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolWriteReview, Msg: "an output_review needs target: the subtask's id"},
				hint: "call " + ToolGetTaskState + " to see the subtasks and which have an output"}
		}
		if err := workspace.ValidateID("target subtask id", target); err != nil {
			return "", marker, "", err
		}
		base = target + "_review"
		outcome = "nothing new: an output review is recorded in the task's events and changes no state."
	default:
		// The schema admits only the three types.
		return "", marker, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolWriteReview, Msg: fmt.Sprintf("unknown review type %q", in.Type),
			Hint: "use type plan_review, checkpoint_review or output_review"}
	}
	doc, err := reviewDoc(ctx, req, target)
	if err != nil {
		return "", marker, "", err
	}
	id, l, err := s.claimReviewID(ctx, in.ReviewID, base)
	if err != nil {
		return "", marker, "", err
	}
	marker, err = service.Deliver(ctx, s.w, workspace.DoneRequest{TaskID: s.task, Agent: s.agent}, func(ctx context.Context) (string, error) {
		defer l.Release()
		return s.w.WriteReview(ctx, s.task, id, s.agent, doc)
	}, s.deliverOptions())
	var me *service.MarkerError
	if errors.As(err, &me) {
		return "", marker, "", fmt.Errorf("wrote %s, but no done marker reports it: %w", me.Product, me.Err)
	}
	if err != nil {
		return "", marker, "", err
	}
	rel := marker.Product
	var b strings.Builder
	fmt.Fprintf(&b, "Wrote %s (%s of %s: %s", rel, in.Type, target, in.Verdict)
	if len(in.Issues) > 0 {
		fmt.Fprintf(&b, ", %s", count(len(in.Issues), "issue"))
	}
	fmt.Fprintf(&b, ") and reported it to the workspace daemon (marker %s).\n", marker.Marker)
	for _, n := range notes {
		b.WriteString("Note: " + n + "\n")
	}
	return b.String(), marker, outcome, nil
}

// reviewDoc is the review document the arguments describe: every argument
// but review_id, as sent, with target set.
func reviewDoc(ctx context.Context, req *mcp.CallToolRequest, target string) ([]byte, error) {
	sent, err := rawArgs(ctx, req)
	if err != nil {
		return nil, err
	}
	args := maps.Clone(sent)
	delete(args, "review_id")
	t, err := json.Marshal(target)
	if err != nil {
		return nil, err
	}
	args["target"] = t
	return json.Marshal(args)
}

func (s *Server) claim(ctx context.Context, _ *mcp.CallToolRequest, in claimInput) (reply, error) {
	if err := s.beforeMarker(ctx, ToolClaimSubtask); err != nil {
		return reply{}, err
	}
	note := s.claimNote(ctx, in.SubtaskID)
	d, err := service.Claim(ctx, s.w, s.task, s.agent, in.SubtaskID, s.deliverOptions())
	if err != nil {
		return reply{}, err
	}
	marker := d.Marker
	r := markerOf(marker, d.Outcome)
	var b strings.Builder
	if r.Verdict == verdictWon {
		fmt.Fprintf(&b, "Subtask '%s' is yours: the workspace daemon gave it to you (status in_progress, marker %s). Do the work, then report it with %s.", in.SubtaskID, marker, ToolSignalDone)
		return reply{text: b.String(), data: r}, nil
	}
	fmt.Fprintf(&b, "Claim for subtask '%s' dropped (%s). ", in.SubtaskID, marker)
	then := fmt.Sprintf("%s with subtask_id \"%s\" shows status \"in_progress\" and worker \"%s\" if your claim won. Do not start the work before.", ToolGetSubtask, in.SubtaskID, s.agent)
	hint := ToolGetTaskState + " shows the subtasks that are pending; claim one of those"
	switch {
	case r.Verdict == verdictNotFound:
		hint = ToolGetPlan + " lists the subtasks of the plan"
	case r.Worker != "" && r.Worker != s.agent && r.SubtaskStatus != "pending":
		hint = fmt.Sprintf("agent %s holds it; %s shows the subtasks that are pending: claim one of those", r.Worker, ToolGetTaskState)
	}
	rep, err := s.verdictReply(&b, r, fmt.Sprintf("your claim of subtask %s", in.SubtaskID), then, hint)
	if err == nil && note != "" {
		rep.text += "\n" + note
	}
	return rep, err
}

// claimNote says what the state shows of a subtask before a claim of it,
// for an answer that cannot give the verdict yet.
func (s *Server) claimNote(ctx context.Context, id string) string {
	st, err := s.w.ReadState(ctx, s.task)
	if err != nil {
		return ""
	}
	sub, ok := st.Subtasks[id]
	if !ok {
		return fmt.Sprintf("The current state lists no subtask '%s': the daemon will refuse the claim unless the approved plan has it (%s shows the subtasks).", id, ToolGetTaskState)
	}
	note := fmt.Sprintf("Before this claim the state showed subtask '%s' as %s", id, sub.Status)
	if sub.Worker != "" {
		note += fmt.Sprintf(" (worker %s)", sub.Worker)
	}
	return note + "."
}

func (s *Server) done(ctx context.Context, req *mcp.CallToolRequest, in doneInput) (reply, error) {
	text, d, sub, err := s.dropDone(ctx, req, in)
	if err != nil {
		return reply{}, err
	}
	r := markerOf(d.Marker, d.Outcome)
	var b strings.Builder
	b.WriteString(text)
	then := ToolGetTaskState + " shows the result."
	hint := ToolGetTaskState + " shows where the task stands"
	if sub != "" {
		then = fmt.Sprintf("%s shows the subtask's new status.", ToolGetSubtask)
		if r.Verdict == verdictApplied && r.SubtaskStatus != "" {
			then = fmt.Sprintf("subtask %s is %s, task %s is %s.", sub, r.SubtaskStatus, s.task, r.TaskStatus)
		}
		hint = fmt.Sprintf("%s shows subtask %s's status and worker: only its worker reports it, while it is in_progress", ToolGetSubtask, sub)
	}
	return s.verdictReply(&b, r, "your done report", then, hint)
}

// dropDone writes the output the arguments carry, if any, drops the done
// marker and waits for the verdict (service.Deliver): it returns what it
// did, the delivery, and the subtask.
func (s *Server) dropDone(ctx context.Context, req *mcp.CallToolRequest, in doneInput) (text string, d service.Delivery, sub string, err error) {
	if err = s.beforeMarker(ctx, ToolSignalDone); err != nil {
		return "", d, "", err
	}
	dr := workspace.DoneRequest{TaskID: s.task, Agent: s.agent, OutputFile: in.OutputFile, SubtaskID: in.SubtaskID,
		Status: in.Status, Error: in.Error, Escalate: in.Escalate}
	var write func(context.Context) (string, error)
	raw, hasOutput, err := rawArg(ctx, req, "output")
	if err != nil {
		return "", d, "", err
	}
	if hasOutput {
		if in.SubtaskID == "" {
			return "", d, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolSignalDone, Msg: "output given without subtask_id",
				Hint: "pass subtask_id: the output is written to outputs/<subtask_id>.json"}
		}
		want := "outputs/" + in.SubtaskID + ".json"
		if in.OutputFile != "" && in.OutputFile != want {
			return "", d, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolSignalDone, Msg: fmt.Sprintf("output_file %q does not match subtask %s", in.OutputFile, in.SubtaskID),
				Hint: "leave output_file out when passing output (it is " + want + ")"}
		}
		// Refuse what WriteDone would refuse before writing the output,
		// so a bad call leaves nothing behind.
		switch in.Status {
		case "", "completed", "failed", "cancelled":
		default:
			return "", d, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolSignalDone, Msg: fmt.Sprintf("unknown status %q", in.Status),
				Hint: "use status completed, failed or cancelled"}
		}
		if in.Status == "failed" && in.Error == "" {
			return "", d, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolSignalDone, Msg: "a failed marker needs an error",
				Hint: "say why in error"}
		}
		doc, err := outputDoc(raw, in.Status, in.Error)
		if err != nil {
			return "", d, "", err
		}
		write = func(ctx context.Context) (string, error) {
			return s.w.WriteOutput(ctx, s.task, in.SubtaskID, s.agent, doc)
		}
	} else if dr.OutputFile == "" && in.Status != "cancelled" {
		if in.SubtaskID == "" {
			return "", d, "", &toolError{err: &workspace.Error{Kind: workspace.ErrInvalid, Op: ToolSignalDone, Msg: "nothing to report: no subtask_id, output or output_file"},
				hint: "pass subtask_id and your result as output (a plan goes through " + ToolWritePlan + ", a review through " + ToolWriteReview + "); status cancelled alone cancels the whole task"}
		}
		dr.OutputFile = "outputs/" + in.SubtaskID + ".json"
	}
	d, err = service.Deliver(ctx, s.w, dr, write, s.deliverOptions())
	if err != nil {
		var me *service.MarkerError
		if errors.As(err, &me) {
			return "", d, "", fmt.Errorf("wrote %s, but no done marker: %w", me.Product, me.Err)
		}
		if !hasOutput && in.SubtaskID != "" {
			// The default output_file was missing: the model meant to
			// pass its result.
			err = redirect(err, workspace.ErrNotFound, "pass your result as output: it is written to "+dr.OutputFile+" before the marker")
		}
		return "", d, "", err
	}
	wrote := d.Product
	if wrote != "" {
		dr.OutputFile = wrote
	}
	status := dr.Status
	if status == "" {
		status = "completed"
	}
	var b strings.Builder
	if wrote != "" {
		fmt.Fprintf(&b, "Wrote %s. ", wrote)
	}
	fmt.Fprintf(&b, "Done marker dropped (%s): ", d.Marker)
	switch {
	case dr.SubtaskID != "":
		fmt.Fprintf(&b, "subtask '%s' %s", dr.SubtaskID, status)
	default:
		b.WriteString(status)
	}
	if dr.OutputFile != "" {
		fmt.Fprintf(&b, ", product %s", dr.OutputFile)
	}
	b.WriteString(".\n")
	return b.String(), d, dr.SubtaskID, nil
}

// outputDoc is the output argument with status and error filled in from
// the call when the document does not set them. The members are kept as
// raw bytes, so numbers keep every digit.
func outputDoc(raw json.RawMessage, status, errText string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "signal_done output", Msg: "not a JSON object",
			Hint: "pass output as an object, e.g. {\"summary\": \"what was done\"}"}
	}
	set := func(k, v string) error {
		if _, ok := m[k]; ok || v == "" {
			return nil
		}
		b, err := json.Marshal(v)
		m[k] = b
		return err
	}
	if status == "completed" || status == "failed" {
		if err := set("status", status); err != nil {
			return nil, err
		}
	}
	if err := set("error", errText); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
