package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

const tokenUsage = `workspaced token — the bearer tokens of remote agents, in config/tokens.json
(mode 0600), or on a postgres:// root in the tokens table, which the agent
role may not read, or on a sqlite: root in the database's tokens table;
only their SHA-256 is stored. A token names the agent it stands
for — stored_by of its entries, the agent of its markers and events — and
what that agent may do: which tasks, whether it may claim, finish, write
plans or reviews, and its access to the global memory. Its own agent memory
and the session memory of its thread are every agent's. 'workspaced mcp
--http' and 'workspaced mcp --token-file' check every call against it; a
token revoked, expired, or rotated past its overlap is refused from the
next request on, and the sessions and streams open on it end within a
second.

Usage:
  workspaced token add --agent A (--task T ... | --all-tasks) [--may LIST]
                       [--global-memory none|read|write] [--note TEXT]
                       [--ttl DURATION | --expires-at TIME] [--json]
  workspaced token rotate --id ID [--overlap DURATION] [--ttl DURATION] [--json]
  workspaced token list [--json]
  workspaced token revoke (--id ID | --agent A | --ended)

Examples:
  workspaced token add --agent worker_1 --task t1 --may claim,done --ttl 720h
  workspaced token add --agent planner --all-tasks --may plan --global-memory read
  workspaced token rotate --id tk_3f9a1c2b4d5e --overlap 15m
  workspaced token list
  workspaced token revoke --id tk_3f9a1c2b4d5e

Exit codes: 0 ok, 1 failure (a bad agent or task id, an agents file others
may read), 2 usage, 3 no such token, 4 lock timeout.
`

func cmdToken(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "token", tokenUsage, []subcommand{
		{"add", "make a token for an agent; prints it once", tokenAdd},
		{"rotate", "replace a token with a new one of the same grant; prints it once", tokenRotate},
		{"list", "every token: id, agent, tasks, rights, expiry, last use", tokenList},
		{"revoke", "remove a token, every token of an agent, or the ended ones", tokenRevoke},
	}, args)
}

const tokenAddUsage = `Usage:
  workspaced token add --agent A (--task T ... | --all-tasks) [--may LIST]
                       [--global-memory none|read|write] [--note TEXT]
                       [--ttl DURATION | --expires-at TIME] [--json]

Makes a token (wsd_ and 43 characters: 32 random bytes) for agent A, adds
its SHA-256 with what it may do to config/tokens.json under the file's lock
(the tokens table on a postgres:// or sqlite: root), and prints the token on stdout. It is never shown again: give it to the
agent's runtime now. LIST is comma-separated: claim (claim_subtask), done
(signal_done), plan (write_plan), review (write_review); left out, the
agent may read its tasks, use their env data and its own memory, and
nothing more. --global-memory is none (the default), read or write.
--ttl (24h, 720h) or --expires-at (RFC 3339, 2026-12-31T00:00:00Z) sets
when the token stops being accepted; left out, it lasts until revoked or
rotated. The right panel lets a person log in to 'workspaced web' with the
token, as agent A.

Examples:
  workspaced token add --agent worker_1 --task t1 --may claim,done --ttl 720h
  workspaced token add --agent reviewer --task t1 --task t2 --may review
  workspaced token add --agent planner --all-tasks --may plan --global-memory read --note "hosted planner"
  TOKEN=$(workspaced token add --agent observer --task t1)

Exit codes: 0 ok, 1 failure (a bad agent or task id, an agents file others
may read), 2 usage, 4 lock timeout.
`

// tokenAddOutput is token add --json: the token with its grant.
type tokenAddOutput struct {
	Token string `json:"token"`
	ID    string `json:"id"`
	tokens.Grant
}

func tokenAdd(ctx context.Context, e *env, args []string) error {
	fs := newFlags("token add")
	agent := fs.String("agent", "", "the `AGENT` the token stands for")
	var tasks stringList
	fs.Var(&tasks, "task", "a task `ID` it may work on (repeatable)")
	all := fs.Bool("all-tasks", false, "it may work on every task")
	may := fs.String("may", "", "comma-separated `LIST` of rights: claim, done, plan, review")
	global := fs.String("global-memory", tokens.GlobalNone, "its access to the global memory: `none|read|write`")
	note := fs.String("note", "", "what the token is for (`TEXT`, shown by list)")
	asJSON := fs.Bool("json", false, "print {token, id, agent, tasks, ...}")
	ttl := fs.Duration("ttl", 0, "the token expires `DURATION` from now (24h, 720h)")
	expiresAt := fs.String("expires-at", "", "the token expires at `TIME` (RFC 3339)")
	if err := parse(e, fs, tokenAddUsage, args); err != nil {
		return err
	}
	expiry, err := expiryOf("token add", *ttl, *expiresAt)
	if err != nil {
		return err
	}
	if err := need(fs, "agent"); err != nil {
		return err
	}
	if len(tasks) == 0 && !*all {
		return usageHint("token add", "missing --task T (repeatable) or --all-tasks")
	}
	if len(tasks) > 0 && *all {
		return usageHint("token add", "--task and --all-tasks: give one or the other")
	}
	rights := splitList(*may)
	for _, r := range rights {
		if !slices.Contains(tokens.Rights(), r) {
			return usageHint("token add", "--may: unknown right %q (the rights are %s)", r, strings.Join(tokens.Rights(), ", "))
		}
	}
	switch *global {
	case tokens.GlobalNone, tokens.GlobalRead, tokens.GlobalWrite:
	default:
		return usageHint("token add", "--global-memory must be none, read or write, not %q", *global)
	}
	if *all {
		tasks = stringList{tokens.AllTasks}
	}
	for _, t := range tasks {
		if t != tokens.AllTasks {
			if err := workspace.ValidateID("task id", t); err != nil {
				return err
			}
		}
	}
	if err := workspace.ValidateID("agent", *agent); err != nil {
		return err
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := tokenKeeper("token add", st)
	if err != nil {
		return err
	}
	tok, g, err := tokens.Add(ctx, k, tokens.Grant{Agent: *agent, Tasks: tasks, May: rights, GlobalMemory: *global, Note: *note, ExpiresAt: expiry})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, tokenAddOutput{Token: tok, ID: g.ID(), Grant: g})
	}
	fmt.Fprintln(e.stdout, tok)
	fmt.Fprintf(e.stderr, "token %s for agent %s (%s; may: %s; global memory: %s; %s) added to %s; it is not shown again\n",
		g.ID(), g.Agent, g.TaskList(), orDash(strings.Join(g.May, ",")), g.GlobalMemory, expiresText(g), tokensPlace(e, st))
	return nil
}

