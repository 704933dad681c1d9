package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// Namespaced memory in the CLI: memory put, search and namespaces, and
// memory get and delete given --namespace (or --ns) instead of --scope.
// A namespace is named by --namespace a/b/c (labels split at "/"; a JSON
// array such as '["a/b","c"]' for labels holding "/"), or by --ns once
// per label.

const memoryNSUsage = `
Namespaced memory: items under a namespace of labels (docs/STORE.md), each a
JSON object with a version and an optional time to live.

  workspaced memory put --namespace users/42 --key prefs --value '{"theme":"dark"}' [--ttl 24h] [--if-version N | --if-absent]
  workspaced memory get --namespace users/42 --key prefs [--json]
  workspaced memory delete --namespace users/42 --key prefs [--if-version N]
  workspaced memory search [--namespace users] [--filter '{"theme":"dark"}'] [--limit N] [--offset N] [--json]
  workspaced memory namespaces [--prefix users/*] [--suffix prefs] [--max-depth N] [--limit N] [--offset N] [--json]

  --ns LABEL, once per label, names a namespace as --namespace does.
`

// nsFlags names a namespace: --namespace PATH or repeated --ns LABEL.
type nsFlags struct {
	path   string
	labels labelList
}

// labelList is a repeatable flag.
type labelList []string

func (l *labelList) String() string     { return strings.Join(*l, ",") }
func (l *labelList) Set(v string) error { *l = append(*l, v); return nil }

func (n *nsFlags) add(fs *flag.FlagSet, what string) {
	fs.StringVar(&n.path, "namespace", "", what+": `LABELS` split at '/' (a/b/c), or a JSON array of them")
	fs.Var(&n.labels, "ns", "one `LABEL` of the namespace, in order (repeat it)")
}

func (n *nsFlags) given() bool { return n.path != "" || len(n.labels) > 0 }

// namespace is what the flags name (nil when neither is given).
func (n *nsFlags) namespace(cmd string) (workspace.Namespace, error) {
	if n.path != "" && len(n.labels) > 0 {
		return nil, usageHint(cmd, "give --namespace or --ns, not both")
	}
	if len(n.labels) > 0 {
		return workspace.Namespace(n.labels), nil
	}
	labels, err := splitLabels(cmd, "--namespace", n.path)
	return workspace.Namespace(labels), err
}

// splitLabels reads a list of labels given as a/b/c or as a JSON array.
func splitLabels(cmd, flagName, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var labels []string
		if err := json.Unmarshal([]byte(s), &labels); err != nil {
			return nil, usageHint(cmd, "%s %s: not a JSON array of labels (%v)", flagName, s, err)
		}
		return labels, nil
	}
	return strings.Split(s, "/"), nil
}

func memoryNSVerbs() []subcommand {
	return []subcommand{
		{"put", "namespaced memory: create or replace an item (--ttl, --if-version, --if-absent)", memPut},
		{"search", "namespaced memory: the items under a namespace, filtered, a page at a time", memSearch},
		{"namespaces", "namespaced memory: the namespaces holding items, by prefix, suffix and depth", memNamespaces},
		{"history", "the kept versions of a global or agent memory entry: who wrote each, and what it held", memHistory},
	}
}

const memPutUsage = `Usage:
  workspaced memory put (--namespace a/b/c | --ns a --ns b ...) --key K (--value JSON | --value-file F|-)
                        [--ttl DURATION] [--if-version N | --if-absent] [--agent A] [--json]

Creates or replaces an item of namespaced memory: its value is a JSON object;
its version is 1, then one more per put. --ttl gives it a time to live (whole
seconds, up to ten years): past it the item is gone for every read, and the
next cleanup removes it; a put without --ttl keeps none. --if-version N
replaces only version N, --if-absent creates only. The agent in its event is
--agent, else $WORKSPACE_AGENT, else "cli".

Examples:
  workspaced memory put --namespace users/42 --key prefs --value '{"theme":"dark"}'
  workspaced memory put --ns users --ns 42 --key session --value-file s.json --ttl 24h
  workspaced memory put --namespace users/42 --key prefs --value '{"theme":"light"}' --if-version 1

Exit codes: 0 ok, 1 failure (bad namespace or key, a value that is no JSON
object or over the limit), 2 usage, 4 conflict (--if-version, --if-absent)
or lock timeout.
`

