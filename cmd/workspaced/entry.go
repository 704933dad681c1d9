package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// env and memory are one implementation: the same five verbs over the
// entry scopes (thread, session, agent, global). env is fixed to the
// thread scope; memory takes --scope.

const envUsage = `workspaced env — environment data shared by a task's whole delegation tree
(tasks/<task>/env/<key>.json, the "thread" scope).

Usage:
  workspaced env store|get|list|update|delete (--task T | --thread X) [flags]

Examples:
  workspaced env store --task t1 --key arc_task --description "the puzzle" --value '{"grid":[[0,1]]}'
  workspaced env get --thread th_solver --key arc_task
  workspaced env list --task t1 --json

Exit codes: 0 ok, 1 failure (bad key, invalid JSON, value over the limit),
2 usage, 3 not found (task, thread or key), 4 conflict (--if-version) or lock timeout.
`

const memoryUsage = `workspaced memory — long-term entries: global (memory/global/), one agent's
(memory/agents/<agent>/) or one delegation thread's private session
(tasks/<task>/sessions/<thread>/).

Usage:
  workspaced memory store|get|list|update|delete --scope global|agent|session [flags]

  --scope agent uses --agent (or $WORKSPACE_AGENT) as the owner;
  --scope session needs --thread X (and optionally --task T).

Examples:
  workspaced memory store --scope global --key style --description "house style" --value '"short"'
  workspaced memory get --scope agent --agent solver --key patterns
  workspaced memory list --scope session --thread th_solver --json

Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 conflict (--if-version) or lock timeout.
`

func cmdEnv(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "env", envUsage, entryVerbs("env"), args)
}

func cmdMemory(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "memory", memoryUsage+memoryNSUsage, entryVerbs("memory"), args)
}

func entryVerbs(cmd string) []subcommand {
	verb := func(name, summary string, run func(context.Context, *env, *entryFlags) error) subcommand {
		return subcommand{name, summary, func(ctx context.Context, e *env, args []string) error {
			f := newEntryFlags(cmd, name)
			if err := parse(e, f.fs, entryUsage(cmd, name), args); err != nil {
				return err
			}
			return run(ctx, e, f)
		}}
	}
	verbs := []subcommand{
		verb("store", "create or replace a key", entryStore),
		verb("get", "print a key's value as JSON (--json: the whole entry)", entryGet),
		verb("list", "the manifest: keys, descriptions, versions, sizes (no values)", entryList),
		verb("update", "change a key's description and/or value (--if-version N: compare-and-swap)", entryUpdate),
		verb("delete", "remove a key", entryDelete),
	}
	if cmd == "memory" {
		verbs = append(verbs, memoryNSVerbs()...)
	}
	return verbs
}

