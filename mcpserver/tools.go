package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/workspace"
)

// Tool names. Agents know the tools by these names (the delegation preamble
// tells an agent to call list_env_data), so they change only with the
// protocol. ToolNames lists them in the order they are registered; they
// are exactly the names of workspace.UniversalCapabilities.
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
		ToolStoreMemory, ToolGetMemory, ToolListMemory, ToolDeleteMemory,
		ToolGetTask, ToolGetTaskState, ToolGetPlan, ToolGetSubtask, ToolGetOutput, ToolListReviews, ToolGetReview,
		ToolWritePlan, ToolWriteReview, ToolClaimSubtask, ToolSignalDone,
		ToolGetDelegationContext, ToolListCapabilities, ToolSkills,
	}
}

// Tool inputs. Each tool's input schema is derived from its struct (see
// schema.go): a field without omitempty is a required argument, the
// jsonschema tag is its description, enum and minimum bound it. Every
// optional argument is shaped alike: one JSON type (value alone takes any
// JSON), never null, and a description that starts with "Optional." and
// says what leaving it out does.

type keyInput struct {
	Key string `json:"key" jsonschema:"The key, e.g. \"arc_task\" (1-200 bytes of UTF-8, no control characters)."`
}

type storeEnvInput struct {
	Key              string `json:"key" jsonschema:"The key to store under, e.g. \"arc_task\" (1-200 bytes of UTF-8, no control characters). An existing key is replaced."`
	ShortDescription string `json:"short_description" jsonschema:"One or two sentences saying what the value holds, so other agents can decide from list_env_data whether to read it."`
	Value            any    `json:"value" jsonschema:"The data: any JSON value (object, array, string, number, boolean or null), up to 1 MiB."`
}

type updateEnvInput struct {
	Key              string `json:"key" jsonschema:"The existing key to change."`
	ShortDescription string `json:"short_description,omitempty" jsonschema:"Optional. A new description. Left out, the current one is kept."`
	Value            any    `json:"value,omitempty" jsonschema:"Optional. A new value, any JSON (null too). Left out, the current value is kept."`
	IfVersion        int    `json:"if_version,omitempty" minimum:"1" jsonschema:"Optional. Update only if the stored version is this number (list_env_data shows it); otherwise the call fails with a conflict and changes nothing. Left out, the update applies whatever the version."`
}

type emptyInput struct{}

// Memory scopes, as the memory tools name them.
const (
	memoryAgent   = "agent"
	memorySession = "session"
	memoryGlobal  = "global"
)

type storeMemoryInput struct {
	Key              string `json:"key" jsonschema:"The key to store under (1-200 bytes of UTF-8, no control characters). An existing key is replaced."`
	Value            any    `json:"value" jsonschema:"The data: any JSON value, up to 1 MiB."`
	Scope            string `json:"scope,omitempty" enum:"agent,session,global" jsonschema:"Optional. Which memory: \"agent\" is yours alone and lasts forever; \"session\" belongs to this delegation thread and is removed with the task; \"global\" is shared by every agent and every task and lasts forever. Left out: agent."`
	ShortDescription string `json:"short_description,omitempty" jsonschema:"Optional. One line saying what the value holds, shown by list_memory. Left out: empty."`
}

type memoryKeyInput struct {
	Key   string `json:"key" jsonschema:"The key."`
	Scope string `json:"scope,omitempty" enum:"agent,session,global" jsonschema:"Optional. Which memory: \"agent\" is yours alone and lasts forever; \"session\" belongs to this delegation thread and is removed with the task; \"global\" is shared by every agent and every task and lasts forever. Left out: agent."`
}

type memoryScopeInput struct {
	Scope string `json:"scope,omitempty" enum:"agent,session,global" jsonschema:"Optional. Which memory: \"agent\" is yours alone and lasts forever; \"session\" belongs to this delegation thread and is removed with the task; \"global\" is shared by every agent and every task and lasts forever. Left out: agent."`
}

type claimInput struct {
	SubtaskID string `json:"subtask_id" pattern:"id" jsonschema:"The id of the plan's subtask to take, e.g. \"st_3\"."`
}

