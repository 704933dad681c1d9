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
// tells an agent to call list_env_data), so they stay as they are.
// ToolNames lists them in the order
// they are registered; they are exactly the names of
// workspace.UniversalCapabilities.
const (
	ToolStoreEnvData         = "store_env_data"
	ToolGetEnvData           = "get_env_data"
	ToolListEnvData          = "list_env_data"
	ToolUpdateEnvData        = "update_env_data"
	ToolDeleteEnvData        = "delete_env_data"
	ToolStoreState           = "store_state"
	ToolGetState             = "get_state"
	ToolListState            = "list_state"
	ToolDeleteState          = "delete_state"
	ToolClaimSubtask         = "claim_subtask"
	ToolSignalDone           = "signal_done"
	ToolGetDelegationContext = "get_delegation_context"
	ToolListCapabilities     = "list_capabilities"
)

// ToolNames returns the names of the tools a server serves, in order.
func ToolNames() []string {
	return []string{
		ToolStoreEnvData, ToolGetEnvData, ToolListEnvData, ToolUpdateEnvData, ToolDeleteEnvData,
		ToolStoreState, ToolGetState, ToolListState, ToolDeleteState,
		ToolClaimSubtask, ToolSignalDone, ToolGetDelegationContext, ToolListCapabilities,
		ToolSkills,
	}
}

// Tool inputs. The go-sdk infers each tool's input schema from these types:
// a field without omitempty is required, the jsonschema tag is the
// property's description.

type keyInput struct {
	Key string `json:"key" jsonschema:"The key, e.g. \"arc_task\" (1-200 bytes of UTF-8, no control characters)."`
}

type storeEnvInput struct {
	Key              string `json:"key" jsonschema:"The key to store under, e.g. \"arc_task\" (1-200 bytes of UTF-8, no control characters). An existing key is replaced."`
	ShortDescription string `json:"short_description" jsonschema:"One or two sentences saying what the value holds, so other agents can decide from list_env_data whether to read it."`
	Value            any    `json:"value" jsonschema:"The data: any JSON value (object, array, string, number, boolean or null), up to 1 MiB."`
}

type updateEnvInput struct {
	Key              string  `json:"key" jsonschema:"The existing key to change."`
	ShortDescription *string `json:"short_description,omitempty" jsonschema:"A new description; omit to keep the current one."`
	Value            any     `json:"value,omitempty" jsonschema:"A new value (any JSON); omit to keep the current one."`
	IfVersion        int     `json:"if_version,omitempty" jsonschema:"Only update if the stored version is this number (from list_env_data); the call fails with a conflict otherwise. Omit or 0 to update whatever the version."`
}

type emptyInput struct{}

const scopeDoc = "Where the state lives: \"po\" (default) is your own memory, kept across tasks; \"session\" is this delegation thread's, kept with the task; \"env\" is shared by every agent and every task."

type storeStateInput struct {
	Key              string `json:"key" jsonschema:"The key to store under (1-200 bytes of UTF-8, no control characters). An existing key is replaced."`
	Value            any    `json:"value" jsonschema:"The data: any JSON value, up to 1 MiB."`
	Scope            string `json:"scope,omitempty" jsonschema:"Where the state lives: \"po\" (default) is your own memory, kept across tasks; \"session\" is this delegation thread's, kept with the task; \"env\" is shared by every agent and every task."`
	ShortDescription string `json:"short_description,omitempty" jsonschema:"Optional one-line description shown by list_state."`
}

type stateKeyInput struct {
	Key   string `json:"key" jsonschema:"The key."`
	Scope string `json:"scope,omitempty" jsonschema:"Where the state lives: \"po\" (default) is your own memory, kept across tasks; \"session\" is this delegation thread's, kept with the task; \"env\" is shared by every agent and every task."`
}

type stateScopeInput struct {
	Scope string `json:"scope,omitempty" jsonschema:"Where the state lives: \"po\" (default) is your own memory, kept across tasks; \"session\" is this delegation thread's, kept with the task; \"env\" is shared by every agent and every task."`
}

