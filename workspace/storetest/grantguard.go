package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// testGrantGuard: on a store that checks grant guards
// (workspace.GrantGuarding) and remembers what its tokens' look-ups read
// (tokens.Holder, tokens.Rememberer), the memory item's get, put and
// batch it says it guards run with the guard of the row a look-up read,
// and once that row changed (the grant's rights changed, then the token
// revoked) each is refused with workspace.ErrGrantChanged: nothing
// written, no event, no value handed back, a get of an item that is not
// there included. A store without the capability has its doors look
// every token up; the part says so and ends.
func testGrantGuard(t *testing.T, s workspace.Store, _ Hooks) {
	gs, guards := workspace.As[workspace.GrantGuarding](s)
	if !guards {
		t.Skip("the store checks no grant guard: its doors look every token up")
	}
	h, holds := workspace.As[tokens.Holder](s)
	if !holds {
		t.Fatal("a store that checks grant guards keeps no tokens (tokens.Holder)")
	}
	k := h.Tokens()
	m, remembers := k.(tokens.Rememberer)
	if !remembers {
		t.Fatal("a store that checks grant guards remembers no grant (tokens.Rememberer)")
	}
	mem := memoryOf(t, s)
	ops := map[string]bool{}
	for _, op := range []string{workspace.GuardedMemoryGet, workspace.GuardedMemoryPut, workspace.GuardedMemoryBatch} {
		ops[op] = gs.GuardsGrant(op)
	}
	ns := workspace.Namespace{"guarded"}
	put := func(key string, ifVersion int) workspace.MemoryPutRequest {
		return workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: json.RawMessage(`{"v":1}`), Agent: "worker_1", IfVersion: ifVersion}
	}
	tok, g, err := tokens.Add(bg, k, tokens.Grant{Agent: "worker_1", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	ok(t, err, "add a token")
	_, err = k.Lookup(tok)
	ok(t, err, "look the token up")
	_, guard, remembered := m.Remembered(tok)
	if !remembered || guard.SHA256 != tokens.Hash(tok) {
		t.Fatalf("after a look-up: remembered %v, guard of %q", remembered, guard.SHA256)
	}
	ctx := workspace.WithGrantGuard(bg, guard)
	if ops[workspace.GuardedMemoryPut] {
		_, err = mem.PutMemory(ctx, put("k", 0))
		ok(t, err, "a guarded put")
		_, err = mem.PutMemory(ctx, put("k", 1))
		ok(t, err, "a guarded put with a version")
	}
	if ops[workspace.GuardedMemoryGet] {
		_, err = mem.GetMemory(ctx, ns, "k")
		ok(t, err, "a guarded get")
	}
	if ops[workspace.GuardedMemoryBatch] {
		_, err = workspace.PutMemoryItems(ctx, mem, s.Settings().Limits, []workspace.MemoryPutRequest{put("b", 0), put("c", 0)})
		ok(t, err, "a guarded batch")
	}
	changes := []struct {
		name string
		do   func() error
	}{
		{"the grant's rights changed", func() error {
			return k.Update(bg, "conformance", func(d *tokens.FileDoc) error {
				for i := range d.Tokens {
					if d.Tokens[i].SHA256 == g.SHA256 {
						d.Tokens[i].GlobalMemory = tokens.GlobalRead
					}
				}
				return nil
			})
		}},
		{"the token revoked", func() error { _, err := tokens.Revoke(bg, k, g.ID(), ""); return err }},
	}
	for _, c := range changes {
		ok(t, c.do(), c.name)
		before := memoryWritten(t, mem, ns)
		refused := []struct {
			op, name string
			run      func() error
		}{
			{workspace.GuardedMemoryGet, "a get", func() error {
				it, err := mem.GetMemory(ctx, ns, "k")
				if it.Value != nil {
					t.Errorf("%s: a refused get handed back %s", c.name, it.Value)
				}
				return err
			}},
			{workspace.GuardedMemoryGet, "a get of no item", func() error { _, err := mem.GetMemory(ctx, ns, "none"); return err }},
			{workspace.GuardedMemoryPut, "a put", func() error { _, err := mem.PutMemory(ctx, put("k", 0)); return err }},
			{workspace.GuardedMemoryPut, "a put of a new item", func() error { _, err := mem.PutMemory(ctx, put("new", 0)); return err }},
			{workspace.GuardedMemoryPut, "a put with a version", func() error { _, err := mem.PutMemory(ctx, put("k", 2)); return err }},
			{workspace.GuardedMemoryBatch, "a batch", func() error {
				_, err := workspace.PutMemoryItems(ctx, mem, s.Settings().Limits, []workspace.MemoryPutRequest{put("k", 0), put("new", 0)})
				return err
			}},
			{workspace.GuardedMemoryBatch, "a batch with a version", func() error {
				_, err := workspace.PutMemoryItems(ctx, mem, s.Settings().Limits, []workspace.MemoryPutRequest{put("new", 0), put("k", 2), put("k", 0)})
				return err
			}},
		}
		for _, r := range refused {
			if ops[r.op] {
				is(t, r.run(), workspace.ErrGrantChanged, c.name+": "+r.name)
			}
		}
		if after := memoryWritten(t, mem, ns); after != before {
			t.Errorf("%s: refused writes wrote: %s, was %s", c.name, after, before)
		}
		// A look-up reads the row again, and its guard holds (a revoked
		// token has none).
		_, lerr := k.Lookup(tok)
		_, guard2, again := m.Remembered(tok)
		if (lerr == nil) != again {
			t.Fatalf("%s: look-up %v, remembered %v", c.name, lerr, again)
		}
		if again && ops[workspace.GuardedMemoryPut] {
			_, err := mem.PutMemory(workspace.WithGrantGuard(bg, guard2), put("k", 0))
			ok(t, err, c.name+": a put guarded by the row read again")
		}
	}
}

// memoryWritten is what ns holds: its items' versions and the number of
// memory events but the probes'. A probe is an item put now, in a
// namespace of its own: once its event is read, so is every event of a
// write before it (a reader on PostgreSQL waits for the transactions
// running anywhere in the cluster).
func memoryWritten(t *testing.T, mem workspace.MemoryStore, ns workspace.Namespace) string {
	t.Helper()
	items, err := mem.SearchMemory(bg, workspace.MemorySearchRequest{Prefix: ns, Limit: 100})
	ok(t, err, "search memory")
	probe := fmt.Sprintf("probe%d", probes.Add(1))
	_, err = mem.PutMemory(bg, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"probes"}, Key: probe, Value: json.RawMessage(`{}`), Agent: "worker_1"})
	ok(t, err, "put a probe")
	n := 0
	poll.Until(t, time.Minute, "the probe's event read", func() (bool, string) {
		n = 0
		seen := false
		_, err := mem.ReadMemoryEvents(bg, 0, func(e workspace.PositionedEvent) {
			switch {
			case e.Event.Attrs["key"] == probe:
				seen = true
			case !strings.HasPrefix(e.Event.Attrs["key"], "probe"):
				n++
			}
		})
		ok(t, err, "read memory events")
		return seen, fmt.Sprintf("%d events read", n)
	})
	s := fmt.Sprintf("%d events;", n)
	for _, it := range items {
		s += fmt.Sprintf(" %s@%d", it.Key, it.Version)
	}
	return s
}

// probes counts the probes of memoryWritten, for their names.
var probes atomic.Int64
