package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// A task's events, and the memory feed, two ways. Pollers ask for the events after a position
// (?after=N, 0 the start) and get the position to ask from next. A stream
// (Accept: text/event-stream) sends each event with its position as its
// id, so a client reconnecting with Last-Event-ID resumes exactly after
// the last event it got: positions are the store's, valid for good, and
// reading on from one never skips an event that commits later nor gives
// one twice (workspace.LiveReader). The stream reads on when the store
// says its task or memory changed (wake.go), and sends a comment every
// KeepAlive while idle.

// DefaultPollEvery is how often an open stream reads the events after its
// position where the store cannot say when they change.
const DefaultPollEvery = 250 * time.Millisecond

// eventPage is the cursor form's answer.
type eventPage struct {
	Events []workspace.PositionedEvent `json:"events"`
	Next   int64                       `json:"next"`
}

// after is where a read starts: Last-Event-ID, else ?after=N, else 0.
func (c *call) after() (int64, error) {
	v, what := c.r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, what = c.r.URL.Query().Get("after"), "parameter after"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, &workspace.Error{Kind: workspace.ErrInvalid, Op: what + " " + strconv.Quote(v), Msg: "not a position (a whole number from 0)",
			Hint: "send the id of the last event received, or the next of the last page"}
	}
	return n, nil
}

func (h *Handler) events(c *call) error {
	id, err := c.taskID()
	if err != nil {
		return err
	}
	pos, err := c.after()
	if err != nil {
		return err
	}
	f := func(ctx context.Context, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
		return h.st.ReadEventsFrom(ctx, id, pos, each)
	}
	if streaming(c.r) {
		return h.stream(c, f, pos, id, false)
	}
	return c.page(f, pos)
}

// memoryEvents is the memory feed (service.MemoryEvents: every put and
// delete of a namespaced item, with its namespace, key, agent and
// version, never the value) in the same two forms as a task's events.
// Who may read the global memory may read it.
func (h *Handler) memoryEvents(c *call) error {
	if err := c.mayGlobal(false); err != nil {
		return err
	}
	if err := h.memory(); err != nil {
		return err
	}
	pos, err := c.after()
	if err != nil {
		return err
	}
	f := func(ctx context.Context, pos int64, each func(workspace.PositionedEvent)) (int64, error) {
		return service.MemoryEvents(ctx, h.st, pos, each)
	}
	if streaming(c.r) {
		return h.stream(c, f, pos, "", true)
	}
	return c.page(f, pos)
}

// streaming says whether the client asks for a stream.
func streaming(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// feed reads a feed of events after a position (a task's, or memory's),
// calling each for every event, and returns the position to read from
// next.
type feed func(ctx context.Context, pos int64, each func(workspace.PositionedEvent)) (int64, error)

// page answers the cursor form: at most ?limit= events of f after pos.
func (c *call) page(f feed, pos int64) error {
	limit, err := c.intQuery("limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	page := eventPage{Events: []workspace.PositionedEvent{}, Next: pos}
	_, err = f(c.r.Context(), pos, func(e workspace.PositionedEvent) {
		if len(page.Events) < limit {
			page.Events = append(page.Events, e)
			page.Next = e.End
		}
	})
	if err != nil {
		return err
	}
	return c.reply(http.StatusOK, page)
}

// stream sends f's events after pos until the client goes or the server
// stops, reading again when the store says task (memory: the memory
// feed) changed (wake.go).
func (h *Handler) stream(c *call, f feed, pos int64, task string, memory bool) error {
	ctx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	// A stream ends when its token does.
	defer h.cfg.Gate.Hold(c.who, cancel)()
	wk, poll, leave := h.wakes.join(task, memory)
	defer leave()
	rc := http.NewResponseController(c.w)
	hd := c.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	fmt.Fprint(c.w, "retry: 2000\n\n")
	var tick <-chan time.Time
	if poll {
		t := time.NewTicker(h.cfg.PollEvery)
		defer t.Stop()
		tick = t.C
	}
	keepAlive := time.NewTicker(h.cfg.KeepAlive)
	defer keepAlive.Stop()
	for {
		next, err := f(ctx, pos, func(e workspace.PositionedEvent) {
			data, err := json.Marshal(e)
			if err != nil {
				return
			}
			fmt.Fprintf(c.w, "id: %d\nevent: %s\ndata: %s\n\n", e.End, sseField(e.Name), data)
		})
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("api: event stream ended", "task", task, "memory", memory, "err", err.Error())
			}
			return nil // the status is sent; the client reconnects
		}
		pos = next
		if err := rc.Flush(); err != nil {
			return nil
		}
		// Sleep until the store says something changed; an idle stream
		// gets only a keep-alive comment now and then.
		for woke := false; !woke; {
			select {
			case <-ctx.Done():
				return nil
			case <-tick:
				woke = true
			case <-wk.c:
				woke = true
				if tick == nil && h.wakes.polling() {
					t := time.NewTicker(h.cfg.PollEvery)
					defer t.Stop()
					tick = t.C
				}
			case <-keepAlive.C:
				fmt.Fprint(c.w, ": keep-alive\n\n")
				if err := rc.Flush(); err != nil {
					return nil
				}
			}
		}
	}
}

// sseField keeps a value on its line: an event name never holds a line
// break, but one that did would end the field early.
func sseField(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