type claimInput struct {
	SubtaskID string `json:"subtask_id" jsonschema:"The id of the plan's subtask to take, e.g. \"st_3\"."`
}

type doneInput struct {
	OutputFile string         `json:"output_file,omitempty" jsonschema:"The finished product, relative to the task directory: \"outputs/<subtask_id>.json\", \"plan.json\" or \"reviews/<id>.json\". It must exist and match its schema. Default: outputs/<subtask_id>.json."`
	SubtaskID  string         `json:"subtask_id,omitempty" jsonschema:"The subtask finished. Needed with output; otherwise taken from output_file."`
	Status     string         `json:"status,omitempty" jsonschema:"\"completed\" (default), \"failed\" (give error) or \"cancelled\"."`
	Error      string         `json:"error,omitempty" jsonschema:"Why the work failed; required with status \"failed\"."`
	Output     map[string]any `json:"output,omitempty" jsonschema:"The subtask's output document, written to outputs/<subtask_id>.json before the marker, e.g. {\"summary\": \"...\", \"decisions\": [...]}; subtask_id, worker_id and completed_at are filled in."`
	Escalate   string         `json:"escalate,omitempty" jsonschema:"Hand the decision to a human, saying why."`
}

type contextInput struct {
	Detail string `json:"detail,omitempty" jsonschema:"\"minimal\", \"standard\" or \"verbose\"; default: your agent card's setting, else standard."`
}

// Tool descriptions, written for the model that reads them: what the tool
// does, when to use it, what it returns.
const (
	descStoreEnv = "Store a value in the task's shared environment data, so every agent working on this task (the whole delegation tree) can read it without it being pasted into messages. " +
		"Use it for data others need: a puzzle, findings, intermediate results. Creates the key or replaces it (the version goes up). " +
		"Returns a confirmation with the new version, e.g. \"Stored 'arc_task' in environment data (version 1).\""
	descGetEnv = "Read the full value of one key of the task's shared environment data. " +
		"Call list_env_data first to see which keys exist. Returns the value as JSON text; a missing key is an error saying so."
	descListEnv = "List what is in the task's shared environment data: for each key its short_description, stored_by, updated_at, version and size in bytes — no values. " +
		"Call this first when you join a task, then get_env_data for the keys you need. Returns a JSON array (\"[]\" when nothing is stored)."
	descUpdateEnv = "Change an existing key of the task's shared environment data: its short_description, its value, or both; what you omit is kept. " +
		"Fails if the key does not exist (use store_env_data to create). Pass if_version to update only if nobody changed it since you read it. " +
		"Returns a confirmation with the new version."
	descDeleteEnv  = "Remove a key from the task's shared environment data. Returns a confirmation; a missing key is an error."
	descStoreState = "Remember a value. " + scopeDoc + " " +
		"Use it for what you learn and want later: preferences, progress, context. Creates or replaces the key; returns a confirmation with the version."
	descGetState  = "Read one remembered value. " + scopeDoc + " Returns the value as JSON text; a missing key is an error saying so."
	descListState = "List the remembered keys of one scope with their short_description, stored_by, updated_at, version and size — no values. " + scopeDoc +
		" Returns a JSON array."
	descDeleteState = "Forget a remembered key. " + scopeDoc + " Returns a confirmation; a missing key is an error."
	descClaim       = "Ask to take a subtask of the task's plan. This drops a claim marker; the workspace daemon decides, and the first valid claim wins. " +
		"Returns where the claim was dropped and how to check whether you got the subtask (the task's state shows the subtask's worker). Do the work only once it is yours."
	descDone = "Report work finished: drops a done marker that the workspace daemon applies to the task's state. " +
		"For a subtask, pass subtask_id and your result as output (written to outputs/<subtask_id>.json first), or name an output_file you already wrote. " +
		"Use status \"failed\" with error when it could not be done. Returns where the marker was dropped."
	descContext = "Show the delegation context of your thread: who called you, what that caller is, the chain of delegations from the human down to you, and the task's original request. " +
		"Use it when a message lacks background. Returns the [Delegation Context] text, or a sentence saying why there is none (a human called you directly, or your card turns it off)."
	descCapabilities = "Describe yourself: your name, description and role, how you get called, your declared capabilities and every universal tool with what it does, and whether the task has environment data. Returns a text block."
)