// entryUsage is the --help text of one verb.
func entryUsage(cmd, verb string) string {
	where := "(--task T | --thread X)"
	if cmd == "memory" {
		where = "--scope global|agent|session [--agent A] [--thread X [--task T]]"
		if verb == "get" || verb == "delete" {
			where = "(--scope global|agent|session [--agent A] [--thread X [--task T]] | --namespace a/b/c)"
		}
	}
	var synopsis, examples string
	ex := func(lines ...string) string {
		s := ""
		for _, l := range lines {
			s += "  " + l + "\n"
		}
		return s
	}
	sc := "--task t1"
	sc2 := "--thread th_solver"
	if cmd == "memory" {
		sc = "--scope global"
		sc2 = "--scope agent --agent solver"
	}
	switch verb {
	case "store":
		synopsis = fmt.Sprintf("workspaced %s store %s --key K [--description D] (--value JSON | --value-file F|-) [--agent A] [--json]", cmd, where)
		examples = ex(
			fmt.Sprintf(`workspaced %s store %s --key arc_task --description "the puzzle" --value '{"grid":[[0,1],[2,3]]}'`, cmd, sc),
			fmt.Sprintf(`workspaced %s store %s --key notes --description "what I saw" --value-file notes.json`, cmd, sc2),
			fmt.Sprintf(`echo '[1,2,3]' | workspaced %s store %s --key list --description "numbers" --value-file -`, cmd, sc),
		)
	case "get":
		synopsis = fmt.Sprintf("workspaced %s get %s --key K [--json] [--compact]", cmd, where)
		examples = ex(
			fmt.Sprintf("workspaced %s get %s --key arc_task", cmd, sc),
			fmt.Sprintf("workspaced %s get %s --key arc_task --json   # the entry, with its version", cmd, sc2),
			fmt.Sprintf("workspaced %s get %s --key arc_task --compact  # the value on one line", cmd, sc),
		)
	case "list":
		synopsis = fmt.Sprintf("workspaced %s list %s [--json]", cmd, where)
		examples = ex(
			fmt.Sprintf("workspaced %s list %s", cmd, sc),
			fmt.Sprintf("workspaced %s list %s --json", cmd, sc2),
		)
	case "update":
		synopsis = fmt.Sprintf("workspaced %s update %s --key K [--description D] [--value JSON | --value-file F|-] [--if-version N] [--agent A] [--json]", cmd, where)
		examples = ex(
			fmt.Sprintf(`workspaced %s update %s --key arc_task --value '{"grid":[[1]]}'`, cmd, sc),
			fmt.Sprintf(`workspaced %s update %s --key arc_task --description "solved" --if-version 3`, cmd, sc2),
		)
	case "delete":
		synopsis = fmt.Sprintf("workspaced %s delete %s --key K [--agent A] [--json]", cmd, where)
		examples = ex(
			fmt.Sprintf("workspaced %s delete %s --key arc_task", cmd, sc),
			fmt.Sprintf("workspaced %s delete %s --key old_notes", cmd, sc2),
		)
	}
	var about, codes string
	switch verb {
	case "store", "update":
		about = `The agent recorded as stored_by is --agent, else $WORKSPACE_AGENT, else "cli".
A value over the warning size (100 KiB by default) is stored with a warning
on stderr; one over the limit (1 MiB) is refused.
`
		codes = "1 failure (bad key, invalid JSON, value over the limit),\n2 usage, 3 not found, 4 conflict (--if-version mismatch) or lock timeout."
		if verb == "store" {
			codes = "1 failure (bad key, invalid JSON, value over the limit),\n2 usage, 3 task or thread not found, 4 lock timeout."
		}
	case "get":
		about = "Prints the value as indented JSON (--compact: on one line); --json prints\nthe whole entry, with its version for --if-version.\n"
		if cmd == "memory" {
			about += "With --namespace (or --ns once per label), the item of namespaced memory\n(workspaced memory put).\n"
		}
		codes = "1 failure (bad key, unreadable entry), 2 usage, 3 not found\n(task, thread or key)."
	case "list":
		about = "Prints the manifest: key, version, size, when and by whom it was stored,\nand its description; never the values. Files that are not entries are\nnamed on stderr and skipped.\n"
		codes = "1 failure, 2 usage, 3 task or thread not found."
	case "delete":
		about = "Removes the key and records who did (--agent, else $WORKSPACE_AGENT,\nelse \"cli\") in the task's events.\n"
		if cmd == "memory" {
			about += "With --namespace (or --ns once per label), the item of namespaced memory,\n--if-version N only at version N.\n"
		}
		codes = "1 failure (bad key), 2 usage, 3 not found (task, thread or\nkey), 4 lock timeout."
	}
	return "Usage:\n  " + synopsis + "\n\n" + about + "\nExamples:\n" + examples + "\nExit codes: 0 ok, " + codes + "\n"
}

// entryFlags are the flags every entry verb shares.
type entryFlags struct {
	cmd, verb   string
	fs          *flag.FlagSet
	scope       string
	task        string
	thread      string
	agent       string
	key         string
	description string
	value       string
	valueFile   string
	ifVersion   int
	json        bool
	compact     bool
	ns          nsFlags // memory get and delete: namespaced memory
}

