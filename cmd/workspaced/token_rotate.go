package main

import (
	"context"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/tokens"
)

const tokenRotateUsage = `Usage:
  workspaced token rotate --id ID [--overlap DURATION] [--ttl DURATION | --expires-at TIME] [--json]

Replaces the token ID with a new one holding the same grant (agent,
tasks, rights, global memory, note), in one update of config/tokens.json
(the tokens table on a postgres:// or sqlite: root), and prints the new
token on stdout, once. The old token keeps working for --overlap (10m by
default; 0 ends it at once), time to give the agent its new token; after
it the old token is refused and the sessions and streams open on it end
within a second. The new token expires after --ttl, at --expires-at, or,
left out, lives as long as the old one was given (for ever when the old
one never expired). A token already replaced is refused: rotate its
successor, which 'token list' shows under REPLACED BY.

Examples:
  workspaced token rotate --id tk_3f9a1c2b4d5e
  workspaced token rotate --id tk_3f9a1c2b4d5e --overlap 0 --ttl 720h
  NEW=$(workspaced token rotate --id tk_3f9a1c2b4d5e --overlap 1h)

Exit codes: 0 ok, 1 failure (a token replaced or ended already), 2 usage,
3 no such token, 4 lock timeout.
`

// tokenRotateOutput is token rotate --json: the new token with its grant,
// and the old one's id and end.
type tokenRotateOutput struct {
	Token string `json:"token"`
	ID    string `json:"id"`
	tokens.Grant
	Replaced     string    `json:"replaced"`
	ReplacedEnds time.Time `json:"replaced_ends"`
}

func tokenRotate(ctx context.Context, e *env, args []string) error {
	fs := newFlags("token rotate")
	id := fs.String("id", "", "the `ID` of the token to replace (tk_...)")
	overlap := fs.Duration("overlap", tokens.DefaultOverlap, "how long the old token keeps working (`DURATION`; 0 ends it at once)")
	ttl := fs.Duration("ttl", 0, "the new token expires `DURATION` from now")
	expiresAt := fs.String("expires-at", "", "the new token expires at `TIME` (RFC 3339)")
	asJSON := fs.Bool("json", false, "print {token, id, agent, ..., replaced, replaced_ends}")
	if err := parseNeeding(e, fs, tokenRotateUsage, args, "id"); err != nil {
		return err
	}
	if *overlap < 0 {
		return usageHint("token rotate", "--overlap must not be negative")
	}
	expiry, err := expiryOf("token rotate", *ttl, *expiresAt)
	if err != nil {
		return err
	}
	st, err := e.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := tokenKeeper("token rotate", st)
	if err != nil {
		return err
	}
	tok, g, old, err := tokens.Rotate(ctx, k, tokens.Rotation{ID: *id, Overlap: *overlap, ExpiresAt: expiry})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, tokenRotateOutput{Token: tok, ID: g.ID(), Grant: g, Replaced: old.ID(), ReplacedEnds: old.ExpiresAt})
	}
	fmt.Fprintln(e.stdout, tok)
	fmt.Fprintf(e.stderr, "token %s replaces %s for agent %s (%s); %s is accepted until %s; the new one is not shown again\n",
		g.ID(), old.ID(), g.Agent, expiresText(g), old.ID(), old.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

// expiryOf is the expiry --ttl or --expires-at gives (zero for neither).
func expiryOf(cmd string, ttl time.Duration, at string) (time.Time, error) {
	if ttl != 0 && at != "" {
		return time.Time{}, usageHint(cmd, "--ttl and --expires-at: give one or the other")
	}
	if ttl < 0 {
		return time.Time{}, usageHint(cmd, "--ttl must be positive (24h, 720h)")
	}
	if ttl > 0 {
		return time.Now().Add(ttl), nil
	}
	if at == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, usageHint(cmd, "--expires-at %q is not an RFC 3339 time (2026-12-31T00:00:00Z)", at)
	}
	return t, nil
}

// expiresText says when g expires, for a message.
func expiresText(g tokens.Grant) string {
	if g.ExpiresAt.IsZero() {
		return "no expiry"
	}
	return "expires " + g.ExpiresAt.UTC().Format(time.RFC3339)
}

// expiryCell is the EXPIRES column of token list.
func expiryCell(g tokens.Grant, now time.Time) string {
	switch {
	case g.ExpiresAt.IsZero():
		return "never"
	case g.Ended(now):
		return "ended " + g.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return g.ExpiresAt.UTC().Format(time.RFC3339)
}

// timeCell is a time of a listing, "-" for none.
func timeCell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
