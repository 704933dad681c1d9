package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"

	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pgRoot is a new PostgreSQL workspace of t's own.
func pgRoot(t testing.TB) string {
	t.Helper()
	return pgtest.Migrated(t, func(ctx context.Context, root string) error {
		_, err := service.Init(ctx, root, service.Roles{})
		return err
	})
}

// openRoot opens the workspace at root, closed when t ends, and its
// Keeper.
func openRoot(t testing.TB, root string) (workspace.Store, tokens.Keeper) {
	t.Helper()
	st, err := service.Open(context.Background(), root, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	k, err := service.Tokens("test", st)
	if err != nil {
		t.Fatal(err)
	}
	return st, k
}

// serveMCP serves st's MCP tools at /mcp over HTTP with the grants k
// keeps; the watch reads no grants while the test runs.
func serveMCP(t testing.TB, st workspace.Store, k tokens.Keeper, obs Observer) *httpFixture {
	t.Helper()
	f := startHTTP(t, st, k, HTTPOptions{Observer: obs, WatchEvery: time.Hour})
	t.Cleanup(func() { f.srv.Close(); f.h.Close() })
	return f
}

var itemNS = []string{"n"}

// putArgs and getArgs are the calls of the guarded tools on the key p.
func putArgs(v int) map[string]any {
	return map[string]any{"namespace": itemNS, "key": "p", "value": map[string]any{"v": v}}
}

var getArgs = map[string]any{"namespace": itemNS, "key": "p"}

// TestFoldedGrantRefusedAtOnce: on PostgreSQL, put_memory_item and
// get_memory_item are served on the token's remembered grant; a token
// revoked, its rights taken or its expiry brought forward by another
// process is refused on the very next call after calls that were served
// on that grant — a tool error saying why, no value read, nothing written
// — and a token refused then is refused (401) on its next request. Rights
// given are had on the next call.
func TestFoldedGrantRefusedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgRoot(t)
	st, keeper := openRoot(t, root)
	_, otherKeeper := openRoot(t, root)
	obs := &countingObserver{refused: map[string]int{}}
	f := serveMCP(t, st, keeper, obs)
	if f.h.folded == nil {
		t.Fatal("PostgreSQL's memory item tools are not served on remembered grants")
	}
	// written is the item p's version and its events but the probes': a
	// probe is an item put now; once its event is read, so is every
	// event of a write before it.
	probes := 0
	written := func(t *testing.T) string {
		t.Helper()
		it, err := service.MemoryGet(ctx, st, itemNS, "p")
		if err != nil {
			t.Fatal(err)
		}
		probes++
		probe := fmt.Sprint("probe", probes)
		if _, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"probes"}, Key: probe, Value: json.RawMessage(`{}`), Agent: "x"}); err != nil {
			t.Fatal(err)
		}
		n := 0
		poll.Until(t, time.Minute, "the probe's event read", func() (bool, string) {
			n = 0
			seen := false
			_, err := service.MemoryEvents(ctx, st, 0, func(e workspace.PositionedEvent) {
				switch e.Event.Attrs["key"] {
				case probe:
					seen = true
				case "p":
					n++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			return seen, fmt.Sprintf("%d events read", n)
		})
		return fmt.Sprintf("version %d, %d events", it.Version, n)
	}
	change := func(t *testing.T, g tokens.Grant, f func(*tokens.Grant)) {
		t.Helper()
		err := otherKeeper.Update(ctx, "test", func(d *tokens.FileDoc) error {
			for i := range d.Tokens {
				if d.Tokens[i].SHA256 == g.SHA256 {
					f(&d.Tokens[i])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	changes := []struct {
		name, says string
		do         func(t *testing.T, g tokens.Grant)
		refusal    string // counted for the call and the request after it; "": the token stays valid
	}{
		{"revoked", "unknown or revoked token", func(t *testing.T, g tokens.Grant) {
			if _, err := tokens.Revoke(ctx, otherKeeper, g.ID(), ""); err != nil {
				t.Fatal(err)
			}
		}, RefusalUnknownToken},
		{"rights taken", "may not", func(t *testing.T, g tokens.Grant) {
			change(t, g, func(g *tokens.Grant) { g.GlobalMemory = tokens.GlobalNone })
		}, ""},
		{"expiry brought forward", "expired", func(t *testing.T, g tokens.Grant) {
			change(t, g, func(g *tokens.Grant) { g.ExpiresAt = g.CreatedAt.Add(time.Millisecond) })
		}, RefusalExpiredToken},
	}
	calls := []struct {
		name, tool string
		args       any
	}{
		{"put", ToolPutMemoryItem, putArgs(7)},
		{"get", ToolGetMemoryItem, getArgs},
	}
	if _, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: itemNS, Key: "p", Value: json.RawMessage(`{"v":0}`), Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		for _, c := range calls {
			t.Run(ch.name+"/"+c.name, func(t *testing.T) {
				tok, g, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
				if err != nil {
					t.Fatal(err)
				}
				cs := f.mustConnect(tok, "")
				for i := range 3 {
					if text, isErr := callHTTP(t, cs, c.tool, c.args); isErr {
						t.Fatalf("call %d before the change: %s", i, text)
					}
				}
				ch.do(t, g)
				before := written(t)
				refusedBefore := obs.count(ch.refusal)
				next := c.args
				if c.tool == ToolPutMemoryItem {
					next = putArgs(99)
				}
				text, isErr := callHTTP(t, cs, c.tool, next)
				if !isErr || !strings.Contains(text, ch.says) || strings.Contains(text, `"v"`) {
					t.Fatalf("the next %s: error %v, %q; want a tool error saying %q, no value", c.name, isErr, text, ch.says)
				}
				if after := written(t); after != before {
					t.Errorf("a refused %s wrote: %s, was %s", c.name, after, before)
				}
				if ch.refusal == "" {
					return
				}
				if n := obs.count(ch.refusal) - refusedBefore; n != 1 {
					t.Errorf("refusals %s counted for the call: %d, want 1", ch.refusal, n)
				}
				_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: getArgs})
				if err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "Unauthorized") {
					t.Errorf("the request after the refused call: %v, want 401", err)
				}
				// (The client may send more once refused: its session's end.)
				if n := obs.count(ch.refusal) - refusedBefore; n < 2 {
					t.Errorf("refusals %s counted with the request after: %d, want 2 or more", ch.refusal, n)
				}
			})
		}
	}
	t.Run("rights given", func(t *testing.T) {
		tok, g, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalRead})
		if err != nil {
			t.Fatal(err)
		}
		cs := f.mustConnect(tok, "")
		for range 2 {
			if text, isErr := callHTTP(t, cs, ToolGetMemoryItem, getArgs); isErr {
				t.Fatalf("a get with read access: %s", text)
			}
		}
		refusals := strings.Count(f.log.String(), "mcp: call refused")
		if text, isErr := callHTTP(t, cs, ToolPutMemoryItem, putArgs(8)); !isErr || !strings.Contains(text, "may not write") {
			t.Fatalf("a put with read access: %v %q", isErr, text)
		}
		// Decided on the remembered grant, then on a look-up: one refusal.
		if n := strings.Count(f.log.String(), "mcp: call refused") - refusals; n != 1 {
			t.Errorf("refusals logged for the put: %d, want 1", n)
		}
		change(t, g, func(g *tokens.Grant) { g.GlobalMemory = tokens.GlobalWrite })
		if text, isErr := callHTTP(t, cs, ToolPutMemoryItem, putArgs(8)); isErr {
			t.Fatalf("a put once write access is given: %s", text)
		}
	})
}