func memPut(ctx context.Context, e *env, args []string) error {
	f := &entryFlags{cmd: "memory", verb: "put", fs: newFlags("memory put")}
	var ns nsFlags
	ns.add(f.fs, "the item's namespace")
	f.fs.StringVar(&f.key, "key", "", "the item's `KEY` (1–200 bytes of UTF-8)")
	f.fs.StringVar(&f.value, "value", "", "the value, a JSON `OBJECT`")
	f.fs.StringVar(&f.valueFile, "value-file", "", "read the value from `FILE` ('-' for stdin)")
	ttl := f.fs.Duration("ttl", 0, "time to live, `DURATION` in whole seconds (e.g. 90s, 24h)")
	f.fs.IntVar(&f.ifVersion, "if-version", 0, "replace only version `N` (exit 4 otherwise)")
	ifAbsent := f.fs.Bool("if-absent", false, "create only (exit 4 when the item exists)")
	f.fs.StringVar(&f.agent, "agent", "", "the `AGENT` writing (default $WORKSPACE_AGENT, else \"cli\")")
	f.fs.BoolVar(&f.json, "json", false, "print the item as JSON")
	if err := parse(e, f.fs, memPutUsage, args); err != nil {
		return err
	}
	if err := need(f.fs, "key"); err != nil {
		return err
	}
	namespace, err := ns.namespace(f.name())
	if err != nil {
		return err
	}
	if len(namespace) == 0 {
		return usageHint(f.name(), "missing --namespace a/b/c (or --ns once per label)")
	}
	if *ttl < 0 || *ttl%time.Second != 0 || (*ttl > 0 && *ttl < time.Second) {
		return usageHint(f.name(), "--ttl must be whole seconds, at least 1s (e.g. 90s, 24h)")
	}
	value, err := f.readValue(e)
	if err != nil {
		return err
	}
	if value == nil {
		return usageHint(f.name(), "missing --value JSON or --value-file F")
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	it, err := service.MemoryPut(ctx, w, workspace.MemoryPutRequest{Namespace: namespace, Key: f.key, Value: value,
		TTLSeconds: int(*ttl / time.Second), IfVersion: f.ifVersion, IfAbsent: *ifAbsent, Agent: agentOr(f.agent, "cli")})
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(e.stdout, it)
	}
	fmt.Fprintf(e.stdout, "put %s %s (version %d%s)\n", it.Namespace, strconv.Quote(it.Key), it.Version, expiresNote(it))
	return nil
}

func expiresNote(it workspace.MemoryItem) string {
	if it.ExpiresAt == nil {
		return ""
	}
	return ", expires " + it.ExpiresAt.UTC().Format(time.RFC3339)
}

// memGet is memory get with --namespace: the item's value (--json: the
// item).
func memGet(ctx context.Context, e *env, f *entryFlags, ns workspace.Namespace) error {
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	it, err := service.MemoryGet(ctx, w, ns, f.key)
	if err != nil {
		return err
	}
	return f.printRead(e, it.Value, it)
}

// memDelete is memory delete with --namespace.
func memDelete(ctx context.Context, e *env, f *entryFlags, ns workspace.Namespace) error {
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	req := workspace.MemoryDeleteRequest{Namespace: ns, Key: f.key, IfVersion: f.ifVersion, Agent: agentOr(f.agent, "cli")}
	if err := service.MemoryDelete(ctx, w, req); err != nil {
		return err
	}
	if f.json {
		return printJSON(e.stdout, map[string]any{"namespace": ns, "key": f.key, "deleted": true})
	}
	fmt.Fprintf(e.stdout, "deleted %s %s\n", ns, strconv.Quote(f.key))
	return nil
}

