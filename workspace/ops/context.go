package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/workspaced/workspaced/workspace"
)

// BytesPerToken is the token estimate: a text of n bytes costs
// ceil(n/BytesPerToken) tokens. Four bytes a token is the usual rule of
// thumb for English text and JSON with common tokenizers; it errs on the
// generous side for code and non-Latin scripts.
const BytesPerToken = 4

// DefaultContextBudget is the budget, in estimated tokens, the CLI uses
// when none is given.
const DefaultContextBudget = 8000

// The sections of a context bundle, in priority order.
const (
	SectionActive   = "active thread"
	SectionSkills   = "skills"
	SectionGlobal   = "global buffers"
	SectionOpen     = "open threads"
	SectionManifest = "env manifest"
)

// Item kinds.
const (
	ItemThread   = "thread"   // a thread: hydrated header or dehydrated summary
	ItemEnv      = "env"      // an env data entry (env:<key>)
	ItemMemory   = "memory"   // a memory entry (memory:<scope>:<key>)
	ItemFile     = "file"     // a file inside the task directory
	ItemManifest = "manifest" // one line of the env manifest
	ItemSkill    = "skill"    // a skill, skills/<name>.md (skill:<name>)
)

// EstimateTokens is the token estimate of a text: ceil(len(s)/4).
func EstimateTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// ContextOptions tune Context.
type ContextOptions struct {
	// Budget is the number of estimated tokens the items may use; 0 means
	// nothing fits (every item is listed in Omitted).
	Budget int
	// Unlimited ignores Budget: every readable item is included.
	Unlimited bool
	// TaskID, when known, skips the scan of every task for the thread.
	TaskID string
	// Agent, when no thread is named, picks the thread: the agent's
	// active thread (ActiveThread). The agent's open threads of other
	// tasks are then summarised with the task's own.
	Agent string
}

// ContextBundle is the context of one thread, assembled thread-first: the
// active thread hydrated with its buffers, the other open threads
// dehydrated, within a token budget.
// Sections are always the five of SectionActive, SectionSkills,
// SectionGlobal, SectionOpen and SectionManifest, in that order, each
// possibly empty.
// Text is the rendering handed to a model; it lists what was left out.
type ContextBundle struct {
	Thread    string               `json:"thread"`
	Task      string               `json:"task"`
	Agent     string               `json:"agent"`
	Budget    int                  `json:"budget"`
	Unlimited bool                 `json:"unlimited,omitempty"`
	Used      int                  `json:"used"`
	Sections  []Section            `json:"sections"`
	Omitted   []workspace.Omission `json:"omitted"`
	Text      string               `json:"text"`
}

// Section is one part of a bundle.
type Section struct {
	Name  string `json:"name"`
	Items []Item `json:"items"`
}

// Item is one thing included in a bundle. Tokens is the estimate of its
// rendering in Text (heading included); the budget is spent on items only,
// section headings and the bundle's own header are not counted.
type Item struct {
	Ref     string `json:"ref"`
	Kind    string `json:"kind"`
	Tokens  int    `json:"tokens"`
	Content string `json:"content"`
}

// candidate is an item before the budget decides, or the reason it could
// not be read.
type candidate struct {
	section int
	item    Item
	reason  string // non-empty: left out before the budget is consulted
}

