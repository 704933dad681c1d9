package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// TestHTTPInvalidUTF8: a key, a description or any other argument whose
// bytes are not UTF-8 — sent raw, or as a lone surrogate escape, which a
// JSON decoder turns into U+FFFD alike — is refused with a clear error,
// never stored under a rewritten key that another key could collide
// with.
func TestHTTPInvalidUTF8(t *testing.T) {
	f := newHTTPFixture(t, HTTPOptions{})
	tok := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}, May: allRights})
	cs := f.mustConnect(tok, "")
	hdr := http.Header{"Mcp-Session-Id": {cs.ID()}, "Mcp-Protocol-Version": {"2025-06-18"}}
	for _, c := range []struct{ name, args string }{
		{"raw byte in a key", `{"key":"bad` + "\xff" + `key","short_description":"d","value":1}`},
		{"lone surrogate in a key", `{"key":"bad\udcffkey","short_description":"d","value":1}`},
		{"raw byte in a description", `{"key":"k","short_description":"d` + "\xfe" + `","value":1}`},
		{"raw byte in a value", `{"key":"k","short_description":"d","value":"v` + "\xc3" + `"}`},
		{"high surrogate alone", `{"key":"k\ud800","short_description":"d","value":1}`},
	} {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"store_env_data","arguments":` + c.args + `}}`
		code, out := f.rawPost(tok, hdr, "", []byte(body))
		if code != http.StatusOK || !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "not valid UTF-8") {
			t.Errorf("%s: %d %s, want a tool error saying the text is not valid UTF-8", c.name, code, out)
		}
	}
	items, err := f.w.ListEntries(context.Background(), workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"})
	if err != nil || len(items) != 0 {
		t.Fatalf("refused calls wrote %v (%v)", items, err)
	}
	// A surrogate pair is a character like any other.
	body := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"store_env_data","arguments":{"key":"emoji\ud83d\ude00","short_description":"d","value":1}}}`
	if code, out := f.rawPost(tok, hdr, "", []byte(body)); code != http.StatusOK || strings.Contains(out, `"isError":true`) {
		t.Fatalf("a surrogate pair: %d %s", code, out)
	}
}