type doneInput struct {
	SubtaskID  string         `json:"subtask_id,omitempty" pattern:"id" jsonschema:"Optional. The subtask finished. Needed with output. Left out, it is taken from output_file."`
	Output     map[string]any `json:"output,omitempty" jsonschema:"Optional. The subtask's result, written to outputs/<subtask_id>.json before the marker, e.g. {\"summary\": \"...\", \"decisions\": [...]}; subtask_id, worker_id and completed_at are filled in. Left out, output_file names a result already written."`
	OutputFile string         `json:"output_file,omitempty" jsonschema:"Optional. A result already written, relative to the task directory: \"outputs/<subtask_id>.json\". It must exist and match its schema. Left out: outputs/<subtask_id>.json."`
	Status     string         `json:"status,omitempty" enum:"completed,failed,cancelled" jsonschema:"Optional. How the work ended: \"completed\"; \"failed\" (give error); \"cancelled\" cancels the whole task. Left out: completed."`
	Error      string         `json:"error,omitempty" jsonschema:"Optional. Why the work failed; needed with status failed. Left out: no error."`
	Escalate   string         `json:"escalate,omitempty" jsonschema:"Optional. Hand the matter to a human, saying why. Left out: no escalation."`
}

type contextInput struct {
	Detail string `json:"detail,omitempty" enum:"minimal,standard,verbose" jsonschema:"Optional. How much to say: \"minimal\" (who called you and the chain), \"standard\" (also what the caller is and the task's request), \"verbose\" (also the message that delegated to your caller, its capabilities, and your thread's concern and approach). Left out: your agent card's setting, else standard."`
}

// Tool descriptions, written for the model that reads them: what the tool
// does, when to use it, what comes back.
const (
	descStoreEnv = "Store a value in the task's shared environment data, so every agent working on this task (the whole delegation tree) can read it without it being pasted into messages. " +
		"Use it for data others need: a puzzle, findings, intermediate results. Creates the key or replaces it (the version goes up). " +
		"Returns a confirmation with the new version, e.g. \"Stored 'arc_task' in environment data (version 1).\""
	descGetEnv = "Read the full value of one key of the task's shared environment data. " +
		"Call list_env_data first to see which keys exist. Returns the value as JSON text; a missing key is an error saying so."
	descListEnv = "List what is in the task's shared environment data: for each key its short_description, stored_by, updated_at, version and size in bytes — no values. " +
		"Call this first when you join a task, then get_env_data for the keys you need. Returns a JSON array (\"[]\" when nothing is stored)."
	descUpdateEnv = "Change an existing key of the task's shared environment data: its short_description, its value, or both; what you leave out is kept. " +
		"Fails if the key does not exist (use store_env_data to create). Pass if_version to update only if nobody changed it since you read it. " +
		"Returns a confirmation with the new version."
	descDeleteEnv   = "Remove a key from the task's shared environment data. Returns a confirmation; a missing key is an error."
	descStoreMemory = "Remember a value under a key in your memory — not the task's state, which only the workspace daemon writes (read that with get_task_state). " +
		"Use it for what you learn and want later: preferences, progress, context. scope picks the memory: agent (yours, the default), session (this thread) or global (every agent). " +
		"Creates or replaces the key. Returns a confirmation with the version, e.g. \"Stored 'style' in your agent memory (version 1).\""
	descGetMemory    = "Read one value of your memory (scope agent, session or global; default agent). Returns the value as JSON text; a missing key is an error saying so."
	descListMemory   = "List the keys of one memory scope (agent, session or global; default agent) with their short_description, stored_by, updated_at, version and size — no values. Returns a JSON array (\"[]\" when empty)."
	descDeleteMemory = "Forget a key of your memory (scope agent, session or global; default agent). Returns a confirmation; a missing key is an error."
	descClaim        = "Ask to take a subtask of the approved plan. This drops a claim marker; the workspace daemon decides, and the first valid claim wins. " +
		"Do the work only once it is yours: call get_subtask until it shows status in_progress with you as worker. " +
		"Returns where the claim went and what the state showed for the subtask before it."
	descDone = "Report a subtask finished: writes your result as outputs/<subtask_id>.json (pass it as output) and drops a done marker that the workspace daemon applies to the task's state. " +
		"Use status \"failed\" with error when it could not be done. Plans and reviews are reported by write_plan and write_review, not here. " +
		"Returns what was written and where the marker went."
	descContext = "Show the delegation context of your thread: who called you, what that caller is, the chain of delegations from the human down to you, and the task's original request. " +
		"Use it when a message lacks background. Returns the [Delegation Context] text, or a sentence saying why there is none (a human called you directly, or your card turns it off)."
	descCapabilities = "Describe yourself: your name, description and role, how you get called, your declared capabilities and every universal tool with what it does, and whether the task has environment data. Returns a text block."
)

func boolPtr(b bool) *bool { return &b }

// Annotations: a read changes nothing; a write adds (a marker, a plan
// version, a review) and replaces nothing; a store or update may replace
// a value; a delete removes one. Every tool works in the workspace alone.
var (
	annRead    = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}
	annWrite   = &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)}
	annReplace = &mcp.ToolAnnotations{OpenWorldHint: boolPtr(false)}
)

