package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// TestMarkersNameTheToken: a claim made through the API with a token
// drops a marker carrying the token's id (never its secret), which the
// daemon names in the marker's events; one made without a token carries
// none.
func TestMarkersNameTheToken(t *testing.T) {
	st := newTreeStore(t)
	if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "claims"}); err != nil {
		t.Fatal(err)
	}
	keeper, err := service.Tokens("test", st)
	if err != nil {
		t.Fatal(err)
	}
	tok, g, err := tokens.Add(t.Context(), keeper, tokens.Grant{Agent: "worker_1", Tasks: []string{"t1"}, May: []string{tokens.RightClaim}})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := service.Tree("test", st)
	if err != nil {
		t.Fatal(err)
	}
	srv := server(t, st, &httpauth.Gate{Keeper: keeper, TrustLoopback: true})
	for _, c := range []struct {
		who  client
		want string
	}{
		{client{t: t, base: srv.URL, token: tok}, g.ID()},
		{as(t, srv, "worker_2"), ""},
	} {
		var d delivery
		c.who.want(c.who.do("POST", "/api/v1/tasks/t1/claims", map[string]any{"subtask": "s1"}), 200, "claim").json(t, &d)
		data, err := os.ReadFile(filepath.Join(tree.Dir(), filepath.FromSlash(d.Marker)))
		if err != nil {
			t.Fatal(err)
		}
		var m workspace.Marker
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		if m.Token != c.want {
			t.Errorf("marker %s names token %q, want %q", d.Marker, m.Token, c.want)
		}
	}
}
