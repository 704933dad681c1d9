package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// What a live view reads (LiveReader) and, when the store has it, its
// Watcher.

// readEventsFrom reads task's events from pos until want of them are
// there: a store may hold an event back for a moment after its write
// returns (on PostgreSQL, while a transaction older than its own runs,
// in this test or another), never for good. It returns them and the
// position after them.
func readEventsFrom(t *testing.T, s workspace.Store, task string, pos int64, want int) ([]workspace.PositionedEvent, int64) {
	t.Helper()
	var got []workspace.PositionedEvent
	next := pos
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d events of %s readable from %d", want, task, pos), func() (bool, string) {
		got = nil
		n, err := s.ReadEventsFrom(t.Context(), task, pos, func(e workspace.PositionedEvent) { got = append(got, e) })
		ok(t, err, "read events from a position")
		next = n
		return len(got) >= want, fmt.Sprintf("%d readable", len(got))
	})
	if len(got) != want {
		t.Fatalf("from %d: %d events, want %d", pos, len(got), want)
	}
	return got, next
}

func testEventPositions(t *testing.T, s workspace.Store, _ Hooks) {
	newTask(t, s, "t1")
	for i := range 5 {
		ok(t, s.AppendEvent(t.Context(), workspace.Event{Time: s.Now(), Name: "probe", TaskID: "t1", Args: []string{strconv.Itoa(i)}}), "append event")
	}
	evs, _, err := s.ReadEvents(t.Context(), "t1")
	ok(t, err, "read events")
	all, next := readEventsFrom(t, s, "t1", 0, len(evs))
	ends := map[int64]bool{}
	for i, e := range all {
		if e.Name != evs[i].Name || !slices.Equal(e.Args, evs[i].Args) {
			t.Fatalf("event %d from 0 is %+v, ReadEvents says %+v", i, e.Event, evs[i])
		}
		// Positions are opaque: each event's Start is where the one
		// before it ended, and no two events end at one position.
		start := int64(0)
		if i > 0 {
			start = all[i-1].End
		}
		if e.Start != start || ends[e.End] {
			t.Fatalf("event %d at [%d, %d) after [%d, %d): each starts where the one before ended, at an end of its own", i, e.Start, e.End, all[max(i-1, 0)].Start, all[max(i-1, 0)].End)
		}
		ends[e.End] = true
	}
	if next != all[len(all)-1].End {
		t.Fatalf("next = %d, the last event ends at %d", next, all[len(all)-1].End)
	}
	// From an event's Start it comes first; from its End, the ones after.
	for i, e := range all {
		var from []workspace.PositionedEvent
		n, err := s.ReadEventsFrom(t.Context(), "t1", e.Start, func(e workspace.PositionedEvent) { from = append(from, e) })
		ok(t, err, "read events from a Start")
		if len(from) != len(all)-i || from[0].Start != e.Start || from[0].End != e.End || n != next {
			t.Fatalf("from event %d's Start: %d events (want %d), next %d (want %d)", i, len(from), len(all)-i, n, next)
		}
		from = nil
		_, err = s.ReadEventsFrom(t.Context(), "t1", e.End, func(e workspace.PositionedEvent) { from = append(from, e) })
		ok(t, err, "read events from an End")
		if len(from) != len(all)-i-1 {
			t.Fatalf("from event %d's End: %d events, want %d", i, len(from), len(all)-i-1)
		}
	}
	// At the end: nothing, and the same position back; appended events
	// come from there, in order.
	n, err := s.ReadEventsFrom(t.Context(), "t1", next, func(e workspace.PositionedEvent) { t.Fatalf("read %+v past the end", e) })
	ok(t, err, "read events at the end")
	if n != next {
		t.Fatalf("reading at the end gave position %d, want %d back", n, next)
	}
	ok(t, s.AppendEvents(t.Context(), "t1", []workspace.Event{
		{Time: s.Now(), Name: "probe", TaskID: "t1", Args: []string{"a"}},
		{Time: s.Now(), Name: "probe", TaskID: "t1", Args: []string{"b"}},
	}), "append events")
	var more []string
	got, n2 := readEventsFrom(t, s, "t1", next, 2)
	for _, e := range got {
		more = append(more, e.Args[0])
	}
	if !slices.Equal(more, []string{"a", "b"}) || n2 == next {
		t.Fatalf("after the end: %v to %d, want [a b] past %d", more, n2, next)
	}
	_, err = s.ReadEventsFrom(t.Context(), "t_none", 0, func(workspace.PositionedEvent) {})
	is(t, err, workspace.ErrNotFound, "read events of a missing task")
	_, err = s.ReadEventsFrom(t.Context(), "../x", 0, func(workspace.PositionedEvent) {})
	is(t, err, workspace.ErrInvalid, "read events of a bad task id")
	_, err = s.ReadEventsFrom(t.Context(), "t1", -1, func(workspace.PositionedEvent) {})
	is(t, err, workspace.ErrInvalid, "read events from a negative position")
}