func newEntryFlags(cmd, verb string) *entryFlags {
	f := &entryFlags{cmd: cmd, verb: verb, fs: newFlags(cmd + " " + verb)}
	fs := f.fs
	if cmd == "memory" {
		fs.StringVar(&f.scope, "scope", "", "the scope, `global|agent|session`")
		if verb == "get" || verb == "delete" {
			f.ns.add(fs, "instead of --scope, the item's namespace")
		}
		if verb == "delete" {
			fs.IntVar(&f.ifVersion, "if-version", 0, "delete only version `N` (exit 4 otherwise)")
		}
	}
	fs.StringVar(&f.task, "task", "", "task `ID`")
	fs.StringVar(&f.thread, "thread", "", "thread `ID` (resolves its task)")
	// Each verb lists only the flags it reads: --agent is who writes (env)
	// and also whose memory --scope agent is (memory).
	switch {
	case cmd == "memory" && (verb == "get" || verb == "list"):
		fs.StringVar(&f.agent, "agent", "", "with --scope agent: the `AGENT` whose memory it is (default $WORKSPACE_AGENT)")
	case cmd == "memory":
		fs.StringVar(&f.agent, "agent", "", "the `AGENT` writing, and with --scope agent whose memory it is (default $WORKSPACE_AGENT, else \"cli\")")
	case verb != "get" && verb != "list":
		fs.StringVar(&f.agent, "agent", "", "the `AGENT` writing (default $WORKSPACE_AGENT, else \"cli\")")
	}
	if verb != "list" {
		fs.StringVar(&f.key, "key", "", "entry `KEY` (1–200 bytes of UTF-8)")
	}
	if verb == "store" || verb == "update" {
		fs.StringVar(&f.description, "description", "", "short description `TEXT`, shown by list")
		fs.StringVar(&f.value, "value", "", "the value, as `JSON`")
		fs.StringVar(&f.valueFile, "value-file", "", "read the value from `FILE` ('-' for stdin)")
	}
	if verb == "update" {
		fs.IntVar(&f.ifVersion, "if-version", 0, "update only if the stored version is `N` (exit 4 otherwise)")
	}
	fs.BoolVar(&f.json, "json", false, "print JSON")
	if verb == "get" {
		fs.BoolVar(&f.compact, "compact", false, "print the JSON on one line")
	}
	return f
}

func (f *entryFlags) name() string { return f.cmd + " " + f.verb }

// namespace is the namespace --namespace or --ns names (nil when
// neither is given, the entry then being a scope's), refused beside
// --scope.
func (f *entryFlags) namespace() (workspace.Namespace, error) {
	if !f.ns.given() {
		return nil, nil
	}
	if f.scope != "" || f.task != "" || f.thread != "" {
		return nil, usageHint(f.name(), "give --namespace (namespaced memory) or --scope, not both")
	}
	return f.ns.namespace(f.name())
}

func (f *entryFlags) set(name string) bool {
	found := false
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			found = true
		}
	})
	return found
}

// scope turns the flags into a workspace.Scope, resolving --thread.
func (f *entryFlags) resolve(ctx context.Context, w workspace.Reader) (workspace.Scope, error) {
	kind := workspace.ScopeThread
	if f.cmd == "memory" {
		if f.scope == "" {
			return workspace.Scope{}, usageHint(f.name(), "missing --scope (global, agent or session)")
		}
		k, err := workspace.ParseScope(f.scope)
		if err != nil {
			return workspace.Scope{}, &usageError{msg: f.name() + ": " + err.Error(), hint: workspace.HintOf(err)}
		}
		kind = k
	}
	s := workspace.Scope{Kind: kind}
	switch kind {
	case workspace.ScopeThread:
		task, err := resolveTask(ctx, w, f.name(), f.task, f.thread)
		if err != nil {
			return s, err
		}
		s.TaskID = task
	case workspace.ScopeSession:
		if f.thread == "" {
			return s, usageHint(f.name(), "--scope session needs --thread X")
		}
		task, err := resolveTask(ctx, w, f.name(), f.task, f.thread)
		if err != nil {
			return s, err
		}
		s.TaskID, s.ThreadID = task, f.thread
	case workspace.ScopeAgent:
		s.Agent = agentOr(f.agent, "")
		if s.Agent == "" {
			return s, usageHint(f.name(), "--scope agent needs --agent A (or $WORKSPACE_AGENT): the owner of the memory")
		}
	case workspace.ScopeGlobal:
		if f.task != "" || f.thread != "" {
			return s, usageHint(f.name(), "--scope global takes no --task or --thread")
		}
	}
	return s, nil
}

// openTask opens the workspace and resolves --task/--thread to a task id
// (resolveTask). The caller closes the workspace.
func (e *env) openTask(ctx context.Context, cmd, task, thread string) (workspace.Store, string, error) {
	w, err := e.openStore()
	return withTask(ctx, w, err, cmd, task, thread)
}

// openTaskTree is openTask for a command that needs the file tree.
func (e *env) openTaskTree(ctx context.Context, cmd, task, thread string) (*service.FileTree, string, error) {
	w, err := e.open()
	return withTask(ctx, w, err, cmd, task, thread)
}