// Context assembles what the agent of threadID (its To) should see, in
// priority order: (1) the thread itself hydrated — its chain, message,
// concern, approach, progress and the contents of its buffers; (2) its
// skills: the skill named core, the skills the agent's card names, the
// skills of the thread's primary mode and those its skill tags meet (see
// pickSkills); (3) the agent's global buffers from its card; (4) the
// task's other open (active or pending) threads dehydrated — from → to,
// concern, approach, progress; (5) the env manifest (keys and
// descriptions, never values). With threadID "" and opt.Agent set, the
// thread is the agent's active thread (ActiveThread), and the agent's
// open threads of other tasks are dehydrated after the task's own.
//
// Buffers name env:<key> (the task's env data), memory:<scope>:<key>
// (scope global, agent — the thread's agent — or session — this thread),
// or a file path relative to the task directory. Items are taken in that
// order while they fit the budget; an item that does not fit is left out
// whole and later, smaller items may still fit. A missing buffer target, a
// path outside the task (absolute or with ..), a symlink, a FIFO, a file or
// value over BufferMaxBytes, or a file that is not UTF-8 text is listed in
// Omitted with the reason, never an error; so is a skill file that is a
// symlink, a FIFO, over SkillMaxBytes or with a broken front matter. A
// broken chain (a cycle, a missing parent, a parent in another task) is an
// error naming the thread.
//
// Context reads env values only for hydrated buffers; the manifest is
// streamed. It writes nothing, is safe for concurrent use, and the same
// tree gives the same bytes (nothing depends on the clock or on map order).
// When ctx ends, Context stops reading and returns the context's error,
// never a bundle with items left out because of it.
func (w Ops) Context(ctx context.Context, threadID string, opt ContextOptions) (ContextBundle, error) {
	if opt.Budget < 0 {
		return ContextBundle{}, workspace.Invalidf("context budget", "give a budget of 0 or more tokens", "budget %d is negative", opt.Budget)
	}
	var elsewhere []agentThread
	if threadID == "" {
		if opt.Agent == "" {
			return ContextBundle{}, workspace.Invalidf("context", "name a thread, or an agent whose active thread to assemble", "no thread and no agent given")
		}
		act, all, err := w.activeOf(ctx, opt.Agent)
		if err != nil {
			return ContextBundle{}, err
		}
		threadID, opt.TaskID = act.t.ID, act.task
		for _, a := range all {
			if a.task != act.task && (a.t.Status == "active" || a.t.Status == "pending") {
				elsewhere = append(elsewhere, a)
			}
		}
	}
	taskID, err := w.threadTask(ctx, threadID, opt.TaskID)
	if err != nil {
		return ContextBundle{}, err
	}
	chain, err := w.Chain(ctx, taskID, threadID)
	if err != nil {
		return ContextBundle{}, err
	}
	cards, err := w.LoadAgents(ctx)
	if err != nil {
		return ContextBundle{}, err
	}
	cur := chain[len(chain)-1]
	b := ContextBundle{Thread: cur.ID, Task: taskID, Agent: cur.To, Budget: opt.Budget, Unlimited: opt.Unlimited, Omitted: []workspace.Omission{}}
	if opt.Unlimited {
		b.Budget = 0
	}
	// The manifest is the one part that touches every env file; list it
	// while the rest is read. Its order is fixed by ListEntries, so the
	// overlap changes nothing in the result.
	var manifest []workspace.ManifestItem
	var manifestErr error
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		manifest, manifestErr = w.ListEntries(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: taskID})
	}()
	// Never leave the listing running past the return (the caller may
	// close the workspace).
	defer func() { <-listed }()
	res := bufferResolver{w: w, ctx: ctx, task: taskID, thread: cur.ID, agent: cur.To}

	var cands []candidate
	cands = append(cands, candidate{section: 0, item: Item{Ref: "thread:" + cur.ID, Kind: ItemThread, Content: hydratedHeader(chain)}})
	seen := map[string]bool{}
	for _, ref := range cur.Buffers {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		cands = append(cands, res.resolve(0, ref))
	}
	card, hasCard := cards.Card(cur.To)
	cands = append(cands, w.skillCandidates(ctx, 1, cur, card.Skills)...)
	if hasCard {
		for _, ref := range card.GlobalBuffers {
			if seen[ref] {
				continue // already hydrated with the thread
			}
			seen[ref] = true
			cands = append(cands, res.resolve(2, ref))
		}
	}
	others, bad, err := w.readThreads(ctx, taskID)
	if err != nil {
		return ContextBundle{}, fmt.Errorf("context of thread %s: %w", threadID, err)
	}
	for _, t := range others {
		if t.ID == cur.ID || (t.Status != "active" && t.Status != "pending") {
			continue
		}
		cands = append(cands, candidate{section: 3, item: Item{Ref: "thread:" + t.ID, Kind: ItemThread, Content: dehydrated(t)}})
	}
	for _, o := range bad {
		cands = append(cands, candidate{section: 3, item: Item{Ref: o.Item}, reason: o.Reason})
	}
	for _, a := range elsewhere {
		cands = append(cands, candidate{section: 3, item: Item{Ref: "thread:" + a.task + "/" + a.t.ID, Kind: ItemThread,
			Content: "task: " + a.task + "\n" + dehydrated(a.t)}})
	}
	<-listed
	// A read the end of ctx cut short became an omission above; the
	// bundle is then not what the tree holds.
	if err := ctx.Err(); err != nil {
		return ContextBundle{}, fmt.Errorf("context of thread %s: %w", threadID, err)
	}
	if manifestErr != nil {
		return ContextBundle{}, fmt.Errorf("context of thread %s: %w", threadID, manifestErr)
	}
	for _, m := range manifest {
		line := fmt.Sprintf("%s (v%d, %s bytes, by %s): %s", m.Key, m.Version, workspace.GroupDigits(int(m.Size)), m.StoredBy, oneLine(m.ShortDescription))
		cands = append(cands, candidate{section: 4, item: Item{Ref: "manifest:" + m.Key, Kind: ItemManifest, Content: line}})
	}

	b.Sections = []Section{{Name: SectionActive}, {Name: SectionSkills}, {Name: SectionGlobal}, {Name: SectionOpen}, {Name: SectionManifest}}
	for i := range b.Sections {
		b.Sections[i].Items = []Item{}
	}
	left := opt.Budget
	for _, c := range cands {
		if c.reason != "" {
			b.Omitted = append(b.Omitted, workspace.Omission{Item: c.item.Ref, Reason: c.reason})
			continue
		}
		it := c.item
		it.Tokens = EstimateTokens(renderItem(it))
		if !opt.Unlimited && it.Tokens > left {
			b.Omitted = append(b.Omitted, workspace.Omission{Item: it.Ref, Reason: fmt.Sprintf("over budget: needs %s tokens, %s left", workspace.GroupDigits(it.Tokens), workspace.GroupDigits(left))})
			continue
		}
		left -= it.Tokens
		b.Used += it.Tokens
		b.Sections[c.section].Items = append(b.Sections[c.section].Items, it)
	}
	b.Text = renderBundle(b)
	return b, nil
}

