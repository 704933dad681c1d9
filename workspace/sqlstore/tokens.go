package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// The agents' tokens are rows of tokens: the sha256 of each token, its
// place in the order they were added (n), and its grant as a JSON
// document, the entry config/tokens.json keeps on files.

// DecodeGrant reads a grant as its row holds it, checked.
func DecodeGrant(doc string) (tokens.Grant, error) {
	var g tokens.Grant
	if err := json.Unmarshal([]byte(doc), &g); err != nil {
		return g, fmt.Errorf("a row of tokens does not parse: %w", err)
	}
	if err := g.Check(); err != nil {
		return g, &workspace.Error{Kind: workspace.ErrInvalid, Op: "read tokens", Err: err,
			Hint: "revoke it ('workspaced token revoke --id ID') and add it again"}
	}
	return g, nil
}

// DecodeGrants reads the grants of rows of tokens, in the rows' order.
func DecodeGrants(docs []string) ([]tokens.Grant, error) {
	out := make([]tokens.Grant, 0, len(docs))
	for _, d := range docs {
		g, err := DecodeGrant(d)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// GrantRow is one row of tokens as a write stores it; its n is its place
// in the list plus one.
type GrantRow struct{ SHA256, Doc string }

// ChangeGrants lets change modify the grants gs as a file of them, checks
// the result whole as that file would be checked, and returns the rows
// that replace the table's.
func ChangeGrants(gs []tokens.Grant, change func(*tokens.FileDoc) error) ([]GrantRow, error) {
	doc := tokens.FileDoc{Tokens: gs}
	if err := change(&doc); err != nil {
		return nil, err
	}
	if doc.Tokens == nil {
		doc.Tokens = []tokens.Grant{}
	}
	data, err := atomicfile.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode the tokens: %w", err)
	}
	if _, err := tokens.Parse(data); err != nil {
		return nil, err
	}
	rows := make([]GrantRow, len(doc.Tokens))
	for i, g := range doc.Tokens {
		b, err := json.Marshal(g)
		if err != nil {
			return nil, fmt.Errorf("encode the tokens: %w", err)
		}
		rows[i] = GrantRow{SHA256: g.SHA256, Doc: string(b)}
	}
	return rows, nil
}

// The agents' tokens of a workspace are rows of tokens: the SHA-256 of
// each token and its grant, as config/tokens.json holds them on files;
// the token itself is never stored. A look-up reads the row of the
// token's hash on every call, so a revoke takes effect at the next
// request, in this process or any other. What it read is remembered
// (tokens.Rememberer) for the operations that check the row in their own
// statement (workspace.GrantGuarding).

// Tokens is the Keeper of the workspace's grants.
func (s *Store) Tokens() tokens.Keeper { return tokenTable{s} }

var _ tokens.Rememberer = tokenTable{}

// tokenTable is the tokens.Keeper of a Store.
type tokenTable struct{ s *Store }

func (t tokenTable) Now() time.Time { return Now() }

// Lookup reads the grant whose hash is token's. The hash is looked up by
// the primary key: what a timing could tell about it is a SHA-256 of 32
// random bytes, which says nothing about any token.
func (t tokenTable) Lookup(token string) (tokens.Grant, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ReadTimeout)
	defer cancel()
	var doc string
	sum := tokens.Hash(token)
	err := t.s.r.QueryRow(ctx, "SELECT doc FROM tokens WHERE sha256 = $1", sum).Scan(&doc)
	if errors.Is(err, ErrNoRows) {
		t.s.grants.forget(sum)
		return tokens.Grant{}, tokens.ErrUnknown
	}
	if err != nil {
		return tokens.Grant{}, fmt.Errorf("look the token up: %w", err)
	}
	g, err := DecodeGrant(doc)
	if err != nil {
		return g, err
	}
	t.s.grants.remember(sum, g, doc)
	return tokens.Live(g, t.Now())
}

// Remembered is the grant the last Lookup of token read, when still live
// (tokens.Rememberer).
func (t tokenTable) Remembered(token string) (tokens.Grant, workspace.GrantGuard, bool) {
	sum := tokens.Hash(token)
	r, ok := t.s.grants.get(sum)
	if !ok || r.g.Ended(t.Now()) {
		return tokens.Grant{}, workspace.GrantGuard{}, false
	}
	return r.g, workspace.GrantGuard{SHA256: sum, Doc: r.doc}, true
}

// Forget forgets token's grant (tokens.Rememberer).
func (t tokenTable) Forget(token string) { t.s.grants.forget(tokens.Hash(token)) }

// maxRemembered bounds the grants remembered: past it, one is forgotten
// for each new one (a token in use is looked up again at once).
const maxRemembered = 4096

// grantMemory is the grants the look-ups read, by the token's hash, with
// the row's doc each came from. It is safe for concurrent use.
type grantMemory struct {
	mu sync.Mutex
	m  map[string]rememberedGrant
}

type rememberedGrant struct {
	g   tokens.Grant
	doc string
}

func (m *grantMemory) remember(sum string, g tokens.Grant, doc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[sum]; !ok && len(m.m) >= maxRemembered {
		for k := range m.m {
			delete(m.m, k)
			break
		}
	}
	m.m[sum] = rememberedGrant{g: g, doc: doc}
}

func (m *grantMemory) get(sum string) (rememberedGrant, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[sum]
	return r, ok
}

func (m *grantMemory) forget(sum string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, sum)
}

func (t tokenTable) List(ctx context.Context) ([]tokens.Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	return listGrants(ctx, t.s.r)
}

func listGrants(ctx context.Context, q Executor) ([]tokens.Grant, error) {
	docs, err := Strings(q.Query(ctx, "SELECT doc FROM tokens ORDER BY n, sha256"))
	if err != nil {
		return nil, fmt.Errorf("list the tokens: %w", err)
	}
	return DecodeGrants(docs)
}

// Update changes the grants in one write transaction that holds the
// tokens (Driver.LockTokens: writers one at a time, readers never
// blocked): the grants are read, changed, checked whole as a file of
// them would be, and written back.
func (t tokenTable) Update(ctx context.Context, holder string, change func(*tokens.FileDoc) error) error {
	return t.s.d.Write(ctx, func(tx Executor) error {
		if err := t.s.d.LockTokens(ctx, tx, holder); err != nil {
			return err
		}
		gs, err := listGrants(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := ChangeGrants(gs, change)
		if err != nil {
			return err
		}
		return writeGrants(ctx, tx, rows)
	})
}

// writeGrants replaces the rows of tokens with rows, in order.
func writeGrants(ctx context.Context, tx Executor, rows []GrantRow) error {
	if _, err := tx.Exec(ctx, "DELETE FROM tokens"); err != nil {
		return fmt.Errorf("write the tokens: %w", err)
	}
	for i, r := range rows {
		if _, err := tx.Exec(ctx, "INSERT INTO tokens (sha256, n, doc) VALUES ($1, $2, $3)", r.SHA256, i+1, r.Doc); err != nil {
			return fmt.Errorf("write the tokens: %w", err)
		}
	}
	return nil
}
