package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// A batch of memory puts (workspace.PutMemoryItems): one write on a
// workspace.MemoryBatchStore, one put after another on the others; the
// results are the same either way.

// batchPuts is the puts of the batch part in ns: replaces, create-only
// and compare-and-set refused and taken in between, a time to live, a
// compare-and-set on no item.
func batchPuts(ns workspace.Namespace) []workspace.MemoryPutRequest {
	r := func(key, value string, more func(*workspace.MemoryPutRequest)) workspace.MemoryPutRequest {
		req := workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: json.RawMessage(value), Agent: "worker_1"}
		if more != nil {
			more(&req)
		}
		return req
	}
	return []workspace.MemoryPutRequest{
		r("a", `{"n": 1}`, nil),
		r("b", `{"n": 1}`, func(q *workspace.MemoryPutRequest) { q.IfAbsent = true }),
		r("a", `{"n": 9}`, func(q *workspace.MemoryPutRequest) { q.IfVersion = 1 }),
		r("a", `{"n": 2}`, func(q *workspace.MemoryPutRequest) { q.IfVersion = 2 }),
		r("b", `{"n": 9}`, func(q *workspace.MemoryPutRequest) { q.IfAbsent = true }),
		r("c", `{"n": 1}`, func(q *workspace.MemoryPutRequest) { q.TTLSeconds = 60 }),
		r("d", `{"n": 9}`, func(q *workspace.MemoryPutRequest) { q.IfVersion = 1 }),
		r("a", `{"n": 3}`, nil),
	}
}

// putResult is a put's result as the part compares it: the version
// written or the version its conflict names, with what else tells.
func putResult(it workspace.MemoryItem, err error) string {
	var ve *workspace.VersionError
	if errors.As(err, &ve) && errors.Is(err, workspace.ErrConflict) {
		return fmt.Sprintf("conflict at %d", ve.Current)
	}
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("version %d value %s expires %t created with it %t", it.Version, it.Value, it.ExpiresAt != nil, it.CreatedAt.Equal(it.UpdatedAt))
}

func testMemoryBatch(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	one, batch := workspace.Namespace{"one"}, workspace.Namespace{"batch"}
	seed := put(t, m, one, "a", `{"n": 0}`)
	seeded := put(t, m, batch, "a", `{"n": 0}`)
	var want []string
	for _, req := range batchPuts(one) {
		want = append(want, putResult(m.PutMemory(bg, req)))
	}
	const tok = "tk_0123456789ab"
	res, err := workspace.PutMemoryItems(workspace.WithToken(bg, tok), m, s.Settings().Limits, batchPuts(batch))
	ok(t, err, "put a batch")
	var got []string
	for _, r := range res {
		got = append(got, putResult(r.Item, r.Err))
	}
	same(t, "the batch's results against the same puts one by one", got, want)
	same(t, "the results one by one", want, []string{
		"version 2 value {\"n\":1} expires false created with it false", "version 1 value {\"n\":1} expires false created with it true",
		"conflict at 2", "version 3 value {\"n\":2} expires false created with it false", "conflict at 1",
		"version 1 value {\"n\":1} expires true created with it true", "conflict at 0", "version 4 value {\"n\":3} expires false created with it false"})
	if !seed.CreatedAt.Before(res[0].Item.UpdatedAt) && !seed.CreatedAt.Equal(res[0].Item.UpdatedAt) {
		t.Errorf("the batch was written at %v, before the seed at %v", res[0].Item.UpdatedAt, seed.CreatedAt)
	}
	for _, i := range []int{0, 3, 7} {
		if it := res[i].Item; !it.CreatedAt.Equal(seeded.CreatedAt) || it.Namespace.String() != batch.String() || it.Key != "a" {
			t.Errorf("put %d: %+v, want created_at %v kept", i, it, seeded.CreatedAt)
		}
	}
	if c := res[5].Item; c.ExpiresAt == nil || !c.ExpiresAt.Equal(c.UpdatedAt.Add(60*time.Second)) {
		t.Errorf("put with a time to live: expires %v, updated %v", c.ExpiresAt, c.UpdatedAt)
	}
	got = search(t, m, workspace.MemorySearchRequest{Prefix: batch})
	same(t, "the batch's items", got, []string{"batch/a", "batch/b", "batch/c"})
	a, err := m.GetMemory(bg, batch, "a")
	ok(t, err, "get a")
	same(t, "a after the batch", putResult(a, nil), putResult(res[7].Item, nil))

	// One memory_stored event per written put, in order, attributed to
	// the batch's token as a single put's is.
	var evs []string
	poll.Until(t, 30*time.Second, "the batch's 5 events readable", func() (bool, string) {
		evs = nil
		_, err := m.ReadMemoryEvents(bg, 0, func(e workspace.PositionedEvent) {
			if e.Attrs["namespace"] == batch.String() {
				evs = append(evs, fmt.Sprintf("%s %s %s %s %s", e.Name, e.Attrs["key"], e.Attrs["version"], e.Attrs["agent"], e.Attrs[workspace.EventToken]))
			}
		})
		ok(t, err, "read memory events")
		return len(evs) >= 6, fmt.Sprintf("%d readable", len(evs))
	})
	same(t, "the batch's events", evs, []string{"memory_stored a 1 po ",
		"memory_stored a 2 worker_1 " + tok, "memory_stored b 1 worker_1 " + tok, "memory_stored a 3 worker_1 " + tok,
		"memory_stored c 1 worker_1 " + tok, "memory_stored a 4 worker_1 " + tok})
}

