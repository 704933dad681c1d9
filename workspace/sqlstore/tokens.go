package sqlstore

import (
	"encoding/json"
	"fmt"

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