// hydratedHeader describes the active thread in full.
func hydratedHeader(chain []workspace.Thread) string {
	t := chain[len(chain)-1]
	var s strings.Builder
	fmt.Fprintf(&s, "chain: %s\n", FormatChain(chain))
	fmt.Fprintf(&s, "from: %s\nto: %s\nstatus: %s\n", t.From, t.To, t.Status)
	field(&s, "message", t.Message)
	field(&s, "concern", t.Concern)
	field(&s, "approach", t.Approach)
	field(&s, "progress", t.Progress)
	field(&s, "primary mode", t.PrimaryMode)
	if len(t.SkillTags) > 0 {
		field(&s, "skill tags", strings.Join(t.SkillTags, ", "))
	}
	if len(t.Buffers) > 0 {
		field(&s, "buffers", strings.Join(t.Buffers, ", "))
	}
	return s.String()
}

// dehydrated summarises a thread: metadata only. The message stands in,
// cut, when the thread has no concern yet.
func dehydrated(t workspace.Thread) string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s → %s · %s\n", t.From, t.To, t.Status)
	if strings.TrimSpace(t.Concern) == "" {
		field(&s, "message", workspace.CutText(oneLine(t.Message), DefaultPreambleMessageBytes))
	}
	field(&s, "concern", t.Concern)
	field(&s, "approach", t.Approach)
	field(&s, "progress", t.Progress)
	return s.String()
}

func field(s *strings.Builder, name, v string) {
	if v = strings.TrimSpace(v); v != "" {
		fmt.Fprintf(s, "%s: %s\n", name, oneLine(v))
	}
}

// renderItem is an item as it appears in Text; its length is what the
// item costs.
func renderItem(it Item) string {
	if it.Kind == ItemManifest {
		return "- " + it.Content + "\n"
	}
	c := it.Content
	if !strings.HasSuffix(c, "\n") {
		c += "\n"
	}
	return "### " + it.Ref + "\n" + c + "\n"
}

func renderBundle(b ContextBundle) string {
	var s strings.Builder
	fmt.Fprintf(&s, "# Context of thread %s (agent %s, task %s)\n", b.Thread, b.Agent, b.Task)
	if b.Unlimited {
		fmt.Fprintf(&s, "Budget: unlimited; used %s tokens (estimated at %d bytes a token).\n", workspace.GroupDigits(b.Used), BytesPerToken)
	} else {
		fmt.Fprintf(&s, "Budget: %s tokens; used %s (estimated at %d bytes a token).\n", workspace.GroupDigits(b.Budget), workspace.GroupDigits(b.Used), BytesPerToken)
	}
	for _, sec := range b.Sections {
		if len(sec.Items) == 0 {
			continue
		}
		title := strings.ToUpper(sec.Name[:1]) + sec.Name[1:]
		if sec.Name == SectionOpen {
			title += " (dehydrated)"
		}
		blankLine(&s)
		fmt.Fprintf(&s, "## %s\n\n", title)
		for _, it := range sec.Items {
			s.WriteString(renderItem(it))
		}
	}
	if len(b.Omitted) > 0 {
		blankLine(&s)
		s.WriteString("## Left out\n\n")
		for _, o := range b.Omitted {
			fmt.Fprintf(&s, "- %s: %s\n", o.Item, o.Reason)
		}
	}
	return strings.TrimRight(s.String(), "\n") + "\n"
}

