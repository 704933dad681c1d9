package mcpserver

import (
	"context"
	"net/http"
	"testing"

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