func buildTools() []*toolDef {
	return []*toolDef{
		define(ToolStoreEnvData, descStoreEnv, annReplace, nil, text((*Server).storeEnv)),
		define(ToolGetEnvData, descGetEnv, annRead, outValue, under("value", (*Server).getEnv)),
		define(ToolListEnvData, descListEnv, annRead, outEntries, under("entries", (*Server).listEnv)),
		define(ToolUpdateEnvData, descUpdateEnv, annReplace, nil, text((*Server).updateEnv)),
		define(ToolDeleteEnvData, descDeleteEnv, annReplace, nil, text((*Server).deleteEnv)),
		define(ToolStoreMemory, descStoreMemory, annReplace, nil, text((*Server).storeMemory)),
		define(ToolGetMemory, descGetMemory, annRead, outValue, under("value", (*Server).getMemory)),
		define(ToolListMemory, descListMemory, annRead, outEntries, under("entries", (*Server).listMemory)),
		define(ToolDeleteMemory, descDeleteMemory, annReplace, nil, text((*Server).deleteMemory)),
		define(ToolGetTask, descGetTask, annRead, outObject, object((*Server).getTask)),
		define(ToolGetTaskState, descGetTaskState, annRead, outObject, object((*Server).getTaskState)),
		define(ToolGetPlan, descGetPlan, annRead, outObject, object((*Server).getPlan)),
		define(ToolGetSubtask, descGetSubtask, annRead, outObject, object((*Server).getSubtask)),
		define(ToolGetOutput, descGetOutput, annRead, outObject, object((*Server).getOutput)),
		define(ToolListReviews, descListReviews, annRead, outObject, object((*Server).listReviews)),
		define(ToolGetReview, descGetReview, annRead, outObject, object((*Server).getReview)),
		define(ToolWritePlan, descWritePlan, annWrite, outVerdict, (*Server).writePlan),
		define(ToolWriteReview, descWriteReview, annWrite, outVerdict, (*Server).writeReview),
		define(ToolClaimSubtask, descClaim, annWrite, outVerdict, (*Server).claim),
		define(ToolSignalDone, descDone, annWrite, outVerdict, (*Server).done),
		define(ToolGetDelegationContext, descContext, annRead, nil, text((*Server).delegationContext)),
		define(ToolListCapabilities, descCapabilities, annRead, nil, text((*Server).capabilities)),
		define(ToolSkills, descSkills, annRead, outObject, (*Server).skills),
	}
}

// rawArgs returns the arguments exactly as the client sent them, by name.
// The typed input has already been validated against the schema; values
// are taken from the raw arguments so that numbers keep every digit (the
// typed path decodes them as float64) and so that an argument left out
// can be told from one given empty.
func rawArgs(req *mcp.CallToolRequest) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if req == nil || req.Params == nil || len(req.Params.Arguments) == 0 {
		return args, nil
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read arguments", Err: err}
	}
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	return args, nil
}

// rawArg returns one argument as rawArgs does, and whether it was given.
func rawArg(req *mcp.CallToolRequest, name string) (json.RawMessage, bool, error) {
	args, err := rawArgs(req)
	if err != nil {
		return nil, false, err
	}
	v, ok := args[name]
	return v, ok, nil
}

// valueArg is the value argument; required says whether it must be there.
func valueArg(req *mcp.CallToolRequest, required bool) (json.RawMessage, error) {
	v, ok, err := rawArg(req, "value")
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
	v, err := valueArg(req, true)
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
	v, err := valueArg(req, false)
	if err != nil {
		return "", err
	}
	var desc *string
	if _, ok, err := rawArg(req, "short_description"); err != nil {
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
	if err := s.w.DeleteEntry(ctx, s.envScope(), in.Key, s.agent); err != nil {
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
	v, err := valueArg(req, true)
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
	if err := s.w.DeleteEntry(ctx, sc, in.Key, s.agent); err != nil {
		return "", redirect(err, workspace.ErrNotFound, memoryMissing(in.Scope))
	}
	return fmt.Sprintf("Deleted '%s' from %s.", in.Key, where), nil
}

func (s *Server) delegationContext(ctx context.Context, _ *mcp.CallToolRequest, in contextInput) (string, error) {
	p, err := workspace.Over(s.w).Preamble(s.thread, workspace.PreambleOptions{Detail: in.Detail, TaskID: s.task})
	if err != nil {
		return "", err
	}
	if p.Empty {
		return fmt.Sprintf("There is no delegation context for thread %s: %s.", s.thread, p.Reason), nil
	}
	return p.Text, nil
}

func (s *Server) capabilities(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	return workspace.Over(s.w).Capabilities(s.agent, s.task)
}
