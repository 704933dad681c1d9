package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/workspace"
)

// counting counts the reads of task events its handler makes; the
// store's watch and namespaced memory are found through Unwrap.
type counting struct {
	workspace.Store
	reads atomic.Int64
}

func (s *counting) ReadEventsFrom(ctx context.Context, id string, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
	s.reads.Add(1)
	return s.Store.ReadEventsFrom(ctx, id, pos, each)
}

func (s *counting) Unwrap() workspace.Store { return s.Store }

// sleeper is the API over st whose streams could only poll once an hour:
// whatever they send promptly, a wake sent. Keep-alive comments go out
// every keepAlive.
func sleeper(t *testing.T, st workspace.Store, keepAlive time.Duration) (*httptest.Server, *Handler) {
	t.Helper()
	h := New(Config{Store: st, Gate: &httpauth.Gate{TrustLoopback: true}, KeepAlive: keepAlive, PollEvery: time.Hour, Log: quiet})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h
}

// nextEvent skips comments to the next event of ch, failing after a
// minute.
func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if !e.comment {
				return e
			}
		case <-deadline:
			t.Fatal("no event within a minute")
		}
	}
}

// comments waits for n comment lines on ch, failing on an event or after
// a minute.
func comments(t *testing.T, ch <-chan sseEvent, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for n > 0 {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if !e.comment {
				t.Fatalf("an event on an idle stream: %+v", e)
			}
			n--
		case <-deadline:
			t.Fatal("no keep-alive within a minute")
		}
	}
}

// TestIdleStreamSleeps: an open event stream reads the store when the
// store says its task changed, not on a clock: while idle it sends
// keep-alives and reads nothing (a polling stream read on every 20 ms), a
// write to another task does not wake it, and an event of its task
// arrives though the stream would poll only once an hour, on every store.
func TestIdleStreamSleeps(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := &counting{Store: openKind(t, k.kind)}
			ctx := t.Context()
			for _, id := range []string{"t1", "t2"} {
				if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "sleeps"}); err != nil {
					t.Fatal(err)
				}
			}
			srv, h := sleeper(t, st, 50*time.Millisecond)
			ch, cancel := openStreamAt(t, srv.URL+"/api/v1/tasks/t1/events", 0, true)
			defer cancel()
			nextEvent(t, ch) // task_created
			// The watch's first report, once it is in place, wakes the
			// stream once: its read after the one that opened it.
			poll.Until(t, time.Minute, "the watch in place", func() (bool, string) { return h.wakes.reports.Load() > 0, "" })
			poll.Until(t, time.Minute, "the stream's read on the watch's first report", func() (bool, string) {
				n := st.reads.Load()
				return n >= 2, fmt.Sprintf("%d reads", n)
			})
			// Over six keep-alives with no report of the watch, the stream
			// reads nothing. A report in the window (the watch's trouble
			// under a loaded machine: an error is reported as Everything,
			// which wakes every stream) voids it, and another is taken.
			for window := 0; ; window++ {
				reports := h.wakes.reports.Load()
				comments(t, ch, 2) // a read woken before the window is done
				reads := st.reads.Load()
				comments(t, ch, 6)
				if h.wakes.reports.Load() != reports {
					if window == 4 {
						t.Fatalf("the watch reported in each of 5 windows of six keep-alives on an idle store")
					}
					continue
				}
				if n := st.reads.Load() - reads; n != 0 {
					t.Fatalf("an idle stream read the store %d times over six keep-alives, with no report of the watch", n)
				}
				break
			}
			if err := st.AppendEvent(ctx, workspace.Event{Time: st.Now(), Name: "elsewhere", TaskID: "t2"}); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := st.AppendEvent(ctx, workspace.Event{Time: st.Now(), Name: "tick", TaskID: "t1"}); err != nil {
				t.Fatal(err)
			}
			if e := nextEvent(t, ch); e.name != "tick" {
				t.Fatalf("got %+v, want the tick of t1", e)
			}
			t.Logf("%s: an event of t1 reached its stream %s after its write", k.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestMemoryEvents: the memory feed through the API on every store: the
// cursor form pages it, a stream resumed with Last-Event-ID sends what
// follows exactly once, and a put and a delete made while it listens
// arrive (woken by the store: the stream would poll once an hour).
func TestMemoryEvents(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			srv, _ := sleeper(t, st, time.Second)
			c := as(t, srv, "worker_1")
			for i := range 3 {
				c.want(c.do("PUT", itemPath("k"+strconv.Itoa(i), "users", "42"), map[string]any{"value": map[string]any{"n": i}}), 200, "put")
			}
			var page eventPage
			c.want(c.do("GET", "/api/v1/memory/events?limit=2", nil), 200, "first page").json(t, &page)
			if len(page.Events) != 2 || page.Events[0].Name != "memory_stored" || page.Events[0].Attrs["key"] != "k0" ||
				page.Events[0].Attrs["namespace"] != `["users","42"]` || page.Events[0].Attrs["agent"] != "worker_1" || page.Next != page.Events[1].End {
				t.Fatalf("first page: %+v", page)
			}
			first := page.Events[0].End
			c.want(c.do("GET", "/api/v1/memory/events?after="+itoa(page.Next), nil), 200, "next page").json(t, &page)
			if len(page.Events) != 1 || page.Events[0].Attrs["key"] != "k2" {
				t.Fatalf("next page: %+v", page)
			}
			ch, cancel := openStreamAt(t, srv.URL+"/api/v1/memory/events", first, true)
			defer cancel()
			for _, want := range []string{"k1", "k2"} {
				e := nextEvent(t, ch)
				var ev workspace.PositionedEvent
				if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
					t.Fatal(err)
				}
				if e.name != "memory_stored" || ev.Attrs["key"] != want || e.id != ev.End {
					t.Fatalf("resumed after %d: %+v, want %s", first, e, want)
				}
			}
			c.want(c.do("PUT", itemPath("k3", "users", "42"), map[string]any{"value": map[string]any{}}), 200, "put while listening")
			if e := nextEvent(t, ch); e.name != "memory_stored" {
				t.Fatalf("got %+v, want the put of k3", e)
			}
			c.want(c.do("DELETE", itemPath("k3", "users", "42"), nil), 204, "delete while listening")
			if e := nextEvent(t, ch); e.name != "memory_deleted" {
				t.Fatalf("got %+v, want the delete of k3", e)
			}
		})
	}
}