// testMemoryPlainBatch: a batch of plain puts of distinct items (which
// a store may write as one statement over all of them) equals the same
// puts one by one: a replace keeps created_at and counts the version on,
// a new item is version 1, a time to live is kept, and the events are
// one a put in the puts' order, each with the version it wrote.
func testMemoryPlainBatch(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	plain := func(ns workspace.Namespace) []workspace.MemoryPutRequest {
		var out []workspace.MemoryPutRequest
		for i, key := range []string{"z", "a", "m", "é", "b"} {
			req := workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i)), Agent: "worker_1"}
			if key == "m" {
				req.TTLSeconds = 60
			}
			out = append(out, req)
		}
		return out
	}
	one, batch := workspace.Namespace{"plain", "one"}, workspace.Namespace{"plain", "batch"}
	var last time.Time
	for _, ns := range []workspace.Namespace{one, batch} {
		put(t, m, ns, "a", `{"n": -1}`)
		put(t, m, ns, "a", `{"n": -2}`)
		last = put(t, m, ns, "b", `{"n": -1}`).UpdatedAt
	}
	// The stores keep times to the millisecond: a replace within the
	// millisecond of its item's creation would look created with it.
	poll.Until(t, 30*time.Second, "the clock past the items' creation", func() (bool, string) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		return now.After(last), now.String()
	})
	var want []string
	for _, req := range plain(one) {
		want = append(want, putResult(m.PutMemory(bg, req)))
	}
	res, err := workspace.PutMemoryItems(bg, m, s.Settings().Limits, plain(batch))
	ok(t, err, "put a plain batch")
	var got []string
	for _, r := range res {
		got = append(got, putResult(r.Item, r.Err))
	}
	same(t, "the plain batch's results against the same puts one by one", got, want)
	same(t, "the versions", []int{res[0].Item.Version, res[1].Item.Version, res[2].Item.Version, res[3].Item.Version, res[4].Item.Version}, []int{1, 3, 1, 1, 2})
	for i, r := range res {
		if r.Item.Key != plain(batch)[i].Key || r.Item.Namespace.String() != batch.String() {
			t.Errorf("result %d is %s/%s, want put %d's item", i, r.Item.Namespace, r.Item.Key, i)
		}
	}
	var evs []string
	poll.Until(t, 30*time.Second, "the plain batch's events readable", func() (bool, string) {
		evs = nil
		_, err := m.ReadMemoryEvents(bg, 0, func(e workspace.PositionedEvent) {
			if e.Attrs["namespace"] == batch.String() {
				evs = append(evs, e.Attrs["key"]+" "+e.Attrs["version"])
			}
		})
		ok(t, err, "read memory events")
		return len(evs) >= 8, fmt.Sprintf("%d readable", len(evs))
	})
	same(t, "the plain batch's events", evs, []string{"a 1", "a 2", "b 1", "z 1", "a 3", "m 1", "é 1", "b 2"})
}

