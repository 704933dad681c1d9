package tokens

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of a Watch.
const (
	// DefaultWatchEvery is how often a Watch reads the grants while it
	// holds anything: a session of a token revoked, expired or rotated
	// past its overlap ends within this much and the time to close it.
	DefaultWatchEvery = 250 * time.Millisecond
	// UsageEvery is how precise a grant's LastUsedAt is: a server writes a
	// token's last use when the one kept is older than this, so a token in
	// constant use costs one write of the grants a minute.
	UsageEvery = time.Minute
)

// Watch follows the grants of a Keeper for a server that keeps sessions
// and streams open on tokens: each one held (Hold) is ended when its
// token ends — revoked, expired, or past the overlap of its rotation —
// and the tokens accepted (Used) have their LastUsedAt written. It reads
// the grants only while it holds something or has a use to write, from
// one goroutine that stops when there is nothing left; Close stops it for
// good. It is safe for concurrent use.
type Watch struct {
	k     Keeper
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	holds   map[string]map[uint64]func() // by token id
	next    uint64
	used    map[string]time.Time // last uses not yet written, by token id
	running bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewWatch is a Watch over k reading its grants every every
// (DefaultWatchEvery when 0); log gets the reads and writes that fail
// (slog.Default when nil).
func NewWatch(k Keeper, every time.Duration, log *slog.Logger) *Watch {
	if every <= 0 {
		every = DefaultWatchEvery
	}
	if log == nil {
		log = slog.Default()
	}
	return &Watch{k: k, every: every, log: log, holds: map[string]map[uint64]func(){}, used: map[string]time.Time{}, stop: make(chan struct{})}
}

// Hold calls end, once and from the watch's goroutine, when the token id
// ends; release forgets it (after release returns, end is called only if
// the watch had already found the token ended). end must not block for
// long: it closes what it holds.
func (w *Watch) Hold(id string, end func()) (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	n := w.next
	if w.holds[id] == nil {
		w.holds[id] = map[uint64]func(){}
	}
	w.holds[id][n] = end
	w.start()
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.holds[id], n)
		if len(w.holds[id]) == 0 {
			delete(w.holds, id)
		}
	}
}

// Used notes that g, as looked up, was accepted at at; its LastUsedAt is
// written soon when the one kept is older than UsageEvery.
func (w *Watch) Used(g Grant, at time.Time) {
	if at.Sub(g.LastUsedAt) < UsageEvery {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if at.After(w.used[g.ID()]) {
		w.used[g.ID()] = at
	}
	w.start()
}

// Close stops the watch, writing the uses noted; nothing held is ended.
func (w *Watch) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
	w.flush(context.Background())
}

// start runs the loop unless it runs; w.mu is held.
func (w *Watch) start() {
	if w.running || w.closed {
		return
	}
	w.running = true
	w.wg.Add(1)
	go w.loop()
}

// loop reads the grants every w.every while there is something to do.
func (w *Watch) loop() {
	defer w.wg.Done()
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*w.every+5*time.Second)
		w.flush(ctx)
		w.end(ctx)
		cancel()
		w.mu.Lock()
		if len(w.holds) == 0 && len(w.used) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// flush writes the last uses noted, in one update.
func (w *Watch) flush(ctx context.Context) {
	w.mu.Lock()
	used := w.used
	w.used = map[string]time.Time{}
	w.mu.Unlock()
	if len(used) == 0 {
		return
	}
	err := w.k.Update(ctx, "token use", func(d *FileDoc) error {
		for i, g := range d.Tokens {
			if at, ok := used[g.ID()]; ok && at.After(g.LastUsedAt) {
				d.Tokens[i].LastUsedAt = at.UTC().Truncate(time.Second)
			}
		}
		return nil
	})
	if err != nil {
		w.log.Warn("tokens: the last use of tokens was not written", "tokens", len(used), "reason", err.Error())
	}
}

// end calls the ends held for the tokens that have ended. When the
// grants cannot be read nothing is ended: every request is refused
// meanwhile by its own look-up.
func (w *Watch) end(ctx context.Context) {
	w.mu.Lock()
	if len(w.holds) == 0 {
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	grants, err := w.k.List(ctx)
	if err != nil {
		w.log.Warn("tokens: the grants could not be read to end the sessions of ended tokens", "reason", err.Error())
		return
	}
	now := w.k.Now()
	live := make(map[string]bool, len(grants))
	for _, g := range grants {
		if !g.Ended(now) {
			live[g.ID()] = true
		}
	}
	var ends []func()
	w.mu.Lock()
	for id, hs := range w.holds {
		if live[id] {
			continue
		}
		for _, end := range hs {
			ends = append(ends, end)
		}
		delete(w.holds, id)
	}
	w.mu.Unlock()
	for _, end := range ends {
		end()
	}
}
