package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// A task's events, two ways. Pollers ask for the events after a position
// (?after=N, 0 the start) and get the position to ask from next. A stream
// (Accept: text/event-stream) sends each event with its position as its
// id, so a client reconnecting with Last-Event-ID resumes exactly after
// the last event it got: positions are the store's, valid for good, and
// reading on from one never skips an event that commits later nor gives
// one twice (workspace.LiveReader). The stream reads on every PollEvery
// and sends a comment every KeepAlive while idle.

// DefaultPollEvery is how often an open stream reads the events after its
// position.
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
	if strings.Contains(c.r.Header.Get("Accept"), "text/event-stream") {
		return h.stream(c, id, pos)
	}
	limit, err := c.intQuery("limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	page := eventPage{Events: []workspace.PositionedEvent{}, Next: pos}
	_, err = h.st.ReadEventsFrom(c.r.Context(), id, pos, func(e workspace.PositionedEvent) {
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

// stream sends task id's events after pos until the client goes or the
// server stops.
func (h *Handler) stream(c *call, id string, pos int64) error {
	ctx, cancel := context.WithCancel(c.r.Context())
	defer cancel()
	// A stream ends when its token does.
	defer h.cfg.Gate.Hold(c.who, cancel)()
	rc := http.NewResponseController(c.w)
	hd := c.w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	c.w.WriteHeader(http.StatusOK)
	fmt.Fprint(c.w, "retry: 2000\n\n")
	poll := time.NewTicker(h.cfg.PollEvery)
	defer poll.Stop()
	idle := time.Now()
	for {
		next, err := h.st.ReadEventsFrom(ctx, id, pos, func(e workspace.PositionedEvent) {
			data, err := json.Marshal(e)
			if err != nil {
				return
			}
			fmt.Fprintf(c.w, "id: %d\nevent: %s\ndata: %s\n\n", e.End, sseField(e.Name), data)
		})
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("api: event stream ended", "task", id, "err", err.Error())
			}
			return nil // the status is sent; the client reconnects
		}
		if next != pos {
			pos, idle = next, time.Now()
		} else if time.Since(idle) >= h.cfg.KeepAlive {
			fmt.Fprint(c.w, ": keep-alive\n\n")
			idle = time.Now()
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
		}
	}
}

// sseField keeps a value on its line: an event name never holds a line
// break, but one that did would end the field early.
func sseField(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