// testMemoryBatchBadInput: a batch with a put its checks refuse, in the
// middle, is refused whole, naming the put, with nothing written; so is
// an empty batch and one over the limit.
func testMemoryBatchBadInput(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	lim := s.Settings().Limits
	ns := workspace.Namespace{"bad"}
	good := func(n int) []workspace.MemoryPutRequest {
		out := make([]workspace.MemoryPutRequest, n)
		for i := range out {
			out[i] = workspace.MemoryPutRequest{Namespace: ns, Key: fmt.Sprintf("k%d", i), Value: json.RawMessage(`{}`), Agent: "worker_1"}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		bad  func(*workspace.MemoryPutRequest)
	}{
		{"no key", func(q *workspace.MemoryPutRequest) { q.Key = "" }},
		{"an empty namespace", func(q *workspace.MemoryPutRequest) { q.Namespace = nil }},
		{"a label with NUL", func(q *workspace.MemoryPutRequest) { q.Namespace = workspace.Namespace{"a\x00"} }},
		{"a value that is no object", func(q *workspace.MemoryPutRequest) { q.Value = json.RawMessage(`[1]`) }},
		{"a value that is no JSON", func(q *workspace.MemoryPutRequest) { q.Value = json.RawMessage(`{"a":`) }},
		{"a value over the limit", func(q *workspace.MemoryPutRequest) {
			q.Value = json.RawMessage(`{"x":"` + strings.Repeat("x", lim.ValueMaxBytes) + `"}`)
		}},
		{"a version and create only", func(q *workspace.MemoryPutRequest) { q.IfVersion, q.IfAbsent = 1, true }},
		{"a negative time to live", func(q *workspace.MemoryPutRequest) { q.TTLSeconds = -1 }},
		{"no agent", func(q *workspace.MemoryPutRequest) { q.Agent = "" }},
	} {
		reqs := good(7)
		tc.bad(&reqs[4])
		res, err := workspace.PutMemoryItems(bg, m, lim, reqs)
		is(t, err, workspace.ErrInvalid, tc.name)
		if !strings.Contains(err.Error(), "puts[4]") || workspace.HintOf(err) == "" || res != nil {
			t.Errorf("%s: %v (hint %q), results %v; want puts[4] named, a hint, no results", tc.name, err, workspace.HintOf(err), res)
		}
	}
	for _, n := range []int{0, workspace.MaxMemoryBatch + 1} {
		_, err := workspace.PutMemoryItems(bg, m, lim, good(n))
		is(t, err, workspace.ErrInvalid, fmt.Sprintf("a batch of %d", n))
	}
	same(t, "items after refused batches", search(t, m, workspace.MemorySearchRequest{Prefix: ns}), []string{})
	var evs int
	_, err := m.ReadMemoryEvents(bg, 0, func(workspace.PositionedEvent) { evs++ })
	ok(t, err, "read memory events")
	if evs != 0 {
		t.Errorf("refused batches appended %d events", evs)
	}
	res, err := workspace.PutMemoryItems(bg, m, lim, good(workspace.MaxMemoryBatch))
	ok(t, err, "a batch of the most puts")
	if len(res) != workspace.MaxMemoryBatch || res[99].Item.Key != "k99" || res[99].Item.Version != 1 {
		t.Errorf("a batch of %d: %d results, the last %+v", workspace.MaxMemoryBatch, len(res), res[len(res)-1])
	}
}

// testMemoryBatchRace: batches that put the same items at once, in
// opposite orders, all succeed, none waiting on another for good, and
// lose no put: each item's version is the number of puts of it.
func testMemoryBatchRace(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	const writers, rounds = 4, 8
	ns := workspace.Namespace{"race"}
	keys := []string{"x", "y", "z"}
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Go(func() {
			order := slices.Clone(keys)
			if w%2 == 1 {
				slices.Reverse(order)
			}
			for range rounds {
				reqs := make([]workspace.MemoryPutRequest, len(order))
				for i, k := range order {
					reqs[i] = workspace.MemoryPutRequest{Namespace: ns, Key: k, Value: json.RawMessage(fmt.Sprintf(`{"w":%d}`, w)), Agent: "worker_1"}
				}
				if _, err := workspace.PutMemoryItems(bg, m, s.Settings().Limits, reqs); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a batch racing others: %v", err)
	}
	for _, k := range keys {
		it, err := m.GetMemory(bg, ns, k)
		ok(t, err, "get "+k)
		if it.Version != writers*rounds {
			t.Errorf("%s at version %d after %d puts", k, it.Version, writers*rounds)
		}
	}
}
