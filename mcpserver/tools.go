package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/ops"
)

// Tool names. Agents know the tools by these names (the delegation preamble
// tells an agent to call list_env_data), so they change only with the
// protocol. ToolNames lists them in the order they are registered; they
// are exactly the names of ops.UniversalCapabilities.
const (
	ToolStoreEnvData         = "store_env_data"
	ToolGetEnvData           = "get_env_data"
	ToolListEnvData          = "list_env_data"
	ToolUpdateEnvData        = "update_env_data"
	ToolDeleteEnvData        = "delete_env_data"
	ToolStoreMemory          = "store_memory"
	ToolGetMemory            = "get_memory"
	ToolListMemory           = "list_memory"
	ToolDeleteMemory         = "delete_memory"
	ToolGetTask              = "get_task"
	ToolGetTaskState         = "get_task_state"
	ToolGetPlan              = "get_plan"
	ToolGetSubtask           = "get_subtask"
	ToolGetOutput            = "get_output"
	ToolListReviews          = "list_reviews"
	ToolGetReview            = "get_review"
	ToolWritePlan            = "write_plan"
	ToolWriteReview          = "write_review"
	ToolClaimSubtask         = "claim_subtask"
	ToolSignalDone           = "signal_done"
	ToolGetDelegationContext = "get_delegation_context"
	ToolListCapabilities     = "list_capabilities"
)

// ToolNames returns the names of the tools a server serves, in order.
func ToolNames() []string {
	return []string{
		ToolStoreEnvData, ToolGetEnvData, ToolListEnvData, ToolUpdateEnvData, ToolDeleteEnvData,
		ToolStoreMemory, ToolGetMemory, ToolListMemory, ToolDeleteMemory, ToolGetMemoryHistory,
		ToolPutMemoryItem, ToolGetMemoryItem, ToolDeleteMemoryItem, ToolSearchMemory, ToolMemoryNamespaces,
		ToolGetTask, ToolGetTaskState, ToolGetPlan, ToolGetSubtask, ToolGetOutput, ToolListReviews, ToolGetReview,
		ToolWritePlan, ToolAmendPlan, ToolWriteReview, ToolClaimSubtask, ToolSignalDone,
		ToolGetDelegationContext, ToolListCapabilities, ToolSkills,
		ToolListTasks, ToolCreateTask, ToolGetContext,
	}
}

// Tool inputs. Each tool's input schema is derived from its struct (see
// schema.go): a field without omitempty is a required argument, the
// jsonschema tag its description, enum and minimum bound it. Every
// optional argument is shaped alike: one JSON type (value alone takes any
// JSON), never null. A description is given only where the name and the
// type leave something to say, and is short: every client pays for every
// byte of it in every session.

type keyInput struct {
	Key string `json:"key"`
}

type storeEnvInput struct {
	Key              string    `json:"key"`
	ShortDescription string    `json:"short_description,omitempty" jsonschema:"What the value holds, shown by list_env_data."`
	Value            sentValue `json:"value"`
}

type updateEnvInput struct {
	Key              string    `json:"key"`
	ShortDescription string    `json:"short_description,omitempty"`
	Value            sentValue `json:"value,omitempty"`
	IfVersion        int       `json:"if_version,omitempty" minimum:"1" jsonschema:"Update only if the version is still this."`
}

type emptyInput struct{}

// Memory scopes, as the memory tools name them.
const (
	memoryAgent   = "agent"
	memorySession = "session"
	memoryGlobal  = "global"
)

type storeMemoryInput struct {
	Key              string    `json:"key"`
	Value            sentValue `json:"value"`
	Scope            string    `json:"scope,omitempty" enum:"agent,session,global" jsonschema:"agent: yours, kept forever (default); session: this thread's; global: every agent's."`
	ShortDescription string    `json:"short_description,omitempty"`
}