const tokenListUsage = `Usage:
  workspaced token list [--json]

Lists every token of config/tokens.json (or the tokens table): its id,
agent, tasks, rights, global memory access, when it was added, when it
expires (or "ended" and when, or "never"), when a server last accepted it
(to the minute; "-" for never), the token that replaced it, and its note.
Tokens themselves are never stored, so never listed. --json prints [{id,
agent, sha256, tasks, may, global_memory, note, created_at, expires_at,
rotated_to, last_used_at, ended}].

Examples:
  workspaced token list
  workspaced token list --json | jq -r '.[] | select(.agent == "worker_1") | .id'

Exit codes: 0 ok (also with no token), 1 failure (an agents file others may
read, or broken), 2 usage.
`

// tokenListItem is one token of token list --json.
type tokenListItem struct {
	ID string `json:"id"`
	tokens.Grant
	Ended bool `json:"ended"`
}

func tokenList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("token list")
	asJSON := fs.Bool("json", false, "print the tokens as a JSON array")
	if err := parse(e, fs, tokenListUsage, args); err != nil {
		return err
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := tokenKeeper("token list", st)
	if err != nil {
		return err
	}
	grants, err := k.List(ctx)
	if err != nil {
		return err
	}
	doc := tokens.FileDoc{Tokens: grants}
	if *asJSON {
		items := make([]tokenListItem, len(doc.Tokens))
		for i, g := range doc.Tokens {
			items[i] = tokenListItem{ID: g.ID(), Grant: g, Ended: g.Ended(k.Now())}
		}
		return printJSON(e.stdout, items)
	}
	if len(doc.Tokens) == 0 {
		fmt.Fprintln(e.stdout, "no tokens (add one with 'workspaced token add')")
		return nil
	}
	rows := make([][]string, len(doc.Tokens))
	for i, g := range doc.Tokens {
		rows[i] = []string{g.ID(), g.Agent, cut(g.TaskList(), 30), orDash(strings.Join(g.May, ",")), g.GlobalMemory,
			g.CreatedAt.UTC().Format(time.RFC3339), expiryCell(g, k.Now()), timeCell(g.LastUsedAt), orDash(g.RotatedTo), cut(g.Note, 40)}
	}
	table(e.stdout, []string{"ID", "AGENT", "TASKS", "MAY", "GLOBAL", "ADDED", "EXPIRES", "LAST USED", "REPLACED BY", "NOTE"}, rows)
	return nil
}

const tokenRevokeUsage = `Usage:
  workspaced token revoke (--id ID | --agent A | --ended)

Removes one token (--id, as 'token list' shows it), every token of an
agent (--agent), or every token that has ended — expired, or rotated and
past its overlap — (--ended) from config/tokens.json, under the file's
lock (from the tokens table on a postgres:// or sqlite: root). A server
refuses the token from its next request on: an HTTP request with it is
answered 401, a call on stdio is a tool error; the MCP sessions and
streams open on it end within a second.

Examples:
  workspaced token revoke --id tk_3f9a1c2b4d5e
  workspaced token revoke --agent worker_1
  workspaced token revoke --ended

Exit codes: 0 ok, 1 failure, 2 usage, 3 no such token, 4 lock timeout.
`

func tokenRevoke(ctx context.Context, e *env, args []string) error {
	fs := newFlags("token revoke")
	id := fs.String("id", "", "the token's `ID` (tk_...)")
	agent := fs.String("agent", "", "revoke every token of `AGENT`")
	ended := fs.Bool("ended", false, "remove every token that has ended (expired, or rotated past its overlap)")
	if err := parse(e, fs, tokenRevokeUsage, args); err != nil {
		return err
	}
	given := 0
	for _, b := range []bool{*id != "", *agent != "", *ended} {
		if b {
			given++
		}
	}
	if given != 1 {
		return usageHint("token revoke", "give one of --id ID, --agent A or --ended")
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := tokenKeeper("token revoke", st)
	if err != nil {
		return err
	}
	var gone []tokens.Grant
	if *ended {
		gone, err = tokens.RemoveEnded(ctx, k)
		if err == nil && len(gone) == 0 {
			fmt.Fprintln(e.stdout, "no token has ended")
		}
	} else {
		gone, err = tokens.Revoke(ctx, k, *id, *agent)
	}
	if err != nil {
		return err
	}
	for _, g := range gone {
		fmt.Fprintf(e.stdout, "revoked %s (agent %s)\n", g.ID(), g.Agent)
	}
	return nil
}

// tokensPlace names where st keeps the tokens, for messages.
func tokensPlace(e *env, st workspace.Store) string {
	if _, ok := workspace.As[tokens.Holder](st); ok {
		return "the tokens table"
	}
	return e.display(tokens.File)
}
