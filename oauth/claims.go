package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Errors of a token, matched with errors.Is.
var (
	// ErrInvalidToken is a token that is not a valid access token for
	// this server: malformed, badly signed, of another issuer or
	// audience, expired. The client should get another (401).
	ErrInvalidToken = errors.New("invalid access token")
	// ErrNoGrant is a valid token whose claims grant nothing here: no
	// agent, or no task (403).
	ErrNoGrant = errors.New("the access token grants nothing here")
)

// Grant is what the claims of a verified token give under c: the agent
// (the claim AgentClaim, which must be an id), the tasks (scopes
// TaskPrefix+T, TaskPrefix+"*" for every task, and the ids the claim
// TasksClaim lists), the rights and the global memory access (their
// scopes, in the claim "scope" as a space-separated string or "scp" as a
// list). The grant's hash is not a token's: it is derived from the
// issuer and the subject, so that its ID names the same identity across
// the tokens it is issued, and says nothing of any of them.
//
// Claims it cannot read refuse the token (ErrNoGrant), never grant less
// or more than they say.
func (c Config) Grant(claims map[string]any) (tokens.Grant, error) {
	agent, ok := claims[c.AgentClaim].(string)
	if !ok || agent == "" {
		return tokens.Grant{}, noGrant(fmt.Sprintf("the token has no claim %q naming the agent", c.AgentClaim),
			"have the authorization server put the agent's id in that claim, or name another claim in oauth.agent_claim")
	}
	if err := workspace.ValidateID("agent", agent); err != nil {
		return tokens.Grant{}, noGrant(fmt.Sprintf("the claim %q of the token, %s, is not an agent id", c.AgentClaim, quote(agent)),
			"agent ids are 1–128 letters, digits, '.', '_' and '-': map a claim holding one in oauth.agent_claim")
	}
	scopes, err := strs(claims, "scope")
	if err == nil && len(scopes) == 0 {
		scopes, err = strs(claims, "scp")
	}
	if err != nil {
		return tokens.Grant{}, err
	}
	listed, err := strs(claims, c.TasksClaim)
	if err != nil {
		return tokens.Grant{}, err
	}
	var tasks []string
	for _, s := range scopes {
		if t, ok := strings.CutPrefix(s, c.Scopes.TaskPrefix); ok {
			listed = append(listed, t)
		}
	}
	for _, t := range listed {
		if t != tokens.AllTasks && !vocab.ValidID(t) {
			return tokens.Grant{}, noGrant(fmt.Sprintf("the token names task %s, which is not a task id", quote(t)),
				"grant tasks by their ids, or "+c.Scopes.TaskPrefix+"* for every task")
		}
		if !slices.Contains(tasks, t) {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) == 0 {
		return tokens.Grant{}, noGrant(fmt.Sprintf("the token of agent %s grants no task", agent),
			fmt.Sprintf("grant the scope %sT for task T (%s* for every task), or list the tasks in the claim %q", c.Scopes.TaskPrefix, c.Scopes.TaskPrefix, c.TasksClaim))
	}
	g := tokens.Grant{Agent: agent, Tasks: tasks, GlobalMemory: tokens.GlobalNone, SHA256: identityHash(claims)}
	for right, scope := range map[string]string{tokens.RightClaim: c.Scopes.Claim, tokens.RightDone: c.Scopes.Done, tokens.RightPlan: c.Scopes.Plan, tokens.RightReview: c.Scopes.Review} {
		if slices.Contains(scopes, scope) {
			g.May = append(g.May, right)
		}
	}
	slices.SortFunc(g.May, func(a, b string) int { return slices.Index(tokens.Rights(), a) - slices.Index(tokens.Rights(), b) })
	switch {
	case slices.Contains(scopes, c.Scopes.MemoryWrite):
		g.GlobalMemory = tokens.GlobalWrite
	case slices.Contains(scopes, c.Scopes.MemoryRead):
		g.GlobalMemory = tokens.GlobalRead
	}
	if iss, _ := claims["iss"].(string); iss != "" {
		g.Note = "OAuth: " + iss
	}
	if err := g.Check(); err != nil {
		return tokens.Grant{}, noGrant(err.Error(), "see how oauth in workspace.json maps the claims")
	}
	return g, nil
}

// identityHash is the hex SHA-256 of the token's issuer and subject.
func identityHash(claims map[string]any) string {
	iss, _ := claims["iss"].(string)
	sub, _ := claims["sub"].(string)
	sum := sha256.Sum256([]byte("oauth\x00" + iss + "\x00" + sub))
	return hex.EncodeToString(sum[:])
}

// strs reads a claim holding strings: a space-separated string (as
// "scope" is, RFC 9068 §2.2.3) or a list of strings. Absent: none.
func strs(claims map[string]any, name string) ([]string, error) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(v), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, noGrant(fmt.Sprintf("the claim %q of the token holds a %T, not a string", name, e), "a list claim holds strings only")
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, noGrant(fmt.Sprintf("the claim %q of the token is a %T, neither a string nor a list of strings", name, v), "fix the authorization server's mapping of that claim")
	}
}

// quote shows a value a token carried: quoted, and cut when long.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func noGrant(msg, hint string) error {
	return &workspace.Error{Kind: ErrNoGrant, Op: "oauth", Msg: msg, Hint: hint}
}