func (o *countingObserver) count(reason string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refused[reason]
}

// TestFoldedGrantOneRoundTrip: on PostgreSQL a put_memory_item or
// get_memory_item call served on the token's remembered grant is one
// transaction on the database, where looking the token up makes two.
// Counted as pg_stat_database's xact_commit of a database of the test's
// own around the calls of a session, against the same session with no
// call (what opening the store and the session cost), the store closed
// each time so that its connections report what they did.
func TestFoldedGrantOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgtest.DB(t)
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		t.Fatal(err)
	}
	setup, err := service.Open(ctx, root, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := service.Tokens("test", setup)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := service.MemoryPut(ctx, setup, workspace.MemoryPutRequest{Namespace: itemNS, Key: "p", Value: json.RawMessage(`{"v":1}`), Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	commits := func() int64 { return pgtest.Commits(t, ctx, root) }
	series := func(remember bool, tool string, args any, n int) int64 {
		before := commits()
		st, err := service.Open(ctx, root, service.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := service.Tokens("test", st)
		if err != nil {
			t.Fatal(err)
		}
		if !remember {
			k = lookupOnly{k}
		}
		f := startHTTP(t, st, k, HTTPOptions{WatchEvery: time.Hour})
		cs, err := f.connect(tok, "")
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if text, isErr := callHTTP(t, cs, tool, args); isErr {
				t.Fatalf("%s: %s", tool, text)
			}
		}
		cs.Close()
		f.srv.Close()
		f.h.Close()
		st.Close()
		return commits() - before
	}
	const n = 50
	base := map[bool]int64{}
	for _, remember := range []bool{true, false} {
		base[remember] = series(remember, ToolGetMemoryItem, getArgs, 0)
	}
	for _, c := range []struct {
		tool string
		args any
	}{{ToolPutMemoryItem, putArgs(2)}, {ToolGetMemoryItem, getArgs}} {
		for _, remember := range []bool{true, false} {
			per := float64(series(remember, c.tool, c.args, n)-base[remember]) / n
			t.Logf("%s, remembered %v: %.2f transactions a call", c.tool, remember, per)
			switch {
			case remember && (per < 0.9 || per > 1.3):
				t.Errorf("%s on the remembered grant: %.2f transactions, want 1", c.tool, per)
			case !remember && per < 1.8:
				t.Errorf("%s looking its token up: %.2f transactions, want 2", c.tool, per)
			}
		}
	}
}

// lookupOnly is a Keeper that remembers no grant: every request looks
// its token up, as before.
type lookupOnly struct{ tokens.Keeper }

// TestGuardedCall: only a POST of a session whose body is one tools/call
// of a guarded tool, with a token of the Keeper's, is admitted on a
// remembered grant; any other request — a batch, another tool or
// method, a body that is not JSON, an access token — is looked up. The
// body reaches the SDK as it was sent.
func TestGuardedCall(t *testing.T) {
	h := &HTTP{folded: map[string]bool{ToolPutMemoryItem: true, ToolGetMemoryItem: true}}
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	tok := tokens.Prefix + "x"
	cases := []struct {
		name, method, session, token, body, want string
	}{
		{"put", "POST", "s1", tok, call(ToolPutMemoryItem), ToolPutMemoryItem},
		{"get", "POST", "s1", tok, call(ToolGetMemoryItem), ToolGetMemoryItem},
		{"another tool", "POST", "s1", tok, call(ToolDeleteMemoryItem), ""},
		{"another method", "POST", "s1", tok, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{"a batch", "POST", "s1", tok, "[" + call(ToolPutMemoryItem) + "]", ""},
		{"not JSON", "POST", "s1", tok, call(ToolPutMemoryItem)[:20], ""},
		{"the name not a string", "POST", "s1", tok, `{"method":"tools/call","params":{"name":7}}`, ""},
		{"another tool, Name a guarded one", "POST", "s1", tok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tasks","Name":"put_memory_item"}}`, ""},
		{"NAME another tool", "POST", "s1", tok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"list_tasks","name":"get_memory_item"}}`, ToolGetMemoryItem},
		{"Method another", "POST", "s1", tok, `{"jsonrpc":"2.0","id":1,"Method":"ping","method":"tools/call","params":{"name":"put_memory_item"}}`, ToolPutMemoryItem},
		{"the name twice", "POST", "s1", tok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"put_memory_item","name":"list_tasks"}}`, ""},
		{"no session", "POST", "", tok, call(ToolPutMemoryItem), ""},
		{"a GET", "GET", "s1", tok, "", ""},
		{"an access token", "POST", "s1", "eyJhbGciOi.x.y", call(ToolPutMemoryItem), ""},
		{"empty", "POST", "s1", tok, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "/mcp", strings.NewReader(c.body))
			if c.session != "" {
				r.Header.Set("Mcp-Session-Id", c.session)
			}
			if got := h.guardedCall(r, c.token); got != c.want {
				t.Errorf("guardedCall = %q, want %q", got, c.want)
			}
			if body, _ := io.ReadAll(r.Body); string(body) != c.body {
				t.Errorf("the body the SDK reads: %q, want %q", body, c.body)
			}
		})
	}
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(call(ToolPutMemoryItem)))
	r.Header.Set("Mcp-Session-Id", "s1")
	if got := (&HTTP{}).guardedCall(r, tok); got != "" {
		t.Errorf("a store that checks no grant guard: %q, want no tool", got)
	}
}

