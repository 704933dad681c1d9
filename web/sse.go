package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// Server-Sent Events. A task's stream sends every event of the task from
// a position on, each with the id "<task>:<end>" (the store's position
// just after it), so that a reconnecting browser's Last-Event-ID resumes
// exactly after the last event it got, from the store itself: nothing
// lost, nothing twice. Between events the stream sleeps on its hub
// channel; it wakes when the store reported the task changed, or for a
// keep-alive comment.

// wantsStream reports whether the client asked for text/event-stream.
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

type stream struct {
	w  io.Writer
	rc *http.ResponseController
}

func startStream(w http.ResponseWriter) *stream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := &stream{w: w, rc: http.NewResponseController(w)}
	fmt.Fprint(w, "retry: 2000\n\n")
	_ = st.flush()
	return st
}

// send writes one event; id may be "" (then the browser's last event id
// stays what it was).
func (st *stream) send(name, id string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	fmt.Fprintf(st.w, "event: %s\n", name)
	if id != "" {
		fmt.Fprintf(st.w, "id: %s\n", id)
	}
	fmt.Fprintf(st.w, "data: %s\n\n", b)
}

func (st *stream) ping() { fmt.Fprint(st.w, ": keep-alive\n\n") }

func (st *stream) flush() error { return st.rc.Flush() }

// EventsPage is GET /api/tasks/{id}/events as JSON: the events after a
// position, and the position to ask from next.
type EventsPage struct {
	Events []streamEvent `json:"events"`
	Next   int64         `json:"next"`
}

// startPosition is where a task's events are read from: the
// Last-Event-ID a reconnecting browser sends, else after=N, else 0.
func startPosition(r *http.Request, id string) (int64, error) {
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		t, end, ok := parseEventID(h)
		if !ok || t != id {
			return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "Last-Event-ID " + h, Msg: "not an event id of task " + id}
		}
		return end, nil
	}
	if a := r.URL.Query().Get("after"); a != "" {
		n, err := atoi64(a)
		if err != nil {
			return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: "parameter after", Msg: "want a position: a whole number, the next of an earlier answer"}
		}
		return n, nil
	}
	return 0, nil
}

func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request, id string) {
	pos, err := startPosition(r, id)
	if err != nil {
		fail(w, err)
		return
	}
	if !wantsStream(r) {
		p := EventsPage{Events: []streamEvent{}}
		p.Next, err = s.st.ReadEventsFrom(r.Context(), id, pos, func(e workspace.PositionedEvent) {
			p.Events = append(p.Events, streamEvent{ID: eventID(id, e.End), PositionedEvent: e})
		})
		if err != nil {
			fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, p)
		return
	}
	sub := s.hub.subscribe(id)
	defer s.hub.unsubscribe(sub)
	st := startStream(w)
	ctx := r.Context()
	read := true
	for {
		if read {
			next, err := s.st.ReadEventsFrom(ctx, id, pos, func(e workspace.PositionedEvent) {
				st.send("ev", eventID(id, e.End), streamEvent{ID: eventID(id, e.End), PositionedEvent: e})
			})
			if err != nil {
				st.send("fault", "", apiError{Error: err.Error(), Hint: workspace.HintOf(err)})
				_ = st.flush()
				return
			}
			pos = next
		}
		p, ok := s.next(ctx, st, sub)
		if !ok {
			return
		}
		read = len(p.tasks) > 0
		if read {
			// state.json, plan.json... may have changed without an event.
			st.send("changed", "", map[string]string{"task": id})
		}
	}
}

// allEvents is GET /api/events: JSON, or the stream of every task's new
// events ("ev", id "<task>:<end>") and of what changed ("task" with the
// task's new summary, "friction", "memory"). ?events=0 leaves the events
// out (the tasks page wants only the changes). A reconnecting stream
// resumes from its Last-Event-ID while the server still holds the events
// after it (the latest 4096); otherwise it gets a "reset" event and
// should read the state afresh.
func (s *Server) allEvents(w http.ResponseWriter, r *http.Request) {
	if !wantsStream(r) {
		s.allEventsJSON(w, r)
		return
	}
	withEvents := r.URL.Query().Get("events") != "0"
	last := r.Header.Get("Last-Event-ID")
	sub, missed, found := s.hub.subscribeSince(last, withEvents)
	defer s.hub.unsubscribe(sub)
	st := startStream(w)
	if last != "" && !found {
		st.send("reset", "", map[string]string{"reason": "the events after " + last + " are no longer held; read the state afresh"})
	}
	if withEvents {
		for _, e := range missed {
			st.send("ev", e.ID, e)
		}
	}
	ctx := r.Context()
	for {
		p, ok := s.next(ctx, st, sub)
		if !ok {
			return
		}
		if p.lost {
			st.send("reset", "", map[string]string{"reason": "this stream fell too far behind; read the state afresh"})
		}
		if withEvents {
			for _, e := range p.events {
				st.send("ev", e.ID, e)
			}
		}
		for _, t := range p.tasks {
			if sum, ok := s.index.get(t); ok {
				st.send("task", "", sum)
			} else {
				st.send("task", "", map[string]any{"id": t, "removed": true})
			}
		}
		if p.friction {
			st.send("friction", "", struct{}{})
		}
		if p.memory {
			st.send("memory", "", struct{}{})
		}
	}
}

// next sends what st holds, waits for sub's next wake-up and returns what
// it brought, after a ping when one was due; false once the client is
// gone.
func (s *Server) next(ctx context.Context, st *stream, sub *sub) (pending, bool) {
	if st.flush() != nil {
		return pending{}, false
	}
	select {
	case <-ctx.Done():
		return pending{}, false
	case <-sub.wake:
	}
	s.wakes.Add(1)
	p := sub.take()
	if p.ping {
		st.ping()
	}
	return p, true
}