func boolPtr(b bool) *bool { return &b }

// addTool registers one tool whose handler returns text. An error becomes
// a tool error (IsError) with ErrorText; a panic in a handler becomes a
// tool error too, so no call can stop the server.
func addTool[In any](s *Server, name, desc string, ann *mcp.ToolAnnotations, h func(ctx context.Context, req *mcp.CallToolRequest, in In) (string, error)) {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: name, Description: desc, Annotations: ann},
		func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, _ error) {
			defer func() {
				if r := recover(); r != nil {
					res = errorResult(fmt.Errorf("%s: internal error: %v", name, r))
				}
			}()
			text, err := h(ctx, req, in)
			if err != nil {
				return errorResult(err), nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ErrorText(err)}}}
}

func (s *Server) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	write := &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)}
	replace := &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)}
	remove := &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(false)}

	addTool(s, ToolStoreEnvData, descStoreEnv, replace, s.storeEnv)
	addTool(s, ToolGetEnvData, descGetEnv, readOnly, s.getEnv)
	addTool(s, ToolListEnvData, descListEnv, readOnly, s.listEnv)
	addTool(s, ToolUpdateEnvData, descUpdateEnv, replace, s.updateEnv)
	addTool(s, ToolDeleteEnvData, descDeleteEnv, remove, s.deleteEnv)
	addTool(s, ToolStoreState, descStoreState, replace, s.storeState)
	addTool(s, ToolGetState, descGetState, readOnly, s.getState)
	addTool(s, ToolListState, descListState, readOnly, s.listState)
	addTool(s, ToolDeleteState, descDeleteState, remove, s.deleteState)
	addTool(s, ToolClaimSubtask, descClaim, write, s.claim)
	addTool(s, ToolSignalDone, descDone, write, s.done)
	addTool(s, ToolGetDelegationContext, descContext, readOnly, s.delegationContext)
	addTool(s, ToolListCapabilities, descCapabilities, readOnly, s.capabilities)
	s.addSkillTool(readOnly)
}

// rawArg returns the bytes of one argument exactly as the client sent
// them. The typed input has already been validated against the schema;
// values are taken from the raw arguments so that numbers keep every digit
// (the typed path decodes them as float64).
func rawArg(req *mcp.CallToolRequest, name string) (json.RawMessage, bool, error) {
	if req == nil || req.Params == nil || len(req.Params.Arguments) == 0 {
		return nil, false, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil, false, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read arguments", Err: err}
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
		return "", err
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
	if in.IfVersion < 0 {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "update " + in.Key, Msg: fmt.Sprintf("if_version %d is negative", in.IfVersion),
			Hint: "pass the version list_env_data shows, or omit if_version"}
	}
	if v == nil && in.ShortDescription == nil {
		return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "update " + in.Key, Msg: "nothing to update",
			Hint: "pass short_description and/or value"}
	}
	r, err := s.w.UpdateEntry(ctx, s.envScope(), workspace.UpdateRequest{Key: in.Key, Description: in.ShortDescription, Value: v, Agent: s.agent, IfVersion: in.IfVersion})
	if err != nil {
		return "", err
	}
	return withWarnings(fmt.Sprintf("Updated '%s' (version %d).", r.Entry.Key, r.Entry.Version), r), nil
}

func (s *Server) deleteEnv(ctx context.Context, _ *mcp.CallToolRequest, in keyInput) (string, error) {
	if err := s.w.DeleteEntry(ctx, s.envScope(), in.Key, s.agent); err != nil {
		return "", err
	}
	return fmt.Sprintf("Deleted '%s' from environment data.", in.Key), nil
}