// FuzzGuardedCall: whatever the body, the SDK reads it as it was sent,
// and a tool is named only for one tools/call of a guarded tool, the
// tool the SDK calls (if it calls any).
func FuzzGuardedCall(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"put_memory_item","arguments":{}}}`)
	f.Add(`[{"method":"tools/call","params":{"name":"get_memory_item"}}]`)
	f.Add(`{"method":"tools/call","params":{"name":"get_memory_item"},"method":"ping"}`)
	f.Add(`{"method":"tools/call","params":null}`)
	f.Add("\xff{")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tasks","Name":"put_memory_item"}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"list_tasks","name":"get_memory_item"}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"Method":"ping","method":"tools/call","params":{"name":"put_memory_item"}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"put_memory_item","name":"list_tasks"}}`)
	h := &HTTP{folded: map[string]bool{ToolPutMemoryItem: true, ToolGetMemoryItem: true}}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
		r.Header.Set("Mcp-Session-Id", "s1")
		tool := h.guardedCall(r, tokens.Prefix+"x")
		if got, _ := io.ReadAll(r.Body); string(got) != body {
			t.Fatalf("the body the SDK reads: %q, want %q", got, body)
		}
		if tool == "" {
			return
		}
		// A message the SDK refuses calls no tool: admitted or not, it
		// is answered with an error.
		if got := sdkCalls(body); got != tool && got != "" || !h.folded[tool] {
			t.Fatalf("%q named %s; the SDK calls %q", body, tool, got)
		}
	})
}

