package ops

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/workspaced/workspaced/workspace"
)

// Preamble detail levels. Each level includes everything of the one before.
const (
	// DetailMinimal says who called and the delegation chain.
	DetailMinimal = "minimal"
	// DetailStandard adds what the caller is (its card's description), the
	// task context (the root message, cut to a bound, and what the caller
	// is doing now: its thread's progress, else its approach, cut the same
	// way) and the hint to call list_env_data when the task has env data.
	// It is the default.
	DetailStandard = "standard"
	// DetailVerbose adds the message that delegated to the caller (cut to
	// the same bound), the caller's declared capabilities and the current
	// thread's concern and approach.
	DetailVerbose = "verbose"
)

// DefaultPreambleMessageBytes bounds each message quoted in a preamble
// (the root message, and at verbose the caller's own message). A longer
// message is cut at a UTF-8 boundary and ends in "…".
const DefaultPreambleMessageBytes = 300

// NoCard stands in for the description of an agent without a card in
// config/agents.json.
const NoCard = "(no agent card)"

// EnvHint is the preamble line that points a delegated agent of MCP at
// the shared environment data (surface.go: the other doors').
const EnvHint = "Shared environment data is available — call list_env_data() to see what has been stored."

// PreambleOptions tune Preamble.
type PreambleOptions struct {
	// Detail is minimal, standard or verbose; "" takes the called agent's
	// card preamble_detail, else standard.
	Detail string
	// MaxMessageBytes bounds each quoted message; 0 means
	// DefaultPreambleMessageBytes.
	MaxMessageBytes int
	// TaskID, when known, skips the scan of every task for the thread.
	TaskID string
	// Surface is the door the called agent works through: the preamble
	// names its calls. "" is SurfaceMCP.
	Surface Surface
}

// Preamble is the delegation preamble: what an agent called by
// another agent reads before the message itself. Text is the block to
// prepend (ending in a newline), or "" when Empty; the other fields are its
// parts, for callers that render it their own way.
type Preamble struct {
	Text              string `json:"text"`
	Thread            string `json:"thread"`
	Task              string `json:"task"`
	Agent             string `json:"agent"`
	CalledBy          string `json:"called_by,omitempty"`
	CallerDescription string `json:"caller_description,omitempty"`
	Chain             string `json:"chain,omitempty"`
	TaskContext       string `json:"task_context,omitempty"`
	EnvHint           bool   `json:"env_hint"`
	Detail            string `json:"detail"`
	Empty             bool   `json:"empty"`
	// Reason says why the preamble is empty.
	Reason string `json:"reason,omitempty"`
	// CallerStep is what the caller is doing now, as the task context
	// quotes it: its thread's progress, else its approach ("" when it
	// noted neither).
	CallerStep string `json:"caller_step,omitempty"`
}

// ParseDetail checks a detail level; "" is allowed and means "the card's".
func ParseDetail(s string) (string, error) {
	switch s {
	case "", DetailMinimal, DetailStandard, DetailVerbose:
		return s, nil
	}
	return "", workspace.Invalidf("detail "+strconv.Quote(s), "use minimal, standard or verbose", "unknown detail level")
}

// isHuman reports whether a thread was started by a person: the root
// thread, or a thread whose caller is "human" or the task's submitter.
func isHuman(t workspace.Thread, task workspace.Task) bool {
	return t.ParentID == "" || t.From == "human" || (task.SubmittedBy != "" && t.From == task.SubmittedBy)
}

