package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// A batch of memory puts: many puts in one call, applied in their order
// as PutMemory would apply them one by one, in one write where the store
// can (MemoryBatchStore). The checks come first, for every put: a put
// refused by them refuses the whole batch, named by its index (puts[i]),
// before anything is written. A put refused by its compare-and-set is
// only that put's result and does not stop the others.

// MaxMemoryBatch is the most puts one batch takes.
const MaxMemoryBatch = 100

// MemoryPutResult is what one put of a batch made: the item written, or
// Err, the put's compare-and-set refusal (ErrConflict with a
// *VersionError, as PutMemory gives it); Item is zero then.
type MemoryPutResult struct {
	Item MemoryItem
	Err  error
}

// CheckMemoryPuts checks a batch: 1–MaxMemoryBatch puts, each checked
// (CheckMemoryPut); the first refused put refuses the batch, its error
// prefixed with its index (puts[i]) and keeping its kind, hint and
// field.
func CheckMemoryPuts(reqs []MemoryPutRequest, lim LimitSettings) error {
	if err := checkBatchSize(len(reqs)); err != nil {
		return err
	}
	for i, req := range reqs {
		if err := CheckMemoryPut(req, lim); err != nil {
			return AtPut(i, err)
		}
	}
	return nil
}

// CompactMemoryPuts is CheckMemoryPuts that also gives each put's value
// compacted by compact (CompactMemoryPut), for a store that writes them
// so.
func CompactMemoryPuts(reqs []MemoryPutRequest, lim LimitSettings, compact Compactor) ([]json.RawMessage, error) {
	if err := checkBatchSize(len(reqs)); err != nil {
		return nil, err
	}
	values := make([]json.RawMessage, len(reqs))
	for i, req := range reqs {
		v, err := CompactMemoryPut(req, lim, compact)
		if err != nil {
			return nil, AtPut(i, err)
		}
		values[i] = v
	}
	return values, nil
}

// CompactMemoryPut checks req as CheckMemoryPut does and gives its value
// compacted (json.Compact's bytes): for a good value the check is
// compact's (CompactValue's when nil), which a store may make one pass.
func CompactMemoryPut(req MemoryPutRequest, lim LimitSettings, compact Compactor) (json.RawMessage, error) {
	if compact == nil {
		compact = CompactValue
	}
	if err := checkItemName(req.Namespace, req.Key, req.Agent); err != nil {
		return nil, err
	}
	v := req.Value
	if len(v) > 0 && len(v) <= lim.ValueMaxBytes && CheckDepth(v, lim.MaxDepth) == nil {
		if out, ok := compact(v); ok && out[0] == '{' {
			if err := checkPutOptions(req); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	if err := CheckMemoryValue(v, lim); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, v); err != nil {
		return nil, FieldErr(ErrInvalid, "value", FieldValue, "give a JSON object", "%v", err)
	}
	if err := checkPutOptions(req); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// checkBatchSize refuses a batch of no puts or more than MaxMemoryBatch.
func checkBatchSize(n int) error {
	switch {
	case n == 0:
		return Invalidf("memory batch", fmt.Sprintf("give 1 to %d puts", MaxMemoryBatch), "no puts")
	case n > MaxMemoryBatch:
		return Invalidf("memory batch", fmt.Sprintf("split the puts into batches of at most %d", MaxMemoryBatch), "%d puts, over %d", n, MaxMemoryBatch)
	}
	return nil
}

// AtPut is err of the batch's put i, named by its index.
func AtPut(i int, err error) error { return fmt.Errorf("puts[%d]: %w", i, err) }

// IsPutConflict says err is a put's compare-and-set refusal: ErrConflict
// with a *VersionError.
func IsPutConflict(err error) bool {
	var ve *VersionError
	return errors.Is(err, ErrConflict) && errors.As(err, &ve)
}

// PutMemoryItems applies a batch of puts to m: in one write when m is a
// MemoryBatchStore (As), else checked first (CheckMemoryPuts within lim)
// and put one by one, each its own write (the tree's way); there a write
// that fails after others are done leaves them written, and the results
// so far come back with the error.
func PutMemoryItems(ctx context.Context, m MemoryStore, lim LimitSettings, reqs []MemoryPutRequest) ([]MemoryPutResult, error) {
	if b, ok := As[MemoryBatchStore](m); ok {
		return b.PutMemoryItems(ctx, reqs)
	}
	if err := CheckMemoryPuts(reqs, lim); err != nil {
		return nil, err
	}
	out := make([]MemoryPutResult, 0, len(reqs))
	for i, req := range reqs {
		it, err := m.PutMemory(ctx, req)
		if err != nil && !IsPutConflict(err) {
			return out, AtPut(i, err)
		}
		out = append(out, MemoryPutResult{Item: it, Err: err})
	}
	return out, nil
}