// sdkCalls is the tool the SDK calls for body, read as the SDK reads it:
// the message by its jsonrpc package, the parameters by its JSON decoder
// (segmentio's, names matched exactly); "" for any other message.
func sdkCalls(body string) string {
	msg, err := jsonrpc.DecodeMessage([]byte(body))
	if err != nil {
		return ""
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" {
		return ""
	}
	var p struct {
		Name string `json:"name"`
	}
	dec := segjson.NewDecoder(bytes.NewReader(req.Params))
	dec.DontMatchCaseInsensitiveStructFields()
	if dec.Decode(&p) != nil {
		return ""
	}
	return p.Name
}

// TestIdentifyByRememberedGrant: a listener's limits name a token by the
// grant the Keeper remembers, with no look-up (a token revoked elsewhere
// is still named until its next look-up), while Who, which admits,
// looks it up.
func TestIdentifyByRememberedGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgRoot(t)
	st, keeper := openRoot(t, root)
	_, otherKeeper := openRoot(t, root)
	f := serveMCP(t, st, keeper, nil)
	tok, g, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	if id, ok := f.h.Who(r); !ok || id != g.ID() { // looks it up, and remembers it
		t.Fatalf("Who: %q %v, want %s", id, ok, g.ID())
	}
	if _, err := tokens.Revoke(ctx, otherKeeper, g.ID(), ""); err != nil {
		t.Fatal(err)
	}
	if id, ok := f.h.Identify(r); !ok || id != g.ID() {
		t.Errorf("Identify after a revoke elsewhere: %q %v, want %s from the remembered grant", id, ok, g.ID())
	}
	if id, ok := f.h.Who(r); ok {
		t.Errorf("Who after the revoke: %q, want refused", id)
	}
}

// TestFoldOnlyWhereChecked: the tree and SQLite check no grant guard in
// their statements: every request there looks its token up, as before.
func TestFoldOnlyWhereChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, root := range []string{filepath.Join(t.TempDir(), "ws"), "sqlite:" + filepath.Join(t.TempDir(), "ws.db")} {
		if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
			t.Fatal(err)
		}
		st, k := openRoot(t, root)
		if f := serveMCP(t, st, k, nil); f.h.folded != nil || f.h.remember != nil {
			t.Errorf("%s: calls admitted on remembered grants: %v", root, f.h.folded)
		}
	}
}
