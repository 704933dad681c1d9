package mcpserver

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/workspaced/workspaced/tokens"
)

// listed is the names of the tools a session lists.
func listed(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// withoutRights is every tool but those that need a right outside may,
// sorted.
func withoutRights(may ...string) []string {
	var out []string
	for _, n := range ToolNames() {
		if r := rightOf(n); r == "" || slices.Contains(may, r) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestToolsListedByGrant: a session lists only the tools its token lets
// it call — over HTTP and on stdio with a token — and the listing follows
// a change of the token's rights at once; every session of one HTTP
// server lists by its own token.
func TestToolsListedByGrant(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, HTTPOptions{})
	worker := f.token(tokens.Grant{Agent: "worker", Tasks: []string{"t1"}, May: []string{tokens.RightClaim, tokens.RightDone}})
	planner := f.token(tokens.Grant{Agent: "planner", Tasks: []string{"t1"}, May: []string{tokens.RightPlan}})
	reader := f.token(tokens.Grant{Agent: "reader", Tasks: []string{"t1"}})
	ws, ps, rs := f.mustConnect(worker, ""), f.mustConnect(planner, ""), f.mustConnect(reader, "")
	for _, c := range []struct {
		who  string
		cs   *mcp.ClientSession
		want []string
	}{
		{"worker", ws, withoutRights(tokens.RightClaim, tokens.RightDone)},
		{"planner", ps, withoutRights(tokens.RightPlan)},
		{"reader", rs, withoutRights()},
	} {
		got := listed(t, c.cs)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s lists %v, want %v", c.who, got, c.want)
		}
		if c.who == "worker" && (slices.Contains(got, ToolWritePlan) || slices.Contains(got, ToolWriteReview)) {
			t.Errorf("a claim,done token lists %v", got)
		}
	}
	// A tool not listed is still refused when called.
	if text, isErr := callHTTP(t, ws, ToolWritePlan, map[string]any{"subtasks": []any{}}); !isErr {
		t.Fatalf("write_plan under a claim,done token: %s", text)
	}

	// On stdio with a token, the same; a right added shows at the next
	// listing.
	w := fixture(t)
	g := tokens.Grant{Agent: "observer", Tasks: []string{"t1"}, May: []string{tokens.RightDone}}
	cs := connect(t, w, Options{TaskID: "t1", Agent: "observer", Log: slog.New(slog.DiscardHandler),
		Grants: func(*mcp.RequestExtra) (tokens.Grant, error) { return g, nil }})
	if got, want := listed(t, cs), withoutRights(tokens.RightDone); !slices.Equal(got, want) {
		t.Fatalf("stdio lists %v, want %v", got, want)
	}
	g.May = append(g.May, tokens.RightReview)
	if got, want := listed(t, cs), withoutRights(tokens.RightDone, tokens.RightReview); !slices.Equal(got, want) {
		t.Fatalf("after the grant changed, stdio lists %v, want %v", got, want)
	}
	// Without Grants (stdio without a token) every tool is listed.
	if got := listed(t, connect(t, w, Options{TaskID: "t1", Agent: "observer"})); !slices.Equal(got, withoutRights(allRights...)) {
		t.Fatalf("without a token: %v", got)
	}
}