type memoryKeyInput struct {
	Key   string `json:"key"`
	Scope string `json:"scope,omitempty" enum:"agent,session,global" jsonschema:"Default agent."`
}

type memoryScopeInput struct {
	Scope string `json:"scope,omitempty" enum:"agent,session,global" jsonschema:"Default agent."`
}

type claimInput struct {
	SubtaskID string `json:"subtask_id" pattern:"id"`
}

type doneInput struct {
	SubtaskID  string     `json:"subtask_id,omitempty" pattern:"id"`
	Output     sentObject `json:"output,omitempty" jsonschema:"Your result (summary, decisions...)."`
	OutputFile string     `json:"output_file,omitempty" jsonschema:"Already written (default outputs/SUBTASK_ID.json)."`
	Status     string     `json:"status,omitempty" enum:"completed,failed,cancelled" jsonschema:"Default completed; failed needs error; cancelled cancels the task."`
	Error      string     `json:"error,omitempty"`
	Escalate   string     `json:"escalate,omitempty" jsonschema:"Why a human must decide."`
}

type contextInput struct {
	Detail string `json:"detail,omitempty" enum:"minimal,standard,verbose" jsonschema:"Default: your card's, else standard."`
}

// Tool descriptions, written for the model that reads them: what the tool
// does, when to use it, what comes back — in as few words as say it.
const (
	descStoreEnv     = "Store (or replace) a value in the task's env data, which every agent of the task reads."
	descGetEnv       = "Read one key of the task's env data. Returns its value."
	descListEnv      = "List the task's env data (keys, descriptions, versions; no values). Call it first when you join a task."
	descUpdateEnv    = "Change an existing env data key; what you leave out is kept."
	descDeleteEnv    = "Remove a key from the task's env data."
	descStoreMemory  = "Store (or replace) a value in your memory, not the task's state."
	descGetMemory    = "Read one key of your memory. Returns its value."
	descListMemory   = "List the keys of one memory scope, no values."
	descDeleteMemory = "Forget a key of your memory."
	descClaim        = "Take a pending subtask of the approved plan; waits for the daemon's verdict: won (yours), lost or not_found (an error saying why), queued (no daemon yet). Work only on what you won."
	descDone         = "Report your subtask done with its output; waits for the daemon's verdict (applied or refused)."
	descContext      = "Show who called you, the delegation chain and the task's request."
	descCapabilities = "Describe yourself: role, capabilities, tools."
)

// Annotations: a read changes nothing, which lets a client call it
// without asking. A write is left to the protocol's defaults (it may
// change or remove what is there): the hints that say less than that are
// not worth their bytes in every listing.
var annRead = &mcp.ToolAnnotations{ReadOnlyHint: true}