// Preamble builds the delegation preamble the agent of threadID (its To)
// receives. It reads the thread's chain (a cycle, a missing parent or a
// parent in another task is an error naming the thread), the agent cards
// and the task's env manifest (keys only, never values); it writes nothing
// and is safe for concurrent use.
//
// The preamble is empty (Empty true, Text "") when the thread was started
// by a human — the root thread, or a thread whose from is "human" or the
// task's submitted_by — or when the called agent's card sets
// delegation_context to false. What each detail level includes is
// documented on DetailMinimal, DetailStandard and DetailVerbose; the same
// tree always gives the same bytes. When ctx ends, it stops with the
// context's error.
func (w Ops) Preamble(ctx context.Context, threadID string, opt PreambleOptions) (Preamble, error) {
	detail, err := ParseDetail(opt.Detail)
	if err != nil {
		return Preamble{}, err
	}
	max := opt.MaxMessageBytes
	if max <= 0 {
		max = DefaultPreambleMessageBytes
	}
	taskID, err := w.threadTask(ctx, threadID, opt.TaskID)
	if err != nil {
		return Preamble{}, err
	}
	chain, err := w.Chain(ctx, taskID, threadID)
	if err != nil {
		return Preamble{}, err
	}
	task, err := w.GetTask(ctx, taskID)
	if err != nil {
		return Preamble{}, err
	}
	cards, err := w.LoadAgents(ctx)
	if err != nil {
		return Preamble{}, err
	}
	cur := chain[len(chain)-1]
	p := Preamble{Thread: cur.ID, Task: taskID, Agent: cur.To}
	callee, hasCallee := cards.Card(cur.To)
	if detail == "" {
		detail = DetailStandard
		if hasCallee && callee.PreambleDetail != "" {
			detail = callee.PreambleDetail
		}
	}
	p.Detail = detail
	switch {
	case cur.ParentID == "":
		p.Empty, p.Reason = true, fmt.Sprintf("thread %s is the root thread of task %s, started by %s", cur.ID, taskID, cur.From)
		return p, nil
	case isHuman(cur, task):
		p.Empty, p.Reason = true, fmt.Sprintf("thread %s was started by %s, not by an agent", cur.ID, cur.From)
		return p, nil
	case hasCallee && !callee.WantsPreamble():
		p.Empty, p.Reason = true, fmt.Sprintf("agent %s's card sets delegation_context to false", cur.To)
		return p, nil
	}

	caller, hasCaller := cards.Card(cur.From)
	p.CalledBy = cur.From
	p.Chain = FormatChain(chain)
	lines := []string{"---", "[Delegation Context]", "Called by: " + cur.From}
	if detail != DetailMinimal {
		p.CallerDescription = NoCard
		if hasCaller && strings.TrimSpace(caller.Description) != "" {
			p.CallerDescription = `"` + workspace.CutText(oneLine(caller.Description), workspace.DefaultPreambleMaxBytes) + `"`
		}
		lines = append(lines, cur.From+" is: "+p.CallerDescription)
	}
	lines = append(lines, "Delegation chain: "+p.Chain)
	if detail != DetailMinimal {
		root := chain[0]
		msg := root.Message
		if strings.TrimSpace(msg) == "" {
			msg = task.Description
		}
		who := "The human"
		if root.From != "human" {
			who = root.From
		}
		p.TaskContext = fmt.Sprintf("%s asked: \"%s\"", who, workspace.CutText(oneLine(msg), max))
		if step, what := callerStep(chain); step != "" {
			p.CallerStep = workspace.CutText(oneLine(step), max)
			p.TaskContext += fmt.Sprintf(". %s's %s: \"%s\"", cur.From, what, p.CallerStep)
		}
		lines = append(lines, "Task context: "+p.TaskContext)
	}
	if detail == DetailVerbose {
		// The message that delegated to the caller. When the caller's
		// thread is the root, that message is the task context already.
		if parent := chain[len(chain)-2]; parent.ParentID != "" && strings.TrimSpace(parent.Message) != "" {
			lines = append(lines, fmt.Sprintf("%s was asked by %s: \"%s\"", cur.From, parent.From, workspace.CutText(oneLine(parent.Message), max)))
		}
		if hasCaller && len(caller.Capabilities) > 0 {
			lines = append(lines, cur.From+"'s capabilities: "+strings.Join(caller.Capabilities, ", "))
		}
		if c := strings.TrimSpace(cur.Concern); c != "" {
			lines = append(lines, "Your concern: "+workspace.CutText(oneLine(c), max))
		}
		if a := strings.TrimSpace(cur.Approach); a != "" {
			lines = append(lines, "Your approach: "+workspace.CutText(oneLine(a), max))
		}
	}
	if detail != DetailMinimal {
		items, err := w.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: taskID})
		if err != nil {
			return Preamble{}, fmt.Errorf("preamble of thread %s: %w", threadID, err)
		}
		if len(items) > 0 {
			p.EnvHint = true
			lines = append(lines, envHint(opt.Surface, taskID))
		}
	}
	lines = append(lines, "---")
	p.Text = strings.Join(lines, "\n") + "\n"
	return p, nil
}

// callerStep is what the caller of the chain's last thread is doing now:
// the progress noted on the caller's own thread (the parent, when it is
// addressed to the caller), else its approach; what says which it is.
func callerStep(chain []workspace.Thread) (step, what string) {
	if len(chain) < 2 {
		return "", ""
	}
	cur, parent := chain[len(chain)-1], chain[len(chain)-2]
	if parent.To != cur.From {
		return "", ""
	}
	if p := strings.TrimSpace(parent.Progress); p != "" {
		return p, "latest step"
	}
	if a := strings.TrimSpace(parent.Approach); a != "" {
		return a, "approach"
	}
	return "", ""
}