// withTask resolves --task/--thread in w, just opened (err: why it could
// not be), closing it when that fails.
func withTask[W interface {
	workspace.Reader
	Close() error
}](ctx context.Context, w W, err error, cmd, task, thread string) (W, string, error) {
	var none W
	if err != nil {
		return none, "", err
	}
	id, err := resolveTask(ctx, w, cmd, task, thread)
	if err != nil {
		w.Close()
		return none, "", err
	}
	return w, id, nil
}

// resolveTask turns --task and/or --thread into a task id. With both, the
// thread must belong to the task.
func resolveTask(ctx context.Context, w workspace.Reader, cmd, task, thread string) (string, error) {
	switch {
	case task == "" && thread == "":
		return "", usageHint(cmd, "missing --task T or --thread X")
	case thread == "":
		return task, nil
	case task == "":
		return w.ResolveThread(ctx, thread)
	}
	if _, err := w.GetTask(ctx, task); err != nil {
		return "", err
	}
	if _, err := w.GetThread(ctx, task, thread); err != nil {
		return "", err
	}
	return task, nil
}

// readValue returns the value from --value or --value-file; nil when
// neither was given.
func (f *entryFlags) readValue(e *env) (json.RawMessage, error) {
	if f.set("value") && f.valueFile != "" {
		return nil, usageHint(f.name(), "give --value or --value-file, not both")
	}
	var v []byte
	switch {
	case f.valueFile != "":
		data, err := readInput(e, f.valueFile)
		if err != nil {
			return nil, err
		}
		v = data
	case f.set("value"):
		v = []byte(f.value)
	default:
		return nil, nil
	}
	return v, checkJSON(v)
}

// checkJSON says in plain words where a value stops being JSON; the
// workspace checks the value again (size, depth) before writing it.
func checkJSON(v []byte) error {
	if len(v) > maxInput || json.Valid(v) {
		return nil
	}
	var x any
	err := json.Unmarshal(v, &x)
	if err == nil {
		return nil
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, c := range v[:min(int(se.Offset), len(v))] {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		msg = fmt.Sprintf("line %d, column %d: %s", line, max(col-1, 1), msg)
	}
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "value", Msg: "not valid JSON: " + msg,
		Hint: `give one JSON document; quote text as a JSON string: --value '"some text"'`}
}