func buildTools() []*toolDef {
	tools := []*toolDef{
		define(ToolStoreEnvData, descStoreEnv, nil, nil, text((*Server).storeEnv)),
		define(ToolGetEnvData, descGetEnv, annRead, outValue, under("value", (*Server).getEnv)),
		define(ToolListEnvData, descListEnv, annRead, outEntries, under("entries", (*Server).listEnv)),
		define(ToolUpdateEnvData, descUpdateEnv, nil, nil, text((*Server).updateEnv)),
		define(ToolDeleteEnvData, descDeleteEnv, nil, nil, text((*Server).deleteEnv)),
		define(ToolStoreMemory, descStoreMemory, nil, nil, text((*Server).storeMemory)),
		define(ToolGetMemory, descGetMemory, annRead, outValue, under("value", (*Server).getMemory)),
		define(ToolListMemory, descListMemory, annRead, outEntries, under("entries", (*Server).listMemory)),
		define(ToolDeleteMemory, descDeleteMemory, nil, nil, text((*Server).deleteMemory)),
		historyTool(),
	}
	tools = append(tools, memoryTools()...)
	return append(tools,
		define(ToolGetTask, descGetTask, annRead, outObject, object((*Server).getTask)),
		define(ToolGetTaskState, descGetTaskState, annRead, outObject, object((*Server).getTaskState)),
		define(ToolGetPlan, descGetPlan, annRead, outObject, object((*Server).getPlan)),
		define(ToolGetSubtask, descGetSubtask, annRead, outObject, object((*Server).getSubtask)),
		define(ToolGetOutput, descGetOutput, annRead, outObject, object((*Server).getOutput)),
		define(ToolListReviews, descListReviews, annRead, outObject, object((*Server).listReviews)),
		define(ToolGetReview, descGetReview, annRead, outObject, object((*Server).getReview)),
		define(ToolWritePlan, descWritePlan, nil, outVerdict, (*Server).writePlan),
		define(ToolAmendPlan, descAmendPlan, nil, outVerdict, (*Server).amendPlan),
		define(ToolWriteReview, descWriteReview, nil, outVerdict, (*Server).writeReview),
		define(ToolClaimSubtask, descClaim, nil, outVerdict, (*Server).claim),
		define(ToolSignalDone, descDone, nil, outVerdict, (*Server).done),
		define(ToolGetDelegationContext, descContext, annRead, nil, text((*Server).delegationContext)),
		define(ToolListCapabilities, descCapabilities, annRead, nil, text((*Server).capabilities)),
		define(ToolSkills, descSkills, annRead, outObject, (*Server).skills),
		define(ToolListTasks, descListTasks, annRead, outTasks, under("tasks", func(s *Server, ctx context.Context, req *mcp.CallToolRequest, _ emptyInput) (string, error) {
			return s.listTasks(ctx, req.Extra)
		})),
		define(ToolCreateTask, descCreateTask, nil, outObject, object((*Server).createTask)),
		define(ToolGetContext, descGetContext, annRead, outObject, (*Server).getContext),
	)
}

// rawArgs returns the arguments exactly as the client sent them, by name.
// The typed input has already been validated against the schema; values
// are taken from the raw arguments so that numbers keep every digit (the
// typed path decodes them as float64) and so that an argument left out
// can be told from one given empty. The map is the call's, read by every
// step of it: it is not to be changed.
func rawArgs(ctx context.Context, req *mcp.CallToolRequest) (map[string]json.RawMessage, error) {
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	a := argsOf(ctx, raw)
	if len(raw) == 0 {
		return map[string]json.RawMessage{}, nil
	}
	if a.err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read arguments", Err: a.err}
	}
	if a.top == nil {
		return map[string]json.RawMessage{}, nil
	}
	return a.top, nil
}

// argsKey holds in a call's context its arguments by name (callArgs),
// read once for every step of the call.
type argsKey struct{}

// callArgs are a call's arguments by name, as sent: top is nil when they
// are not an object (err says why) or are null.
type callArgs struct {
	top map[string]json.RawMessage
	err error
}

// argsOf is the call's arguments by name: those ctx holds, else raw's.
func argsOf(ctx context.Context, raw json.RawMessage) *callArgs {
	if a, ok := ctx.Value(argsKey{}).(*callArgs); ok {
		return a
	}
	return parseArgs(raw)
}

func parseArgs(raw json.RawMessage) *callArgs {
	a := &callArgs{}
	a.err = json.Unmarshal(raw, &a.top)
	if a.err != nil {
		a.top = nil
	}
	return a
}

// rawArg returns one argument as rawArgs does, and whether it was given.
func rawArg(ctx context.Context, req *mcp.CallToolRequest, name string) (json.RawMessage, bool, error) {
	args, err := rawArgs(ctx, req)
	if err != nil {
		return nil, false, err
	}
	v, ok := args[name]
	return v, ok, nil
}

