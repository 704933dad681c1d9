package web

import (
	"strings"
	"sync"

	"github.com/workspaced/workspaced/workspace"
)

// The hub tells open streams what changed. It holds, for each stream, the
// set of changes it has not yet taken and a wake channel of capacity one:
// the watcher never blocks on a slow stream, and a stream that wakes takes
// everything that piled up at once. An idle stream is a goroutine parked
// on its channel: no timer, no polling.

// globalRing is how many of the latest events the hub keeps for the
// all-tasks stream to resume from.
const globalRing = 4096

type hub struct {
	mu   sync.Mutex
	subs map[*sub]struct{}
	// ring holds the latest events of every task, for /api/events
	// streams to resume from by their Last-Event-ID.
	ring []streamEvent
}

// streamEvent is one event as the streams send it: its id is
// "<task>:<end>", the store's position just after it among the task's
// events (a byte offset in events.log on a tree), which is where a stream
// resumes.
type streamEvent struct {
	ID string `json:"id"`
	workspace.PositionedEvent
}

// sub is one open stream.
type sub struct {
	task       string // "" for every task
	withEvents bool   // an all-tasks stream that sends events
	wake       chan struct{}

	mu       sync.Mutex
	tasks    map[string]bool // tasks changed since the stream last looked
	events   []streamEvent   // for an all-tasks stream: events not yet sent
	friction bool
	memory   bool
	ping     bool
	lost     bool // events overflowed: the stream must say so
}

// maxPending bounds the events an all-tasks stream may fall behind by;
// past it the stream is told it lost some (and to reload).
const maxPending = 8192

func newHub() *hub { return &hub{subs: map[*sub]struct{}{}} }

func (h *hub) subscribe(task string) *sub {
	s := &sub{task: task, wake: make(chan struct{}, 1), tasks: map[string]bool{}}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// change is what the watcher saw in one pass.
type change struct {
	tasks    map[string]bool
	events   []streamEvent // new events of every task, in the order read
	friction bool
	memory   bool
}

func (h *hub) publish(c change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring = append(h.ring, c.events...)
	if n := len(h.ring); n > globalRing {
		h.ring = append(h.ring[:0], h.ring[n-globalRing:]...)
	}
	for s := range h.subs {
		s.mu.Lock()
		woke := false
		if s.task == "" {
			for t := range c.tasks {
				s.tasks[t] = true
				woke = true
			}
			if len(c.events) > 0 && s.withEvents {
				if len(s.events)+len(c.events) > maxPending {
					s.lost, s.events = true, nil
				} else {
					s.events = append(s.events, c.events...)
				}
				woke = true
			}
			if c.friction || c.memory {
				s.friction = s.friction || c.friction
				s.memory = s.memory || c.memory
				woke = true
			}
		} else if c.tasks[s.task] {
			s.tasks[s.task] = true
			woke = true
		}
		s.mu.Unlock()
		if woke {
			s.poke()
		}
	}
}

// pingAll wakes every stream to send a keep-alive comment.
func (h *hub) pingAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.mu.Lock()
		s.ping = true
		s.mu.Unlock()
		s.poke()
	}
}

func (s *sub) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pending is what a stream takes when it wakes.
type pending struct {
	tasks    []string
	events   []streamEvent
	friction bool
	memory   bool
	ping     bool
	lost     bool
}

func (s *sub) take() pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pending{events: s.events, friction: s.friction, memory: s.memory, ping: s.ping, lost: s.lost}
	for t := range s.tasks {
		p.tasks = append(p.tasks, t)
	}
	s.tasks = map[string]bool{}
	s.events, s.friction, s.memory, s.ping, s.lost = nil, false, false, false, false
	return p
}

// eventID is the id a stream gives an event.
func eventID(task string, end int64) string {
	return task + ":" + itoa(end)
}

// parseEventID splits an id made by eventID.
func parseEventID(id string) (task string, end int64, ok bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return "", 0, false
	}
	n, err := atoi64(id[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return id[:i], n, true
}

// subscribeSince subscribes an all-tasks stream and, in the same step,
// returns the held events after the one with id last (none when last is
// ""), so that no event falls between the two.
func (h *hub) subscribeSince(last string, events bool) (s *sub, missed []streamEvent, found bool) {
	s = &sub{wake: make(chan struct{}, 1), tasks: map[string]bool{}, withEvents: events}
	h.mu.Lock()
	defer h.mu.Unlock()
	if last != "" {
		for i := len(h.ring) - 1; i >= 0; i-- {
			if h.ring[i].ID == last {
				missed, found = append([]streamEvent(nil), h.ring[i+1:]...), true
				break
			}
		}
	}
	h.subs[s] = struct{}{}
	return s, missed, found
}
