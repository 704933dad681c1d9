package service

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// ListedEntry is a line of an entry listing, with its value when the
// listing was asked for values.
type ListedEntry struct {
	workspace.ManifestItem
	Value json.RawMessage `json:"value,omitempty"`
}

// EntryListing says which entries of a scope a listing answers.
type EntryListing struct {
	// Prefix keeps only the keys that start with it ("" keeps all).
	Prefix string
	// Last keeps only the last Last of them in key order (0 keeps all).
	Last int
	// Values reads each one's value too.
	Values bool
}

// ListEntries lists scope s's entries sorted by key (byte order), the
// ones q selects, each with its value when q asks: a session read whole
// in one call (the latest items of a conversation kept one entry a key)
// instead of a listing and a read per key. An entry removed between the
// listing and its read is left out; each value is as read then, not one
// snapshot of the scope.
func ListEntries(ctx context.Context, st workspace.Store, s workspace.Scope, q EntryListing) ([]ListedEntry, error) {
	items, err := st.ListEntries(ctx, s)
	if err != nil {
		return nil, err
	}
	items = slices.DeleteFunc(items, func(m workspace.ManifestItem) bool { return !strings.HasPrefix(m.Key, q.Prefix) })
	slices.SortFunc(items, func(a, b workspace.ManifestItem) int { return strings.Compare(a.Key, b.Key) })
	if q.Last > 0 && len(items) > q.Last {
		items = items[len(items)-q.Last:]
	}
	out := make([]ListedEntry, 0, len(items))
	for _, m := range items {
		l := ListedEntry{ManifestItem: m}
		if q.Values {
			e, err := st.GetEntry(ctx, s, m.Key)
			if errors.Is(err, workspace.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if e.Version != m.Version { // written again since the listing
				l.Version, l.UpdatedAt, l.StoredBy, l.ShortDescription, l.Size = e.Version, e.UpdatedAt, e.StoredBy, e.ShortDescription, int64(len(e.Value))
			}
			l.Value = e.Value
		}
		out = append(out, l)
	}
	return out, nil
}

// EntryHistory lists the kept versions of key in memory scope s, oldest
// first (workspace.EntryHistory): who wrote each and what it held before
// a write replaced it or a delete removed it.
func EntryHistory(ctx context.Context, st workspace.Store, s workspace.Scope, key string) ([]workspace.Entry, error) {
	h, ok := workspace.As[workspace.EntryHistory](st)
	if !ok {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "history of " + s.Label(), Msg: "this store keeps no history of memory entries",
			Hint: "use a directory, sqlite: or postgres:// root, which keep it"}
	}
	return h.EntryHistory(ctx, s, key)
}