const memSearchUsage = `Usage:
  workspaced memory search [--namespace PREFIX | --ns LABEL ...] [--filter JSON] [--limit N] [--offset N] [--json]

Lists the items of namespaced memory whose namespace starts with the prefix
(label by label: users/4 is no prefix of users/42; none: every item), in
namespace then key order, --limit of them (10; at most 1000) after skipping
--offset. --filter keeps the items whose value's fields match:
{"field": value} is equality, {"field": {"$gte": 3}} a comparison ($eq, $ne,
$gt, $gte, $lt, $lte); numbers compare as numbers, strings by bytes.

Examples:
  workspaced memory search --namespace users/42
  workspaced memory search --filter '{"score": {"$gte": 3}, "kind": "note"}' --limit 50 --json

Exit codes: 0 ok, 1 failure (bad prefix or filter), 2 usage.
`

func memSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlags("memory search")
	var ns nsFlags
	ns.add(fs, "the namespace `PREFIX`")
	filter := fs.String("filter", "", "keep the items whose value matches `JSON`")
	limit := fs.Int("limit", 0, "at most `N` items (10 by default, 1000 at most)")
	offset := fs.Int("offset", 0, "skip the first `N` items")
	asJSON := fs.Bool("json", false, "print the items as JSON")
	if err := parse(e, fs, memSearchUsage, args); err != nil {
		return err
	}
	prefix, err := ns.namespace("memory search")
	if err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	mf, err := service.MemoryFilter(w, []byte(*filter))
	if err != nil {
		return err
	}
	items, err := service.MemorySearch(ctx, w, workspace.MemorySearchRequest{Prefix: prefix, Filter: mf, Limit: *limit, Offset: *offset})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, items)
	}
	return printItems(e.stdout, items)
}

func printItems(w io.Writer, items []workspace.MemoryItem) error {
	if len(items) == 0 {
		fmt.Fprintln(w, "no items")
		return nil
	}
	rows := make([][]string, len(items))
	for i, it := range items {
		exp := "-"
		if it.ExpiresAt != nil {
			exp = it.ExpiresAt.UTC().Format("2006-01-02 15:04:05")
		}
		rows[i] = []string{strings.Join(it.Namespace, "/"), it.Key, strconv.Itoa(it.Version), it.UpdatedAt.UTC().Format("2006-01-02 15:04:05"), exp, cut(string(it.Value), 50)}
	}
	table(w, []string{"NAMESPACE", "KEY", "VERSION", "UPDATED", "EXPIRES", "VALUE"}, rows)
	return nil
}

const memNamespacesUsage = `Usage:
  workspaced memory namespaces [--prefix a/b] [--suffix c] [--max-depth N] [--limit N] [--offset N] [--json]

Lists the namespaces that hold items, sorted label by label: those starting
with --prefix and ending with --suffix (labels split at '/', or JSON arrays;
the label * matches any one label), each cut to --max-depth labels without
repeats, --limit of them (100; at most 1000) after skipping --offset.

Examples:
  workspaced memory namespaces
  workspaced memory namespaces --prefix 'users/*' --suffix prefs
  workspaced memory namespaces --max-depth 1 --json

Exit codes: 0 ok, 1 failure (a bad label), 2 usage.
`

func memNamespaces(ctx context.Context, e *env, args []string) error {
	fs := newFlags("memory namespaces")
	prefix := fs.String("prefix", "", "namespaces starting with these `LABELS` (* matches any one)")
	suffix := fs.String("suffix", "", "namespaces ending with these `LABELS` (* matches any one)")
	depth := fs.Int("max-depth", 0, "cut each namespace to `N` labels")
	limit := fs.Int("limit", 0, "at most `N` namespaces (100 by default, 1000 at most)")
	offset := fs.Int("offset", 0, "skip the first `N` namespaces")
	asJSON := fs.Bool("json", false, "print the namespaces as JSON arrays")
	if err := parse(e, fs, memNamespacesUsage, args); err != nil {
		return err
	}
	q := workspace.NamespaceQuery{MaxDepth: *depth, Limit: *limit, Offset: *offset}
	var err error
	if q.Prefix, err = splitLabels("memory namespaces", "--prefix", *prefix); err != nil {
		return err
	}
	if q.Suffix, err = splitLabels("memory namespaces", "--suffix", *suffix); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	nss, err := service.MemoryNamespaces(ctx, w, q)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, nss)
	}
	if len(nss) == 0 {
		fmt.Fprintln(e.stdout, "no namespaces")
	}
	for _, n := range nss {
		fmt.Fprintln(e.stdout, strings.Join(n, "/"))
	}
	return nil
}
