package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// The token's look-up folded into a tool's own round trip. A request
// that is one call of a tool whose store operation checks a grant guard
// (workspace.GrantGuarding: PostgreSQL's memory item get and put) is
// admitted on the grant its token's last look-up read, when the Keeper
// remembers one (tokens.Rememberer), with no look-up of its own: the
// operation's statement checks that the token's row still holds that
// grant. When the store finds the row changed (workspace.ErrGrantChanged),
// or the remembered grant refuses the call, the grant is forgotten, the
// token looked up and the call decided and run again, once; a token now
// refused is answered with a tool error saying why, and its next request
// is refused (401) by the look-up it then needs. Every other request
// looks its token up, as before.

// guardedTools are the tools whose one operation a store may check a
// grant guard in, by the operation.
var guardedTools = map[string]string{
	ToolGetMemoryItem: workspace.GuardedMemoryGet,
	ToolPutMemoryItem: workspace.GuardedMemoryPut,
}

// foldable is what NewHTTP finds of w and toks: the tools w checks a
// grant guard for, when toks remembers grants (nil otherwise: every
// request looks its token up).
func foldable(w workspace.Store, toks tokens.Keeper) (map[string]bool, tokens.Rememberer) {
	m, ok := toks.(tokens.Rememberer)
	if !ok {
		return nil, nil
	}
	tools := map[string]bool{}
	for tool, op := range guardedTools {
		if service.GuardsGrant(w, op) {
			tools[tool] = true
		}
	}
	if len(tools) == 0 {
		return nil, nil
	}
	return tools, m
}

// guardedKey holds in a request's context the tool it calls, when the
// request is one call of a guarded tool (guardedCall).
type guardedKey struct{}

// guardedCall is the tool r calls when r is a POST of a session whose
// body is one JSON-RPC tools/call of a guarded tool, with a token of the
// Keeper's; "" otherwise. The body (already bounded) is read and put back
// for the SDK as it was.
func (h *HTTP) guardedCall(r *http.Request, token string) string {
	if h.folded == nil || r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") == "" ||
		r.Body == nil || !strings.HasPrefix(token, tokens.Prefix) {
		return ""
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		// The SDK reads the same error (a body over the bound: 413).
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(data), failingReader{err}))
		return ""
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	if tool := calledTool(data); h.folded[tool] {
		return tool
	}
	return ""
}

// calledTool is the tool a JSON-RPC message calls, as the SDK reads it:
// params.name of a tools/call, or "" for any other message. The SDK
// matches names exactly ("Name" is not "name"), so this reading does too
// (the JSON v2 prototype's, which also refuses a name given twice and
// text that is not UTF-8: "", looked up); a batch (an array) is not one
// call: "".
func calledTool(data []byte) string {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if jsonv2.Unmarshal(data, &m) != nil || m.Method != "tools/call" {
		return ""
	}
	return m.Params.Name
}

// remembered is what verify carries, in the TokenInfo of a request
// admitted on its token's remembered grant, to the call it makes.
type remembered struct {
	// tool is the tool the request calls: the guard is for its call
	// alone.
	tool  string
	guard workspace.GrantGuard
	// lookUp forgets the grant, looks the token up and, when it is now
	// refused, counts, logs and audits the refusal as verify does.
	lookUp func() (tokens.Grant, error)
}

// verifyRemembered admits r, a call of a guarded tool (guardedCall), on
// the grant the Keeper remembers for token; false when it remembers none
// live.
func (h *HTTP) verifyRemembered(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, bool) {
	tool, ok := ctx.Value(guardedKey{}).(string)
	if !ok {
		return nil, false
	}
	g, guard, ok := h.remember.Remembered(token)
	if !ok {
		return nil, false
	}
	h.watch.Used(g, h.store.Now())
	lookUp := func() (tokens.Grant, error) {
		h.remember.Forget(token)
		g, err := httpauth.Lookup(h.store, token)
		if err != nil {
			refused := h.refused(r, err)
			if errors.Is(err, httpauth.ErrUntrusted) { // why is the operator's
				return tokens.Grant{}, refused
			}
			return tokens.Grant{}, err
		}
		return g, nil
	}
	return &auth.TokenInfo{UserID: g.ID(), Extra: map[string]any{"grant": g,
		"remembered": &remembered{tool: tool, guard: guard, lookUp: lookUp}}}, true
}

// rememberedFor is what verify carried for a call of tool admitted on
// its token's remembered grant, or nil.
func rememberedFor(extra *mcp.RequestExtra, tool string) *remembered {
	if rm := rememberedAny(extra); rm != nil && rm.tool == tool {
		return rm
	}
	return nil
}

// rememberedAny is what verify carried for a request admitted on its
// token's remembered grant, whatever tool it was admitted for, or nil.
func rememberedAny(extra *mcp.RequestExtra) *remembered {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	rm, _ := extra.TokenInfo.Extra["remembered"].(*remembered)
	return rm
}

// lookedUp is extra with g, the grant a look-up read, in place of the
// remembered one.
func lookedUp(extra *mcp.RequestExtra, g tokens.Grant) *mcp.RequestExtra {
	e := *extra
	ti := *extra.TokenInfo
	ti.Extra = map[string]any{"grant": g}
	e.TokenInfo = &ti
	return &e
}

// againOnLookUp says err, of a call admitted on a remembered grant, is
// the store finding the token's row changed or a refusal the grant
// decided: what the call is decided and run again for, after a look-up.
func againOnLookUp(err error) bool {
	return errors.Is(err, workspace.ErrGrantChanged) || errors.Is(err, ErrRefused)
}