// threadTask is the task of a thread: taskID when given (after checking
// the thread is there), else found with ResolveThread.
func (w Ops) threadTask(ctx context.Context, threadID, taskID string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("find the task of thread %s: %w", threadID, err)
	}
	if taskID == "" {
		return w.ResolveThread(ctx, threadID)
	}
	if err := workspace.ValidateID("task id", taskID); err != nil {
		return "", err
	}
	if _, err := w.GetTask(ctx, taskID); err != nil {
		return "", err
	}
	if _, err := w.GetThread(ctx, taskID, threadID); err != nil {
		return "", err
	}
	return taskID, nil
}

// oneLine folds every run of white space (newlines included) into one
// space, so a quoted message cannot break the line structure of a block.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// Capability is one tool an agent can use.
type Capability struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// UniversalCapabilities are the tools every agent has whatever its card
// declares: the env-data and memory operations, reading the task, its
// state, plan, outputs and reviews, writing a plan or a review, claim, done
// and the delegation context. The MCP server serves exactly these; the
// system context lists them. Callers must not modify the slice.
var UniversalCapabilities = []Capability{
	{"store_env_data", "Store (create or replace) a key in the task's shared environment data, with a short description."},
	{"get_env_data", "Read the full value of one env data key."},
	{"list_env_data", "List the env data keys with their short descriptions (no values)."},
	{"update_env_data", "Change an existing env data key's description and/or value; optional compare-and-swap on its version."},
	{"delete_env_data", "Remove an env data key."},
	{"store_memory", "Remember a value under a key in your memory (scope agent, session or global)."},
	{"get_memory", "Read one key of your memory."},
	{"list_memory", "List the keys of a memory scope with their short descriptions."},
	{"delete_memory", "Forget a key of your memory."},
	{"get_memory_history", "Read the earlier versions of a key of your memory or the global memory: who wrote each and what it held."},
	{"put_memory_item", "Store a JSON object under a namespace of labels and a key in the shared memory; optional TTL and compare-and-set."},
	{"get_memory_item", "Read one item of the namespaced memory."},
	{"delete_memory_item", "Remove one item of the namespaced memory."},
	{"search_memory", "List the items under a namespace prefix, filtered on their value's fields, a page at a time."},
	{"list_memory_namespaces", "List the namespaces of the namespaced memory by prefix, suffix and depth."},
	{"get_task", "Read the task: its description, context, constraints and priority."},
	{"get_task_state", "Read the task's execution state: status, plan status, each subtask's status and worker, checkpoints."},
	{"get_plan", "Read the plan (the current version or an earlier one) with its subtasks and checkpoints."},
	{"get_subtask", "Read one subtask: what the plan asks of it, its status, worker and output file."},
	{"get_output", "Read the output a subtask's worker left."},
	{"list_reviews", "List the task's reviews with their verdicts and issues."},
	{"get_review", "Read one review as its reviewer wrote it."},
	{"write_plan", "Write the next version of the plan and propose it for review."},
	{"amend_plan", "Grow the approved plan: add subtasks, change or withdraw pending ones."},
	{"write_review", "Judge the plan, a checkpoint or an output: write the review and report it."},
	{"claim_subtask", "Take a subtask of the task's plan (first claim wins)."},
	{"signal_done", "Report a subtask finished, completed or failed, with its output."},
	{"get_delegation_context", "Show who called you, the delegation chain and the task context."},
	{"list_capabilities", "Show this description of you: your card, how you get called, and these tools."},
	{"skills", "List the workspace's skills (and which ones your thread loads), or read one by name."},
	{"list_tasks", "List the tasks you may work on, with their status."},
	{"create_task", "Create a task addressed to an agent."},
	{"get_context", "Assemble what your thread should see within a token budget, listing what did not fit."},
}

// SystemContext builds the "what am I" block, the base of an agent's system
// prompt: its name, description and role, how it gets called, its declared
// capabilities and the UniversalCapabilities, what it remembers — the keys
// and descriptions of its own memory and of the global memory, never the
// values, within SystemMemoryMaxBytes, unless its card sets
// memory_in_context to false — and, when taskID is given, whether that
// task has env data (with the count). An agent without a card gets the
// same block with the description "(no agent card)". It writes nothing;
// the same tree gives the same bytes. When ctx ends, it stops with the
// context's error. It names the MCP tools; SystemContextFor names the
// calls of another door.
func (w Ops) SystemContext(ctx context.Context, agent, taskID string) (string, error) {
	return w.systemContext(ctx, agent, taskID, SurfaceMCP, true)
}

