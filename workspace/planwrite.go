package workspace

import (
	"fmt"

	"github.com/workspaced/workspaced/vocab"
)

// planApproved is the plan_status of a plan the task runs.
const planApproved = "approved"

// AmendHint is what to do instead of writing a plan once one is
// approved.
const AmendHint = "amend the running plan instead: add subtasks (which may depend on existing ones), change or withdraw pending ones; the daemon judges the amendment as a new version"

// PlanClosed is the conflict (ErrConflict, named op) of writing a new
// version of the plan of task taskID whose state is st (nil before the
// daemon wrote one), or nil when the plan takes one: once a plan is
// approved it is never replaced (it is amended), and a finished task
// takes nothing. With amend, the version is an amendment of the running
// plan, which needs an approved plan instead. Every store decides with it
// in the write that holds the task, so a review approving the plan
// meanwhile cannot slip between the check and the write.
func PlanClosed(op, taskID string, st *State, amend bool) error {
	status, planStatus := "", ""
	if st != nil {
		status, planStatus = st.Status, st.PlanStatus
	}
	switch {
	case vocab.Finished(status):
		return &Error{Kind: ErrConflict, Op: op, Msg: fmt.Sprintf("task %s is %s and takes no plan; nothing was written", taskID, status),
			Hint: "a finished task stays finished; start a new task for more work"}
	case amend && planStatus != planApproved:
		if planStatus == "" {
			planStatus = "none"
		}
		return &Error{Kind: ErrConflict, Op: op,
			Msg:  fmt.Sprintf("task %s has no approved plan to amend (plan_status %s); nothing was written", taskID, planStatus),
			Hint: "until a plan is approved, write a new version of it"}
	case !amend && planStatus == planApproved:
		return &Error{Kind: ErrConflict, Op: op,
			Msg:  fmt.Sprintf("plan %s v%d of task %s is approved, and an approved plan is never replaced; nothing was written", st.PlanID, st.PlanVersion, taskID),
			Hint: AmendHint}
	}
	return nil
}