// entryMeta is what store and update print with --json: the entry without
// its value, and the warnings.
type entryMeta struct {
	Key              string    `json:"key"`
	ShortDescription string    `json:"short_description"`
	StoredBy         string    `json:"stored_by"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
	Version          int       `json:"version"`
	Size             int       `json:"size"`
	Warnings         []string  `json:"warnings,omitempty"`
}

func printWritten(e *env, f *entryFlags, verb string, r workspace.Result) error {
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "workspaced: warning: %s %q: %s\n", f.name(), r.Entry.Key, w)
	}
	if f.json {
		return printJSON(e.stdout, entryMeta{Key: r.Entry.Key, ShortDescription: r.Entry.ShortDescription, StoredBy: r.Entry.StoredBy,
			CreatedAt: r.Entry.CreatedAt, UpdatedAt: r.Entry.UpdatedAt, Version: r.Entry.Version, Size: len(r.Entry.Value), Warnings: r.Warnings})
	}
	fmt.Fprintf(e.stdout, "%s %s (version %d)\n", verb, strconv.Quote(r.Entry.Key), r.Entry.Version)
	return nil
}

func entryStore(ctx context.Context, e *env, f *entryFlags) error {
	if err := need(f.fs, "key"); err != nil {
		return err
	}
	value, err := f.readValue(e)
	if err != nil {
		return err
	}
	if value == nil {
		return usageHint(f.name(), "missing --value JSON or --value-file F")
	}
	w, s, err := f.openScope(ctx, e)
	if err != nil {
		return err
	}
	defer w.Close()
	r, err := w.StoreEntry(ctx, s, workspace.StoreRequest{Key: f.key, Description: f.description, Value: value, Agent: agentOr(f.agent, "cli")})
	if err != nil {
		return err
	}
	return printWritten(e, f, "stored", r)
}

// openScope opens the workspace and resolves the entry flags to a scope.
// The caller closes the workspace.
func (f *entryFlags) openScope(ctx context.Context, e *env) (workspace.Store, workspace.Scope, error) {
	w, err := e.openStore()
	if err != nil {
		return nil, workspace.Scope{}, err
	}
	s, err := f.resolve(ctx, w)
	if err != nil {
		w.Close()
		return nil, workspace.Scope{}, err
	}
	return w, s, nil
}

func entryGet(ctx context.Context, e *env, f *entryFlags) error {
	if err := need(f.fs, "key"); err != nil {
		return err
	}
	if ns, err := f.namespace(); err != nil || ns != nil {
		if err != nil {
			return err
		}
		return memGet(ctx, e, f, ns)
	}
	w, s, err := f.openScope(ctx, e)
	if err != nil {
		return err
	}
	defer w.Close()
	ent, err := w.GetEntry(ctx, s, f.key)
	if err != nil {
		return err
	}
	return f.printRead(e, ent.Value, ent)
}

// printRead prints what a get read: its value, or with --json the whole
// record (an entry or a memory item), compact with --compact.
func (f *entryFlags) printRead(e *env, value json.RawMessage, whole any) error {
	var v any = value
	if f.json {
		v = whole
	}
	if f.compact {
		return printCompact(e.stdout, v)
	}
	return printJSON(e.stdout, v)
}

func entryList(ctx context.Context, e *env, f *entryFlags) error {
	w, s, err := f.openScope(ctx, e)
	if err != nil {
		return err
	}
	defer w.Close()
	var items []workspace.ManifestItem
	var skipped []workspace.Skipped
	if t, ferr := fileTree("", w); ferr == nil {
		items, skipped, err = t.ListEntriesReport(ctx, s) // the tree also says what it passed over
	} else {
		items, err = w.ListEntries(ctx, s)
	}
	if err != nil {
		return err
	}
	for _, sk := range skipped {
		fmt.Fprintf(e.stderr, "workspaced: warning: skipped %s: %s\n", displayName(sk.File), sk.Reason)
	}
	if f.json {
		return printJSON(e.stdout, items)
	}
	if len(items) == 0 {
		fmt.Fprintln(e.stdout, "no entries")
		return nil
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		rows[i] = []string{it.Key, strconv.Itoa(it.Version), humanSize(it.Size), it.UpdatedAt.UTC().Format("2006-01-02 15:04:05"), it.StoredBy, cut(it.ShortDescription, 60)}
	}
	table(e.stdout, []string{"KEY", "VERSION", "SIZE", "UPDATED", "BY", "DESCRIPTION"}, rows)
	return nil
}

func entryUpdate(ctx context.Context, e *env, f *entryFlags) error {
	if err := need(f.fs, "key"); err != nil {
		return err
	}
	if f.ifVersion < 0 {
		return usageHint(f.name(), "--if-version must be a positive version")
	}
	value, err := f.readValue(e)
	if err != nil {
		return err
	}
	req := workspace.UpdateRequest{Key: f.key, Value: value, Agent: agentOr(f.agent, "cli"), IfVersion: f.ifVersion}
	if f.set("description") {
		req.Description = &f.description
	}
	if value == nil && req.Description == nil {
		return usageHint(f.name(), "nothing to update: pass --description and/or --value (or --value-file)")
	}
	w, s, err := f.openScope(ctx, e)
	if err != nil {
		return err
	}
	defer w.Close()
	r, err := w.UpdateEntry(ctx, s, req)
	if err != nil {
		return err
	}
	return printWritten(e, f, "updated", r)
}

func entryDelete(ctx context.Context, e *env, f *entryFlags) error {
	if err := need(f.fs, "key"); err != nil {
		return err
	}
	if ns, err := f.namespace(); err != nil || ns != nil {
		if err != nil {
			return err
		}
		return memDelete(ctx, e, f, ns)
	}
	w, s, err := f.openScope(ctx, e)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.DeleteEntry(ctx, s, workspace.DeleteRequest{Key: f.key, Agent: agentOr(f.agent, "cli"), IfVersion: f.ifVersion}); err != nil {
		return err
	}
	if f.json {
		return printJSON(e.stdout, map[string]any{"key": f.key, "deleted": true})
	}
	fmt.Fprintf(e.stdout, "deleted %s\n", strconv.Quote(f.key))
	return nil
}

// printCompact writes v as canonical JSON on one line.
func printCompact(w io.Writer, v any) error {
	data, err := atomicfile.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	b.WriteByte('\n')
	_, err = w.Write(b.Bytes())
	return err
}

// humanSize prints a byte count for people.
func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