// valueArg is the value argument; required says whether it must be there.
func valueArg(ctx context.Context, req *mcp.CallToolRequest, required bool) (json.RawMessage, error) {
	v, ok, err := rawArg(ctx, req, "value")
	if err != nil {
		return nil, err
	}
	if !ok {
		if required {
			return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Msg: "missing value", Hint: "pass value: any JSON value"}
		}
		return nil, nil
	}
	return v, nil
}

// toJSON encodes v compactly, without HTML escaping.
func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode result: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// withWarnings appends a result's warnings (a large value) to a message.
func withWarnings(msg string, r workspace.Result) string {
	for _, w := range r.Warnings {
		msg += "\nWarning: " + w
	}
	return msg
}

func (s *Server) envScope() workspace.Scope {
	return workspace.Scope{Kind: workspace.ScopeThread, TaskID: s.task}
}

func (s *Server) storeEnv(ctx context.Context, req *mcp.CallToolRequest, in storeEnvInput) (string, error) {
	v, err := valueArg(ctx, req, true)
	if err != nil {
		return "", err
	}
	r, err := s.w.StoreEntry(ctx, s.envScope(), workspace.StoreRequest{Key: in.Key, Description: in.ShortDescription, Value: v, Agent: s.agent})
	if err != nil {
		return "", err
	}
	return withWarnings(fmt.Sprintf("Stored '%s' in environment data (version %d).", r.Entry.Key, r.Entry.Version), r), nil
}

func (s *Server) getEnv(ctx context.Context, _ *mcp.CallToolRequest, in keyInput) (string, error) {
	e, err := s.w.GetEntry(ctx, s.envScope(), in.Key)
	if err != nil {
		return "", redirect(err, workspace.ErrNotFound, "call "+ToolListEnvData+" to see which keys exist")
	}
	return string(e.Value), nil
}

func (s *Server) listEnv(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	items, err := s.w.ListEntries(ctx, s.envScope())
	if err != nil {
		return "", err
	}
	return toJSON(items)
}

func (s *Server) updateEnv(ctx context.Context, req *mcp.CallToolRequest, in updateEnvInput) (string, error) {
	v, err := valueArg(ctx, req, false)
	if err != nil {
		return "", err
	}
	var desc *string
	if _, ok, err := rawArg(ctx, req, "short_description"); err != nil {
		return "", err
	} else if ok {
		desc = &in.ShortDescription
	}
	if v == nil && desc == nil {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "update " + in.Key, Msg: "nothing to update",
			Hint: "pass short_description, value or both"}
	}
	r, err := s.w.UpdateEntry(ctx, s.envScope(), workspace.UpdateRequest{Key: in.Key, Description: desc, Value: v, Agent: s.agent, IfVersion: in.IfVersion})
	if err != nil {
		err = redirect(err, workspace.ErrNotFound, "call "+ToolStoreEnvData+" to create it, or "+ToolListEnvData+" to see which keys exist")
		return "", redirect(err, workspace.ErrConflict, "another agent changed it since you read it: call "+ToolGetEnvData+" to read it again, then retry with if_version set to the version "+ToolListEnvData+" shows")
	}
	return withWarnings(fmt.Sprintf("Updated '%s' (version %d).", r.Entry.Key, r.Entry.Version), r), nil
}

func (s *Server) deleteEnv(ctx context.Context, _ *mcp.CallToolRequest, in keyInput) (string, error) {
	if err := s.w.DeleteEntry(ctx, s.envScope(), workspace.DeleteRequest{Key: in.Key, Agent: s.agent}); err != nil {
		return "", redirect(err, workspace.ErrNotFound, "call "+ToolListEnvData+" to see which keys exist")
	}
	return fmt.Sprintf("Deleted '%s' from environment data.", in.Key), nil
}