func testMemoryAgents(t *testing.T, s workspace.Store, _ Hooks) {
	got, err := s.MemoryAgents(t.Context())
	ok(t, err, "memory agents of a fresh store")
	if len(got) != 0 {
		t.Fatalf("a fresh store has memory agents %v", got)
	}
	for _, a := range []string{"zed", "amy", "amy"} {
		_, err := s.StoreEntry(bg, workspace.Scope{Kind: workspace.ScopeAgent, Agent: a}, workspace.StoreRequest{Key: "k" + strconv.Itoa(len(a)) + a, Description: "d", Value: []byte(`1`), Agent: a})
		ok(t, err, "store agent memory")
	}
	_, err = s.StoreEntry(bg, workspace.Scope{Kind: workspace.ScopeGlobal}, workspace.StoreRequest{Key: "g", Description: "d", Value: []byte(`1`), Agent: "bob"})
	ok(t, err, "store global memory")
	got, err = s.MemoryAgents(t.Context())
	ok(t, err, "memory agents")
	if !slices.Equal(got, []string{"amy", "zed"}) {
		t.Fatalf("memory agents = %v, want [amy zed] (sorted, once each, not the global writer)", got)
	}
}

// testWatch: the first report is Everything; after each write a report
// follows after which the write can be read; ending the context ends the
// watch without an error.
func testWatch(t *testing.T, s workspace.Store, _ Hooks) {
	w, isWatcher := workspace.As[workspace.Watcher](s)
	if !isWatcher {
		t.Skip("the store does not implement workspace.Watcher")
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	changes := make(chan workspace.Change)
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(ctx, func(c workspace.Change) {
			select {
			case changes <- c:
			case <-ctx.Done():
			}
		})
	}()
	timeout := time.After(60 * time.Second)
	next := func(what string) workspace.Change {
		t.Helper()
		select {
		case c := <-changes:
			return c
		case err := <-done:
			t.Fatalf("the watch ended (%v) while waiting for %s", err, what)
		case <-timeout:
			t.Fatalf("no report of %s within 60s", what)
		}
		return workspace.Change{}
	}
	if c := next("the start"); !c.Everything {
		t.Fatalf("the first report is %+v, want Everything", c)
	}
	// await reads reports until one that says what and after which seen
	// holds.
	await := func(what string, says func(workspace.Change) bool, seen func() bool) {
		t.Helper()
		for {
			if c := next(what); c.Everything || says(c) {
				if seen() {
					return
				}
			}
		}
	}
	names := func(id string) func(workspace.Change) bool {
		return func(c workspace.Change) bool { return slices.Contains(c.Tasks, id) }
	}
	newTask(t, s, "t1")
	await("a new task", names("t1"), func() bool { _, err := s.GetTask(ctx, "t1"); return err == nil })
	for i := range 3 {
		arg := "w" + strconv.Itoa(i)
		ok(t, s.AppendEvent(ctx, workspace.Event{Time: s.Now(), Name: "probe", TaskID: "t1", Args: []string{arg}}), "append event")
		await("an event", names("t1"), func() bool {
			evs, _, _ := s.ReadEvents(ctx, "t1")
			return len(evs) > 0 && slices.Equal(evs[len(evs)-1].Args, []string{arg})
		})
	}
	for i, sc := range []workspace.Scope{{Kind: workspace.ScopeAgent, Agent: "amy"}, {Kind: workspace.ScopeAgent, Agent: "amy"}, {Kind: workspace.ScopeGlobal}} {
		key := "k" + strconv.Itoa(i)
		_, err := s.StoreEntry(bg, sc, workspace.StoreRequest{Key: key, Description: "d", Value: []byte(`1`), Agent: "amy"})
		ok(t, err, "store memory")
		await("a memory entry", func(c workspace.Change) bool { return c.Memory }, func() bool {
			_, err := s.GetEntry(bg, sc, key)
			return err == nil
		})
	}
	if m, has := workspace.As[workspace.MemoryStore](s); has {
		for _, ns := range []workspace.Namespace{{"watched"}, {"watched", "again"}} {
			_, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "k", Value: []byte(`{}`), Agent: "amy"})
			ok(t, err, "put namespaced memory")
			await("a memory item", func(c workspace.Change) bool { return c.Memory }, func() bool {
				_, err := m.GetMemory(bg, ns, "k")
				return err == nil
			})
		}
	}
	en, _, err := friction.Open(s, "amy").Add(bg, friction.Entry{Type: "escalation", Description: "watched"})
	ok(t, err, "add friction")
	await("friction", func(c workspace.Change) bool { return c.Friction }, func() bool {
		_, err := friction.Open(s, "").Get(ctx, en.ID)
		return err == nil
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the watch ended with %v, want nil once its context ended", err)
	}
}
