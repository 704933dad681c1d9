package tokens

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// A token's life: added with an expiry or none, replaced by a new one
// (Rotate) that takes over its grant while the old one still works for
// an overlap, revoked, or expired. A Keeper's Lookup refuses a token past
// its ExpiresAt (ErrExpired), and a server that holds sessions open for
// a token ends them when the token ends (Watch).

// ErrExpired is a token past its expiry, or past the overlap of the
// rotation that replaced it.
var ErrExpired = errors.New("expired token")

// DefaultOverlap is how long a rotated token keeps working beside its
// successor unless told otherwise: time for the agents holding it to be
// given the new one.
const DefaultOverlap = 10 * time.Minute

// Ended reports whether g is no longer accepted at now.
func (g Grant) Ended(now time.Time) bool { return !g.ExpiresAt.IsZero() && !now.Before(g.ExpiresAt) }

// Live returns g when it is still accepted at now, and ErrExpired (with
// its expiry, and its successor when rotated) when it is not: what every
// Keeper's Lookup returns for a token it holds.
func Live(g Grant, now time.Time) (Grant, error) {
	if !g.Ended(now) {
		return g, nil
	}
	if g.RotatedTo != "" {
		return Grant{}, fmt.Errorf("%w: token %s was replaced by %s, and its overlap ended at %s", ErrExpired, g.ID(), g.RotatedTo, g.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return Grant{}, fmt.Errorf("%w: token %s expired at %s", ErrExpired, g.ID(), g.ExpiresAt.UTC().Format(time.RFC3339))
}

// Add makes a token for g (its SHA256 and CreatedAt are filled in), adds
// it to the grants k keeps and returns the token — the only time it is
// ever seen — with the grant as stored. An ExpiresAt that is not after
// now is refused.
func Add(ctx context.Context, k Keeper, g Grant) (string, Grant, error) {
	tok, err := New()
	if err != nil {
		return "", Grant{}, err
	}
	g.SHA256 = Hash(tok)
	g.CreatedAt = k.Now()
	g.RotatedTo, g.LastUsedAt = "", time.Time{}
	if g.GlobalMemory == "" {
		g.GlobalMemory = GlobalNone
	}
	if !g.ExpiresAt.IsZero() && !g.ExpiresAt.After(g.CreatedAt) {
		return "", Grant{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "add token",
			Msg:  fmt.Sprintf("it would expire at %s, which is not after now (%s)", g.ExpiresAt.UTC().Format(time.RFC3339), g.CreatedAt.UTC().Format(time.RFC3339)),
			Hint: "give a positive --ttl, or an --expires-at in the future"}
	}
	if err := g.Check(); err != nil {
		return "", Grant{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "add token", Err: err}
	}
	err = k.Update(ctx, "token", func(d *FileDoc) error {
		d.Tokens = append(d.Tokens, g)
		return nil
	})
	if err != nil {
		return "", Grant{}, err
	}
	return tok, g, nil
}

// Rotation is what Rotate changes.
type Rotation struct {
	// ID is the token replaced.
	ID string
	// Overlap is how long the old token keeps working beside the new one;
	// zero ends it at once. It never lengthens the old token's life.
	Overlap time.Duration
	// TTL, when positive, is the new token's lifetime; else ExpiresAt,
	// when set; else the new token lives as long as the old one was
	// given (from its creation to its expiry), and for ever when the old
	// one had no expiry.
	TTL       time.Duration
	ExpiresAt time.Time
}

// Rotate replaces the token r.ID with a new one holding the same grant
// (agent, tasks, rights, global memory, note), in one update: the old
// grant names its successor (RotatedTo) and ends after the overlap. It
// returns the new token — the only time it is seen — and both grants as
// stored. A token already replaced or ended is refused: rotate its
// successor.
func Rotate(ctx context.Context, k Keeper, r Rotation) (string, Grant, Grant, error) {
	if r.Overlap < 0 || r.TTL < 0 {
		return "", Grant{}, Grant{}, &workspace.Error{Kind: workspace.ErrInvalid, Op: "rotate token " + r.ID, Msg: "a negative duration",
			Hint: "give --overlap and --ttl as positive durations (10m, 24h), or --overlap 0 to end the old token at once"}
	}
	tok, err := New()
	if err != nil {
		return "", Grant{}, Grant{}, err
	}
	var old, next Grant
	err = k.Update(ctx, "token", func(d *FileDoc) error {
		now := k.Now()
		i := d.index(r.ID)
		if i < 0 {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: "rotate token " + r.ID, Msg: "no such token",
				Hint: "list the tokens to see their ids"}
		}
		g := d.Tokens[i]
		if g.RotatedTo != "" || g.Ended(now) {
			msg := "it has ended"
			if g.RotatedTo != "" {
				msg = "it was replaced already, by " + g.RotatedTo
			}
			return &workspace.Error{Kind: workspace.ErrInvalid, Op: "rotate token " + r.ID, Msg: msg,
				Hint: "rotate the token that replaced it, or add a new one"}
		}
		next = Grant{Agent: g.Agent, SHA256: Hash(tok), Tasks: g.Tasks, GlobalMemory: g.GlobalMemory, May: g.May, Note: g.Note, CreatedAt: now}
		switch {
		case r.TTL > 0:
			next.ExpiresAt = now.Add(r.TTL)
		case !r.ExpiresAt.IsZero():
			next.ExpiresAt = r.ExpiresAt
		case !g.ExpiresAt.IsZero():
			next.ExpiresAt = now.Add(g.ExpiresAt.Sub(g.CreatedAt))
		}
		if !next.ExpiresAt.IsZero() && !next.ExpiresAt.After(now) {
			return &workspace.Error{Kind: workspace.ErrInvalid, Op: "rotate token " + r.ID,
				Msg: "the new token would expire at " + next.ExpiresAt.UTC().Format(time.RFC3339) + ", which is not after now", Hint: "give a positive --ttl"}
		}
		end := now.Add(r.Overlap)
		if g.ExpiresAt.IsZero() || end.Before(g.ExpiresAt) {
			g.ExpiresAt = end
		}
		g.RotatedTo = next.ID()
		d.Tokens[i] = g
		d.Tokens = append(d.Tokens, next)
		old = g
		return nil
	})
	if err != nil {
		return "", Grant{}, Grant{}, err
	}
	return tok, next, old, nil
}

// index is the place of the grant whose ID is id, or -1.
func (d FileDoc) index(id string) int {
	for i, g := range d.Tokens {
		if g.ID() == id {
			return i
		}
	}
	return -1
}

// Revoke removes the tokens whose ID is id (when id is not "") or whose
// agent is agent (when agent is not ""), and returns the grants removed.
// Nothing matching is ErrNotFound.
func Revoke(ctx context.Context, k Keeper, id, agent string) ([]Grant, error) {
	what := "token " + id
	if id == "" {
		what = "tokens of agent " + agent
	}
	return remove(ctx, k, what, func(g Grant) bool {
		return (id != "" && g.ID() == id) || (agent != "" && g.Agent == agent)
	})
}

// RemoveEnded removes the tokens that have ended (expired, or past the
// overlap of their rotation) and returns them; none is not an error.
func RemoveEnded(ctx context.Context, k Keeper) ([]Grant, error) {
	gone, err := remove(ctx, k, "", func(g Grant) bool { return g.Ended(k.Now()) })
	if errors.Is(err, workspace.ErrNotFound) {
		return nil, nil
	}
	return gone, err
}

func remove(ctx context.Context, k Keeper, what string, match func(Grant) bool) ([]Grant, error) {
	var gone []Grant
	err := k.Update(ctx, "token", func(d *FileDoc) error {
		gone = nil
		keep := d.Tokens[:0:0]
		for _, g := range d.Tokens {
			if match(g) {
				gone = append(gone, g)
				continue
			}
			keep = append(keep, g)
		}
		if len(gone) == 0 {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: "revoke " + what, Msg: "no such token",
				Hint: "list the tokens to see their ids and agents"}
		}
		d.Tokens = keep
		return nil
	})
	return gone, err
}
