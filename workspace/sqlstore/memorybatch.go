package sqlstore

import (
	"context"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

var _ workspace.MemoryBatchStore = (*Store)(nil)

// MemoryWritten is what one put of Driver.PutMemories made: created_at
// and the version written, or Err, the put's compare-and-set refusal.
type MemoryWritten struct {
	Created time.Time
	Version int
	Err     error
}

// PutMemoryItems checks every put and compacts its value
// (workspace.CompactMemoryPuts), then writes them all in one transaction
// of the driver's (Driver.PutMemories), at one time.
func (s *Store) PutMemoryItems(ctx context.Context, reqs []workspace.MemoryPutRequest) ([]workspace.MemoryPutResult, error) {
	values, err := workspace.CompactMemoryPuts(reqs, s.settings.Limits, compactValue)
	if err != nil {
		return nil, err
	}
	t := Now()
	ps := make([]MemoryPut, len(reqs))
	for i, req := range reqs {
		ps[i] = newMemoryPut(ctx, req, values[i], t)
	}
	ws, err := s.d.PutMemories(ctx, ps)
	if err != nil {
		return nil, ReadErr("put memory items", err)
	}
	out := make([]workspace.MemoryPutResult, len(ps))
	for i, w := range ws {
		if w.Err != nil {
			out[i].Err = w.Err
			continue
		}
		out[i].Item = ps[i].Item(w.Created, w.Version)
	}
	return out, nil
}

// Item is the item the put wrote, given its created_at and version.
func (p MemoryPut) Item(created time.Time, version int) workspace.MemoryItem {
	return workspace.MemoryItem{Namespace: p.Req.Namespace, Key: p.Req.Key, Version: version, CreatedAt: created.UTC(), UpdatedAt: p.At,
		ExpiresAt: p.Expires(), Value: p.Value}
}
