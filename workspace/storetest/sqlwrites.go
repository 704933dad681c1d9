package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// SQLEntryWrites checks, on a SQL store, that entries an agent writes
// with its own SQL (exec runs one statement on the agent's connection)
// make the events a write through the store makes: once each, in order,
// read from a position, followed, and reported by the store's watch.
// deleter is the agent a DELETE's event names when the agent's SQL does
// not say (SQLite: "sql"; PostgreSQL: the database role).
func SQLEntryWrites(t *testing.T, s workspace.Store, exec func(ctx context.Context, q string) error, deleter string) {
	ctx := t.Context()
	newTask(t, s, "tw")
	// The store's own write: its event is the one line the format gives.
	res, err := s.StoreEntry(ctx, workspace.Scope{Kind: workspace.ScopeThread, TaskID: "tw"},
		workspace.StoreRequest{Key: "own", Description: "d", Value: []byte(`{"a":1}`), Agent: "po"})
	ok(t, err, "store an entry")
	evs, _, err := s.ReadEvents(ctx, "tw")
	ok(t, err, "read events")
	want := workspace.FormatEvent(workspace.Event{Time: res.Entry.UpdatedAt, Name: "env_stored", TaskID: "tw",
		Attrs: map[string]string{"key": "own", "agent": "po", "version": "1"}})
	if got := workspace.FormatEvent(evs[len(evs)-1]); got != want {
		t.Fatalf("the store's own write made %q, want %q", got, want)
	}
	_, pos := readEventsFrom(t, s, "tw", 0, len(evs))

	var mu sync.Mutex
	var followed []string
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- s.FollowEvents(fctx, "tw", false, 50*time.Millisecond, func(e workspace.Event) {
			mu.Lock()
			followed = append(followed, describe(e))
			mu.Unlock()
		})
	}()
	defer func() {
		stop()
		ok(t, <-done, "follow events")
	}()
	var changed []workspace.Change
	if w, isW := workspace.As[workspace.Watcher](s); isW {
		wctx, cancel := context.WithCancel(ctx)
		wdone := make(chan struct{})
		go func() {
			defer close(wdone)
			_ = w.Watch(wctx, func(c workspace.Change) {
				mu.Lock()
				changed = append(changed, c)
				mu.Unlock()
			})
		}()
		defer func() { cancel(); <-wdone }()
		poll.Until(t, 30*time.Second, "the watch's first report", func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			return len(changed) > 0, "none yet"
		})
	}
	// The follower takes its start in its own goroutine: a probe it
	// delivers says it has.
	probes := 0
	poll.Until(t, 30*time.Second, "the follower under way", func() (bool, string) {
		ok(t, s.AppendEvent(ctx, workspace.Event{Name: "probe", TaskID: "tw"}), "append a probe")
		probes++
		mu.Lock()
		defer mu.Unlock()
		return len(followed) > 0, "no probe followed yet"
	})
	_, pos = readEventsFrom(t, s, "tw", pos, probes)
	mu.Lock()
	changed = nil
	mu.Unlock()

	at := "2026-01-02T03:04:05.678Z"
	cols := "INSERT INTO entries (scope, owner, key, short_description, stored_by, created_at, updated_at, version, size, value) VALUES "
	for _, q := range []string{
		cols + "('thread', 'tw', 'raw', 'd', 'py', '" + at + "', '" + at + "', 1, 3, '\"x\"')",
		cols + "('session', 'tw/th1', 'note', 'd', 'py', '" + at + "', '" + at + "', 1, 3, '\"n\"')",
		"UPDATE entries SET value = '\"y\"', version = 2, updated_at = '2026-01-02T03:04:06.000Z' WHERE key = 'raw'",
		"UPDATE entries SET short_description = 'e' WHERE key = 'note'",
		"DELETE FROM entries WHERE key = 'raw'",
		cols + "('thread', 'tw', 'odd key=1', 'd', 'py', '" + at + "', '" + at + "', 1, 3, '\"z\"')",
		cols + "('agent', 'py', 'mine', 'd', 'py', '" + at + "', '" + at + "', 1, 3, '\"m\"')",
	} {
		ok(t, exec(ctx, q), q)
	}
	wantEvs := []string{
		"env_stored agent=py key=raw version=1",
		"memory_stored agent=py key=note scope=session thread=th1 version=1",
		"env_updated agent=py key=raw version=2",
		"memory_updated agent=py key=note scope=session thread=th1 version=1",
		"env_deleted agent=" + deleter + " key=raw",
		"env_stored agent=py key=odd key=1 version=1",
	}
	got, _ := readEventsFrom(t, s, "tw", pos, len(wantEvs))
	var names []string
	for _, e := range got {
		names = append(names, describe(e.Event))
	}
	same(t, "the events of SQL writes, read from a position", names, wantEvs)
	if first := got[0].Time.UTC().Format(workspace.TimeFormat); first != at {
		t.Errorf("the insert's event at %s, want its updated_at %s", first, at)
	}
	poll.Until(t, 30*time.Second, "the follower has the SQL writes' events", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		n := len(slices.DeleteFunc(slices.Clone(followed), func(d string) bool { return d == "probe" }))
		return n >= len(wantEvs), fmt.Sprintf("%d followed", n)
	})
	mu.Lock()
	f := slices.DeleteFunc(slices.Clone(followed), func(d string) bool { return d == "probe" })
	mu.Unlock()
	same(t, "the events of SQL writes, followed", f, wantEvs)
	if _, isW := workspace.As[workspace.Watcher](s); isW {
		poll.Until(t, 30*time.Second, "the watch reports tw", func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			for _, c := range changed {
				if c.Everything || slices.Contains(c.Tasks, "tw") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d reports, none of tw", len(changed))
		})
	}
}

// describe is an event's name and attributes, as a test compares them.
func describe(e workspace.Event) string {
	var b strings.Builder
	b.WriteString(e.Name)
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(" " + k + "=" + e.Attrs[k])
	}
	return b.String()
}
