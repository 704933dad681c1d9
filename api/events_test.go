package api

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// sseEvent is one event read off a stream, or a comment line (comment
// set, when asked for).
type sseEvent struct {
	id      int64
	name    string
	data    string
	comment bool
}

// openStream opens task t1's event stream from lastID (-1: none) and
// sends what it reads on the returned channel until cancel.
func openStream(t *testing.T, base string, lastID int64) (<-chan sseEvent, context.CancelFunc) {
	t.Helper()
	return openStreamAt(t, base+"/api/v1/tasks/t1/events", lastID, false)
}

// openStreamAt opens the event stream at url from lastID (-1: none) and
// sends its events, and its comments when comments is set, on the
// returned channel until cancel.
func openStreamAt(t *testing.T, url string, lastID int64, comments bool) (<-chan sseEvent, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(httpauth.HeaderAgent, "watcher")
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ":") && comments:
				out <- sseEvent{comment: true, data: line}
			case line == "":
				if e.name != "" {
					out <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out, cancel
}

// take reads n events off ch, failing after a minute without them.
func take(t *testing.T, ch <-chan sseEvent, n int) []sseEvent {
	t.Helper()
	var got []sseEvent
	deadline := time.After(time.Minute)
	for len(got) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended after %d of %d events", len(got), n)
			}
			got = append(got, e)
		case <-deadline:
			t.Fatalf("%d of %d events within a minute", len(got), n)
		}
	}
	return got
}

// TestStreamResumes: a stream sends a task's events with their positions
// as ids; a client that reconnects with Last-Event-ID gets every event
// after it exactly once, those appended while it was away and those
// appended while it listens, on every store.
func TestStreamResumes(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			st := openKind(t, k.kind)
			ctx := t.Context()
			if _, err := st.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "events"}); err != nil {
				t.Fatal(err)
			}
			appendN := func(from, n int) {
				for i := from; i < from+n; i++ {
					if err := st.AppendEvent(ctx, workspace.Event{Time: st.Now(), Name: "tick", TaskID: "t1", Attrs: map[string]string{"n": strconv.Itoa(i)}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			appendN(0, 3)
			srv := server(t, st, &httpauth.Gate{TrustLoopback: true})
			c := as(t, srv, "watcher")
			var before eventPage
			c.want(c.do("GET", "/api/v1/tasks/t1/events?limit=1000", nil), 200, "events").json(t, &before)
			n := len(before.Events)
			if n < 3 {
				t.Fatalf("%d events before the stream, want at least 3", n)
			}

			ch, cancel := openStream(t, srv.URL, -1)
			first := take(t, ch, n)
			cancel()
			appendN(3, 4) // while no client listens
			ch, cancel = openStream(t, srv.URL, first[len(first)-1].id)
			defer cancel()
			second := take(t, ch, 4)
			appendN(7, 2) // while it listens
			second = append(second, take(t, ch, 2)...)

			var all eventPage
			c.want(c.do("GET", "/api/v1/tasks/t1/events?limit=1000", nil), 200, "events").json(t, &all)
			got := append(first, second...)
			if len(all.Events) != len(got) {
				t.Fatalf("%d events in the store, %d received", len(all.Events), len(got))
			}
			for i, e := range all.Events {
				if got[i].id != e.End || got[i].name != e.Name {
					t.Fatalf("event %d received as id %d %s, stored as end %d %s", i, got[i].id, got[i].name, e.End, e.Name)
				}
			}
			for i := range 9 {
				if !strings.Contains(got[n-3+i].data, `"n":"`+strconv.Itoa(i)+`"`) {
					t.Fatalf("tick %d out of order: %s", i, got[n-3+i].data)
				}
			}
			select {
			case e := <-ch:
				t.Fatalf("an event more than the store holds: %+v", e)
			default:
			}
		})
	}
}

// TestStreamEndsWithItsToken: a stream opened with a token ends soon
// after the token is revoked.
func TestStreamEndsWithItsToken(t *testing.T) {
	st := newTreeStore(t)
	if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "events"}); err != nil {
		t.Fatal(err)
	}
	keeper, err := service.Tokens("test", st)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := tokens.Add(t.Context(), keeper, tokens.Grant{Agent: "watcher", Tasks: []string{"t1"}})
	if err != nil {
		t.Fatal(err)
	}
	watch := tokens.NewWatch(keeper, 20*time.Millisecond, quiet)
	defer watch.Close()
	srv := server(t, st, &httpauth.Gate{Keeper: keeper, Watch: watch})
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/tasks/t1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	if _, err := tokens.Revoke(t.Context(), keeper, "", "watcher"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream of a revoked token is still open after 30s")
	}
}

// TestEventsNameTheToken: a write through the API with a token names the
// token's id (never its secret) beside the agent in the events it
// appends, task and memory alike; a write without a token names none.
func TestEventsNameTheToken(t *testing.T) {
	st := newTreeStore(t)
	if _, err := st.CreateTask(t.Context(), workspace.NewTaskRequest{ID: "t1", Description: "events"}); err != nil {
		t.Fatal(err)
	}
	keeper, err := service.Tokens("test", st)
	if err != nil {
		t.Fatal(err)
	}
	tok, g, err := tokens.Add(t.Context(), keeper, tokens.Grant{Agent: "worker_1", Tasks: []string{"t1"}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		t.Fatal(err)
	}
	srv := server(t, st, &httpauth.Gate{Keeper: keeper, TrustLoopback: true})
	c := client{t: t, base: srv.URL, token: tok}
	c.want(c.do("PUT", "/api/v1/tasks/t1/env/k", map[string]any{"value": 1}), 200, "put with the token")
	c.want(c.do("PUT", itemPath("k", "a"), map[string]any{"value": map[string]any{}}), 200, "put an item with the token")
	cli := as(t, srv, "cli")
	cli.want(cli.do("PUT", "/api/v1/tasks/t1/env/k2", map[string]any{"value": 1}), 200, "put without a token")
	var page eventPage
	c.want(c.do("GET", "/api/v1/tasks/t1/events?limit=1000", nil), 200, "events").json(t, &page)
	var mem eventPage
	c.want(c.do("GET", "/api/v1/memory/events", nil), 200, "memory events").json(t, &mem)
	seen := map[string]string{}
	for _, e := range append(page.Events, mem.Events...) {
		if strings.Contains(e.Attrs[workspace.EventToken], tok) || strings.Contains(e.Attrs["agent"], tok) {
			t.Fatalf("an event holds the token's secret: %+v", e)
		}
		if e.Name == "env_stored" || e.Name == "memory_stored" {
			seen[e.Name+":"+e.Attrs["key"]] = e.Attrs[workspace.EventToken]
		}
	}
	want := map[string]string{"env_stored:k": g.ID(), "memory_stored:k": g.ID(), "env_stored:k2": ""}
	for k, v := range want {
		if got, ok := seen[k]; !ok || got != v {
			t.Errorf("%s names token %q, want %q (events %v)", k, got, v, seen)
		}
	}
}
