package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// ErrRefused is a call its caller's token does not allow: errors.Is on a
// refusal's error.
var ErrRefused = errors.New("refused")

// agentArgs are the names an argument could give an agent by. The agent
// of every write is the server's; an argument naming another is refused
// before anything else is looked at, so that no call can be read as
// acting for someone else.
var agentArgs = []string{"agent", "agent_id", "stored_by", "worker_id", "reviewer", "created_by", "planner"}

// rightOf is the right a tool needs beyond the task, or "".
func rightOf(tool string) string {
	switch tool {
	case ToolClaimSubtask:
		return tokens.RightClaim
	case ToolSignalDone:
		return tokens.RightDone
	case ToolWritePlan, ToolAmendPlan:
		return tokens.RightPlan
	case ToolWriteReview:
		return tokens.RightReview
	}
	return ""
}

// refusal is a refused call: its tool error text says why and what to do,
// and it is logged with the agent.
func refusal(msg, hint string) error {
	return &toolError{err: &workspace.Error{Kind: ErrRefused, Op: "refused", Msg: msg}, hint: hint}
}

// permit decides whether a call may run, before its arguments are
// decoded: no argument may name another agent than the server's, and
// with Grants set, the caller's grant (looked up for this call, so that a
// revoked token is refused at once) must stand for the server's agent,
// cover its task and hold what the tool needs. A refusal is logged with
// the agent and the reason.
func (s *Server) permit(extra *mcp.RequestExtra, tool string, args map[string]json.RawMessage) error {
	err := s.check(extra, tool, args)
	if err != nil {
		s.log.Warn("mcp: call refused", "agent", s.agent, "task", s.task, "tool", tool, "reason", err.Error())
	}
	return err
}

// check is permit without the log; args are the call's arguments by
// name (nil when they are not an object: the schema check says so).
func (s *Server) check(extra *mcp.RequestExtra, tool string, args map[string]json.RawMessage) error {
	if err := s.sameAgent(args, ""); err != nil {
		return err
	}
	if out, ok := args["output"]; ok && tool == ToolSignalDone {
		var doc map[string]json.RawMessage
		if json.Unmarshal(out, &doc) == nil {
			if err := s.sameAgent(doc, "output."); err != nil {
				return err
			}
		}
	}
	if s.grants == nil {
		return nil
	}
	g, err := s.grant(extra)
	if err != nil {
		return err
	}
	if right := rightOf(tool); right != "" && !g.Can(right) {
		return refusal(fmt.Sprintf("agent %s may not %s: its token does not hold the right %q", s.agent, what(tool), right),
			"this is not yours to do in this task: leave it to an agent that may, or ask whoever runs you for the right")
	}
	if write, isItem := memoryWrite(tool); isItem {
		return mayGlobal(s.agent, g, write, "namespaced memory")
	}
	switch tool {
	case ToolStoreMemory, ToolDeleteMemory, ToolGetMemory, ToolListMemory, ToolGetMemoryHistory:
		var scope string
		if v, ok := args["scope"]; ok {
			_ = json.Unmarshal(v, &scope)
		}
		if scope != memoryGlobal {
			return nil
		}
		write := tool == ToolStoreMemory || tool == ToolDeleteMemory
		if write && !g.WriteGlobal() {
			return refusal(fmt.Sprintf("agent %s may not write the global memory (its token gives it %s access)", s.agent, globalAccess(g)),
				"keep it in your own memory: scope agent (or session, for this thread)")
		}
		if !write && !g.ReadGlobal() {
			return refusal(fmt.Sprintf("agent %s may not read the global memory (its token gives it no access)", s.agent),
				"use your own memory: scope agent (or session, for this thread)")
		}
	}
	return nil
}

// mayGlobal refuses what of the memory every agent shares (what, in
// words) a grant's global memory access does not allow.
func mayGlobal(agent string, g tokens.Grant, write bool, what string) error {
	if write && !g.WriteGlobal() {
		return refusal(fmt.Sprintf("agent %s may not write the %s (its token gives it %s global memory access)", agent, what, globalAccess(g)),
			"keep it in your own memory: store_memory with scope agent (or session, for this thread)")
	}
	if !write && !g.ReadGlobal() {
		return refusal(fmt.Sprintf("agent %s may not read the %s (its token gives it no global memory access)", agent, what),
			"use your own memory: scope agent (or session, for this thread)")
	}
	return nil
}

// grant is the caller's grant for this call, checked against the
// server's agent and task.
func (s *Server) grant(extra *mcp.RequestExtra) (tokens.Grant, error) {
	g, err := s.grants(extra)
	if err != nil {
		return tokens.Grant{}, refusal("the token of this session is no longer valid: "+err.Error(),
			"stop: whoever runs you must give you a valid token")
	}
	if g.Agent != s.agent {
		return tokens.Grant{}, refusal(fmt.Sprintf("this session serves agent %s, but its token now stands for agent %s", s.agent, g.Agent),
			"stop: whoever runs you must start a new session")
	}
	if s.task != "" && !g.Task(s.task) {
		return tokens.Grant{}, refusal(fmt.Sprintf("agent %s may not work on task %s: its token covers %s", s.agent, s.task, g.TaskList()),
			"stop: whoever runs you must give you a token for this task")
	}
	return g, nil
}

// sameAgent refuses args naming an agent other than the server's.
func (s *Server) sameAgent(args map[string]json.RawMessage, prefix string) error {
	for _, k := range agentArgs {
		v, ok := args[k]
		if !ok {
			continue
		}
		var name string
		if json.Unmarshal(v, &name) == nil && name == s.agent {
			continue
		}
		return refusal(fmt.Sprintf("you act as agent %s; a call may not name another agent (%s%s: %s)", s.agent, prefix, k, jsonText(json.RawMessage(v))),
			"leave "+prefix+k+" out: every write is recorded as yours")
	}
	return nil
}

// listable says which tools a caller is shown in tools/list: those its
// grant, as it stands for this request, allows it to call. Without Grants
// every tool is; with a grant that no longer stands, none is.
func (s *Server) listable(extra *mcp.RequestExtra) func(tool string) bool {
	if s.grants == nil {
		return func(string) bool { return true }
	}
	g, err := s.grant(extra)
	if err != nil {
		return func(string) bool { return false }
	}
	return func(tool string) bool {
		right := rightOf(tool)
		return right == "" || g.Can(right)
	}
}

// readable refuses a resource of another task than the grant covers.
func (s *Server) readable(extra *mcp.RequestExtra, task string) error {
	if s.grants == nil {
		return nil
	}
	g, err := s.grant(extra)
	if err == nil && !g.Task(task) {
		err = refusal(fmt.Sprintf("agent %s may not read task %s: its token covers %s", s.agent, task, g.TaskList()), "read the resources of your own task")
	}
	if err != nil {
		s.log.Warn("mcp: read refused", "agent", s.agent, "task", task, "reason", err.Error())
	}
	return err
}

// what says what a tool does, for a refusal.
func what(tool string) string {
	switch tool {
	case ToolClaimSubtask:
		return "claim subtasks"
	case ToolSignalDone:
		return "report subtasks done"
	case ToolWritePlan, ToolAmendPlan:
		return "write plans"
	case ToolWriteReview:
		return "write reviews"
	}
	return "call " + tool
}

func globalAccess(g tokens.Grant) string {
	if g.ReadGlobal() {
		return "read-only"
	}
	return "no"
}
