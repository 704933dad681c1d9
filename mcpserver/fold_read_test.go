package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/tokens"
)

// TestGuardedCallReadAsTheSDKReads: a request is admitted on its token's
// remembered grant only for the tool the SDK will call. The SDK matches
// names exactly, so a call of list_tasks that also carries "Name":
// "put_memory_item" (which a case-blind reading would take for the
// tool) is looked up like any other call: a token revoked by another
// process is refused at once.
func TestGuardedCallReadAsTheSDKReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgRoot(t)
	st, keeper := openRoot(t, root)
	_, otherKeeper := openRoot(t, root)
	f := serveMCP(t, st, keeper, nil)
	tok, g, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		t.Fatal(err)
	}
	cs := f.mustConnect(tok, "")
	if _, isErr := callHTTP(t, cs, ToolPutMemoryItem, putArgs(1)); isErr {
		t.Fatal("the first put failed")
	}
	if _, err := tokens.Revoke(ctx, otherKeeper, g.ID(), ""); err != nil {
		t.Fatal(err)
	}
	hdr := http.Header{"Mcp-Session-Id": {cs.ID()}, "Mcp-Protocol-Version": {"2025-06-18"}}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_tasks","Name":"put_memory_item","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"list_tasks","NAME":"get_memory_item","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","Method":"ping","params":{"Name":"put_memory_item","name":"list_tasks"}}`,
	} {
		if code, answer := f.rawPost(tok, hdr, "", []byte(body)); code != http.StatusUnauthorized {
			t.Errorf("%s with a revoked token: %d %s, want 401", body, code, answer)
		}
	}
}

// TestAdmittedForAnotherTool: a call that reaches a tool other than the
// one its request was admitted for on a remembered grant is looked up
// before it runs: refused when the look-up refuses the token, run on
// the grant it reads otherwise.
func TestAdmittedForAnotherTool(t *testing.T) {
	t.Parallel()
	w := fixture(t)
	s, err := newSession(context.Background(), w, Options{Agent: "w", Grants: grantOf})
	if err != nil {
		t.Fatal(err)
	}
	stale := tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite}
	for _, c := range []struct {
		name    string
		lookUp  func() (tokens.Grant, error)
		refused bool
	}{
		{"revoked", func() (tokens.Grant, error) { return tokens.Grant{}, errors.New("unknown or revoked token") }, true},
		{"still valid", func() (tokens.Grant, error) { return stale, nil }, false},
	} {
		looked := 0
		rm := &remembered{tool: ToolPutMemoryItem, lookUp: func() (tokens.Grant, error) { looked++; return c.lookUp() }}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolListTasks, Arguments: json.RawMessage(`{}`)},
			Extra: &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "tok", Extra: map[string]any{"grant": stale, "remembered": rm}}}}
		res := toolByName()[ToolListTasks].call(s, context.Background(), req)
		if looked != 1 {
			t.Errorf("%s: looked up %d times, want once", c.name, looked)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; res.IsError != c.refused || c.refused && !strings.Contains(text, "no longer valid") {
			t.Errorf("%s: answered %v %q", c.name, res.IsError, text)
		}
	}
}