// stateScope maps a state tool's scope argument (po, session, env; "" is
// po) to a workspace scope, and names it for messages.
func (s *Server) stateScope(name string) (workspace.Scope, string, error) {
	if name == "" {
		name = "po"
	}
	kind, err := workspace.ParseScope(name)
	if err != nil {
		return workspace.Scope{}, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: fmt.Sprintf("scope %q", name), Msg: "unknown scope",
			Hint: "use po (your memory, the default), session (this thread) or env (shared by every agent)"}
	}
	if kind == workspace.ScopeThread {
		return workspace.Scope{}, "", &workspace.Error{Kind: workspace.ErrInvalid, Op: fmt.Sprintf("scope %q", name), Msg: "is the task's environment data, not state",
			Hint: "use the *_env_data tools for it, or scope po, session or env"}
	}
	switch kind {
	case workspace.ScopeAgent:
		return workspace.Scope{Kind: kind, Agent: s.agent}, "your po state", nil
	case workspace.ScopeSession:
		return workspace.Scope{Kind: kind, TaskID: s.task, ThreadID: s.thread}, "the session state of thread " + s.thread, nil
	default:
		return workspace.Scope{Kind: kind}, "the env state shared by every agent", nil
	}
}

func (s *Server) storeState(ctx context.Context, req *mcp.CallToolRequest, in storeStateInput) (string, error) {
	sc, where, err := s.stateScope(in.Scope)
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

func (s *Server) getState(ctx context.Context, _ *mcp.CallToolRequest, in stateKeyInput) (string, error) {
	sc, _, err := s.stateScope(in.Scope)
	if err != nil {
		return "", err
	}
	e, err := s.w.GetEntry(ctx, sc, in.Key)
	if err != nil {
		return "", err
	}
	return string(e.Value), nil
}

func (s *Server) listState(ctx context.Context, _ *mcp.CallToolRequest, in stateScopeInput) (string, error) {
	sc, _, err := s.stateScope(in.Scope)
	if err != nil {
		return "", err
	}
	items, err := s.w.ListEntries(ctx, sc)
	if err != nil {
		return "", err
	}
	return toJSON(items)
}

func (s *Server) deleteState(ctx context.Context, _ *mcp.CallToolRequest, in stateKeyInput) (string, error) {
	sc, where, err := s.stateScope(in.Scope)
	if err != nil {
		return "", err
	}
	if err := s.w.DeleteEntry(ctx, sc, in.Key, s.agent); err != nil {
		return "", err
	}
	return fmt.Sprintf("Deleted '%s' from %s.", in.Key, where), nil
}

// stateURI is the resource holding a task's state.
func stateURI(task string) string { return "workspace://tasks/" + task + "/state" }

// envURI is the resource holding a task's env manifest.
func envURI(task string) string { return "workspace://tasks/" + task + "/env" }

func (s *Server) claim(ctx context.Context, _ *mcp.CallToolRequest, in claimInput) (string, error) {
	marker, err := s.w.WriteClaim(s.task, s.agent, in.SubtaskID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Claim for subtask '%s' dropped (%s). The workspace daemon decides: the first valid claim wins, and a claim of a subtask someone else already holds is refused.\n", in.SubtaskID, marker)
	fmt.Fprintf(&b, "To check, read the task's state (resource %s, or `workspaced state show --task %s`): once your claim is taken, subtasks.%s has worker \"%s\" and status in_progress.", stateURI(s.task), s.task, in.SubtaskID, s.agent)
	if st, err := s.w.ReadState(s.task); err == nil {
		if sub, ok := st.Subtasks[in.SubtaskID]; ok {
			fmt.Fprintf(&b, "\nBefore this claim the state showed subtask '%s' as %s", in.SubtaskID, sub.Status)
			if sub.Worker != "" {
				fmt.Fprintf(&b, " (worker %s)", sub.Worker)
			}
			b.WriteString(".")
		} else {
			fmt.Fprintf(&b, "\nThe current state lists no subtask '%s': the daemon will refuse the claim unless the approved plan has it.", in.SubtaskID)
		}
	}
	return b.String(), nil
}

func (s *Server) done(ctx context.Context, req *mcp.CallToolRequest, in doneInput) (string, error) {
	dr := workspace.DoneRequest{TaskID: s.task, Agent: s.agent, OutputFile: in.OutputFile, SubtaskID: in.SubtaskID,
		Status: in.Status, Error: in.Error, Escalate: in.Escalate}
	var wrote string
	raw, hasOutput, err := rawArg(req, "output")
	if err != nil {
		return "", err
	}
	if hasOutput {
		if in.SubtaskID == "" {
			return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "signal_done", Msg: "output given without subtask_id",
				Hint: "pass subtask_id: the output is written to outputs/<subtask_id>.json"}
		}
		want := "outputs/" + in.SubtaskID + ".json"
		if in.OutputFile != "" && in.OutputFile != want {
			return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "signal_done", Msg: fmt.Sprintf("output_file %q does not match subtask %s", in.OutputFile, in.SubtaskID),
				Hint: "omit output_file when passing output (it is " + want + ")"}
		}
		// Refuse what WriteDone would refuse before writing the output,
		// so a bad call leaves nothing behind.
		switch in.Status {
		case "", "completed", "failed", "cancelled":
		default:
			return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "signal_done", Msg: fmt.Sprintf("unknown status %q", in.Status),
				Hint: "use status completed, failed or cancelled"}
		}
		if in.Status == "failed" && in.Error == "" {
			return "", &workspace.Error{Kind: workspace.ErrInvalid, Op: "signal_done", Msg: "a failed marker needs an error",
				Hint: "say why in error"}
		}
		doc, err := outputDoc(raw, in.Status, in.Error)
		if err != nil {
			return "", err
		}
		rel, err := s.w.WriteOutput(s.task, in.SubtaskID, s.agent, doc)
		if err != nil {
			return "", err
		}
		dr.OutputFile, wrote = rel, rel
	} else if dr.OutputFile == "" && in.SubtaskID != "" && in.Status != "cancelled" {
		dr.OutputFile = "outputs/" + in.SubtaskID + ".json"
	}
	marker, err := s.w.WriteDone(dr)
	if err != nil {
		if wrote != "" {
			return "", fmt.Errorf("wrote %s, but no done marker: %w", wrote, err)
		}
		return "", err
	}
	status := dr.Status
	if status == "" {
		status = "completed"
	}
	var b strings.Builder
	if wrote != "" {
		fmt.Fprintf(&b, "Wrote %s. ", wrote)
	}
	fmt.Fprintf(&b, "Done marker dropped (%s): ", marker)
	switch {
	case dr.SubtaskID != "":
		fmt.Fprintf(&b, "subtask '%s' %s", dr.SubtaskID, status)
	default:
		b.WriteString(status)
	}
	if dr.OutputFile != "" {
		fmt.Fprintf(&b, ", product %s", dr.OutputFile)
	}
	fmt.Fprintf(&b, ". The workspace daemon applies it to the task's state (resource %s).", stateURI(s.task))
	return b.String(), nil
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

func (s *Server) delegationContext(ctx context.Context, _ *mcp.CallToolRequest, in contextInput) (string, error) {
	p, err := s.w.Preamble(s.thread, workspace.PreambleOptions{Detail: in.Detail, TaskID: s.task})
	if err != nil {
		return "", err
	}
	if p.Empty {
		return fmt.Sprintf("There is no delegation context for thread %s: %s.", s.thread, p.Reason), nil
	}
	return p.Text, nil
}

func (s *Server) capabilities(ctx context.Context, _ *mcp.CallToolRequest, _ emptyInput) (string, error) {
	return s.w.SystemContext(s.agent, s.task)
}