// memoryScope maps a memory tool's scope argument (agent, session, global;
// "" is agent) to a workspace scope, and names it for messages. The input
// schema admits nothing else; a value outside it is still refused here.
func (s *Server) memoryScope(name string) (workspace.Scope, string, error) {
	switch name {
	case "", memoryAgent:
		return workspace.Scope{Kind: workspace.ScopeAgent, Agent: s.agent}, "your agent memory", nil
	case memorySession:
		if s.task == "" {
			return workspace.Scope{}, "", &toolError{err: &workspace.Error{Kind: workspace.ErrInvalid, Op: "scope session", Msg: "no thread named: this session serves the whole workspace"},
				hint: "pass thread (or task, for its root thread) with scope session"}
		}
		return workspace.Scope{Kind: workspace.ScopeSession, TaskID: s.task, ThreadID: s.thread}, "the session memory of thread " + s.thread, nil
	case memoryGlobal:
		return workspace.Scope{Kind: workspace.ScopeGlobal}, "the global memory shared by every agent", nil
	}
	return workspace.Scope{}, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: fmt.Sprintf("scope %q", name), Msg: "unknown memory scope",
		Hint: "use scope agent (yours, the default), session (this thread) or global (every agent)"}
}

// memoryMissing is the hint for a key the memory scope lacks.
func memoryMissing(scope string) string {
	if scope == "" {
		scope = memoryAgent
	}
	return fmt.Sprintf("call %s with scope %s to see which keys exist", ToolListMemory, scope)
}

func (s *Server) storeMemory(ctx context.Context, req *mcp.CallToolRequest, in storeMemoryInput) (string, error) {
	sc, where, err := s.memoryScope(in.Scope)
	if err != nil {
		return "", err
	}
	v, err := valueArg(ctx, req, true)
	if err != nil {
		return "", err
	}
	r, err := s.w.StoreEntry(ctx, sc, workspace.StoreRequest{Key: in.Key, Description: in.ShortDescription, Value: v, Agent: s.agent})
	if err != nil {
		return "", err
	}
	return withWarnings(fmt.Sprintf("Stored '%s' in %s (version %d).", r.Entry.Key, where, r.Entry.Version), r), nil
}

func (s *Server) getMemory(ctx context.Context, _ *mcp.CallToolRequest, in memoryKeyInput) (string, error) {
	sc, _, err := s.memoryScope(in.Scope)
	if err != nil {
		return "", err
	}
	e, err := s.w.GetEntry(ctx, sc, in.Key)
	if err != nil {
		return "", redirect(err, workspace.ErrNotFound, memoryMissing(in.Scope))
	}
	return string(e.Value), nil
}

func (s *Server) listMemory(ctx context.Context, _ *mcp.CallToolRequest, in memoryScopeInput) (string, error) {
	sc, _, err := s.memoryScope(in.Scope)
	if err != nil {
		return "", err
	}
	items, err := s.w.ListEntries(ctx, sc)
	if err != nil {
		return "", err
	}
	return toJSON(items)
}

func (s *Server) deleteMemory(ctx context.Context, _ *mcp.CallToolRequest, in memoryKeyInput) (string, error) {
	sc, where, err := s.memoryScope(in.Scope)
	if err != nil {
		return "", err
	}
	if err := s.w.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: in.Key, Agent: s.agent}); err != nil {
		return "", redirect(err, workspace.ErrNotFound, memoryMissing(in.Scope))
	}
	return fmt.Sprintf("Deleted '%s' from %s.", in.Key, where), nil
}

func (s *Server) delegationContext(ctx context.Context, _ *mcp.CallToolRequest, in contextInput) (string, error) {
	p, err := service.Preamble(ctx, s.w, s.thread, ops.PreambleOptions{Detail: in.Detail, TaskID: s.task, Surface: ops.SurfaceMCP})
	if err != nil {
		return "", err
	}
	if p.Empty {
		return fmt.Sprintf("There is no delegation context for thread %s: %s.", s.thread, p.Reason), nil
	}
	return p.Text, nil
}

func (s *Server) capabilities(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	return service.Capabilities(ctx, s.w, s.agent, s.task)
}