// blankLine ends s with exactly one empty line.
func blankLine(s *strings.Builder) {
	t := strings.TrimRight(s.String(), "\n")
	s.Reset()
	s.WriteString(t)
	s.WriteString("\n\n")
}

// bufferResolver reads the targets buffers name, for one thread.
type bufferResolver struct {
	w      Ops
	ctx    context.Context
	task   string
	thread string
	agent  string
}

func (r bufferResolver) resolve(section int, ref string) candidate {
	c := candidate{section: section, item: Item{Ref: ref}}
	switch {
	case strings.HasPrefix(ref, "env:"):
		c.item.Kind = ItemEnv
		c.item.Content, c.reason = r.entry(workspace.Scope{Kind: workspace.ScopeThread, TaskID: r.task}, "env data", strings.TrimPrefix(ref, "env:"))
	case strings.HasPrefix(ref, "memory:"):
		c.item.Kind = ItemMemory
		scope, key, ok := strings.Cut(strings.TrimPrefix(ref, "memory:"), ":")
		if !ok {
			c.reason = "refused: a memory buffer is memory:<scope>:<key>"
			return c
		}
		s := workspace.Scope{TaskID: r.task, ThreadID: r.thread, Agent: r.agent}
		switch scope {
		case "global":
			s.Kind = workspace.ScopeGlobal
		case "agent":
			s.Kind = workspace.ScopeAgent
		case "session":
			s.Kind = workspace.ScopeSession
		default:
			c.reason = fmt.Sprintf("refused: unknown memory scope %q (use global, agent or session)", scope)
			return c
		}
		c.item.Content, c.reason = r.entry(s, "memory "+scope, key)
	default:
		c.item.Kind = ItemFile
		c.item.Content, c.reason = r.file(ref)
	}
	return c
}

// entry hydrates one entry: its description line, then its value (a JSON
// string as its text, anything else as compact JSON, the cheapest in
// tokens).
func (r bufferResolver) entry(s workspace.Scope, what, key string) (string, string) {
	e, err := r.w.GetEntry(r.ctx, s, key)
	if err != nil {
		if errors.Is(err, workspace.ErrNotFound) {
			return "", fmt.Sprintf("not found: no %s key %q", what, key)
		}
		return "", "refused: " + err.Error()
	}
	var value string
	var str string
	if json.Unmarshal(e.Value, &str) == nil {
		value = str
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Value); err != nil {
			return "", "refused: value is not valid JSON: " + err.Error()
		}
		value = buf.String()
	}
	if len(value) > workspace.BufferMaxBytes {
		return "", fmt.Sprintf("refused: value is %s bytes, over the %s-byte buffer cap", workspace.GroupDigits(len(value)), workspace.GroupDigits(workspace.BufferMaxBytes))
	}
	head := fmt.Sprintf("(%s, v%d, stored by %s) %s", what, e.Version, e.StoredBy, oneLine(e.ShortDescription))
	return strings.TrimRight(head, " ") + "\n" + value, ""
}

// file hydrates a file inside the task directory. The path is checked
// before anything is opened, and the store reads it without following a
// symlink (ReadTaskFile), so nothing outside the task is read.
func (r bufferResolver) file(ref string) (string, string) {
	if ref == "" || strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, `\`) {
		return "", "refused: an absolute path; buffers name files inside the task directory"
	}
	clean := path.Clean(ref)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", "refused: names a file outside the task directory"
	}
	data, err := r.w.ReadTaskFile(r.ctx, r.task, clean, workspace.BufferMaxBytes)
	if err != nil {
		switch {
		case errors.Is(err, workspace.ErrNotFound):
			return "", fmt.Sprintf("not found: no file %s in task %s", clean, r.task)
		case errors.Is(err, workspace.ErrUnsafe):
			var e *workspace.Error
			if errors.As(err, &e) && e.Msg != "" {
				return "", "refused: " + e.Msg
			}
		}
		return "", "refused: " + err.Error()
	}
	if !utf8.Valid(data) {
		return "", "refused: not UTF-8 text"
	}
	return fmt.Sprintf("(file, %s bytes)\n%s", workspace.GroupDigits(len(data)), data), ""
}