// SystemContextFor is SystemContext in the calls of surface s (surface.go):
// a CLI agent reads commands, a program of the HTTP API routes, an agent
// of the files paths, and none of them a call its door does not have.
func (w Ops) SystemContextFor(ctx context.Context, agent, taskID string, s Surface) (string, error) {
	return w.systemContext(ctx, agent, taskID, s, true)
}

// Capabilities is the system context as the list_capabilities tool answers
// it: SystemContext without the line that tells the agent to call that
// very tool.
func (w Ops) Capabilities(ctx context.Context, agent, taskID string) (string, error) {
	return w.systemContext(ctx, agent, taskID, SurfaceMCP, false)
}

func (w Ops) systemContext(ctx context.Context, agent, taskID string, s Surface, pointToTool bool) (string, error) {
	if s == "" {
		s = SurfaceMCP
	}
	// named is a capability's call on s as the block quotes it.
	named := func(tool string) string {
		if s == SurfaceMCP {
			return tool
		}
		return "`" + Call(s, tool, taskID, agent) + "`"
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("system context of %s: %w", agent, err)
	}
	cards, err := w.LoadAgents(ctx)
	if err != nil {
		return "", err
	}
	envCount := -1
	if taskID != "" {
		if _, err := w.GetTask(ctx, taskID); err != nil {
			return "", err
		}
		items, err := w.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: taskID})
		if err != nil {
			return "", fmt.Errorf("system context of %s: %w", agent, err)
		}
		envCount = len(items)
	}
	card, ok := cards.Card(agent)
	var b strings.Builder
	fmt.Fprintf(&b, "## System Context\n\n")
	fmt.Fprintf(&b, "You are an agent named %q working in a shared workspace (workspaced).\n", agent)
	desc := NoCard
	if ok && strings.TrimSpace(card.Description) != "" {
		desc = `"` + oneLine(card.Description) + `"`
	}
	fmt.Fprintf(&b, "Description: %s\n", desc)
	if ok && card.Role != "" {
		fmt.Fprintf(&b, "Role: %s\n", oneLine(card.Role))
	}
	b.WriteString(`
### What is an agent here?
You are one of several agents sharing one workspace: a tree of plain files that holds the
task, its plan, the delegation threads between agents and the data they share. You receive
work as messages in delegation threads and answer with messages, shared data and products.

### How you get called
You may receive messages from:
- **A human** who starts a task and addresses it to you directly
- **Another agent** that has delegated part of a larger task to you
`)
	if !ok || card.WantsPreamble() {
		b.WriteString("\nWhen another agent calls you, the message begins with a [Delegation Context] block:\nwho called you, what the caller is, the delegation chain and the task.\n")
	} else {
		b.WriteString("\nYour card turns the delegation preamble off: messages from other agents arrive\nwithout a [Delegation Context] block; " + invite(s, Call(s, "get_delegation_context", taskID, agent)) + " to see it.\n")
	}
	fmt.Fprintf(&b, "Shared environment data (%s) holds what other agents in the same task have stored.\n", named("list_env_data"))
	b.WriteString("\n### Your capabilities\n")
	declared := "(none declared)"
	if ok && len(card.Capabilities) > 0 {
		declared = strings.Join(card.Capabilities, ", ")
	}
	fmt.Fprintf(&b, "- Declared capabilities: %s\n", declared)
	b.WriteString("- Universal capabilities (always available):\n")
	for _, c := range UniversalCapabilities {
		if Call(s, c.Name, taskID, agent) != "" {
			fmt.Fprintf(&b, "  - %s: %s\n", named(c.Name), c.Description)
		}
	}
	switch {
	case pointToTool && s == SurfaceMCP:
		b.WriteString("\nYou can use list_capabilities to see full details of your available tools.\n")
	case pointToTool:
		fmt.Fprintf(&b, "\nThis block again: %s.\n", named("list_capabilities"))
	}
	if !ok || card.WantsMemory() {
		b.WriteString(w.memorySection(ctx, agent))
	}
	if envCount >= 0 {
		b.WriteString("\n### Environment data\n")
		switch envCount {
		case 0:
			fmt.Fprintf(&b, "Task %s has no environment data yet.\n", taskID)
		case 1:
			fmt.Fprintf(&b, "Task %s has 1 environment data entry — %s to see it.\n", taskID, EnvListCall(s, taskID))
		default:
			fmt.Fprintf(&b, "Task %s has %d environment data entries — %s to see them.\n", taskID, envCount, EnvListCall(s, taskID))
		}
	}
	// The memory section shows a listing that failed as such; one the
	// end of ctx cut short is not what the store holds.
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("system context of %s: %w", agent, err)
	}
	return b.String(), nil
}
