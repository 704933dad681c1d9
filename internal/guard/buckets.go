package guard

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// maxKeys bounds the buckets kept at once: past it, the requests of keys
// not seen yet share one bucket, so that a flood from many addresses
// costs a bounded memory (and those keys are limited together).
const maxKeys = 1 << 16

// overflow is the key of that shared bucket.
const overflow = "overflow"

// buckets are token buckets (golang.org/x/time/rate) by key. A bucket
// unused for as long as it takes to fill up again is as good as a new
// one: it is dropped at the next sweep, so the map holds only the keys
// active lately.
type buckets struct {
	rate  rate.Limit
	burst int
	idle  time.Duration

	mu    sync.Mutex
	m     map[string]*bucket
	swept time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newBuckets(perSecond float64, burst int) *buckets {
	refill := time.Duration(float64(burst) / perSecond * float64(time.Second))
	return &buckets{rate: rate.Limit(perSecond), burst: burst, idle: max(time.Minute, refill), m: map[string]*bucket{}}
}

// take spends one request of key's bucket at now: ok, or how long until
// one is there again.
func (b *buckets) take(key string, now time.Time) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.swept) >= b.idle {
		b.sweep(now)
	}
	e := b.m[key]
	if e == nil {
		if len(b.m) >= maxKeys {
			key = overflow
			e = b.m[key]
		}
		if e == nil {
			e = &bucket{lim: rate.NewLimiter(b.rate, b.burst)}
			b.m[key] = e
		}
	}
	e.last = now
	if e.lim.AllowN(now, 1) {
		return 0, true
	}
	res := e.lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	res.CancelAt(now)
	return wait, false
}

// sweep drops the buckets unused for idle: they are full again.
func (b *buckets) sweep(now time.Time) {
	b.swept = now
	for k, e := range b.m {
		if now.Sub(e.last) >= b.idle {
			delete(b.m, k)
		}
	}
}

// len is the number of buckets kept.
func (b *buckets) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// counts are how many of something (live streams) each key holds now.
type counts struct {
	mu sync.Mutex
	m  map[string]int
}

func newCounts() *counts { return &counts{m: map[string]int{}} }

// acquire takes one for key unless it holds limit already.
func (c *counts) acquire(key string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[key] >= limit {
		return false
	}
	c.m[key]++
	return true
}

// release gives one of key's back.
func (c *counts) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[key]--; c.m[key] <= 0 {
		delete(c.m, key)
	}
}

// Counter counts what each token holds at once against a limit: the MCP
// server's sessions. It is safe for concurrent use.
type Counter struct {
	limit int
	c     *counts
}

// NewCounter is a Counter allowing limit per token.
func NewCounter(limit int) *Counter { return &Counter{limit: limit, c: newCounts()} }

// Acquire takes one for who unless it holds the limit already; release
// it with Release.
func (c *Counter) Acquire(who string) bool { return c.c.acquire(who, c.limit) }

// Release gives one of who's back.
func (c *Counter) Release(who string) { c.c.release(who) }

// Limit is the most one token may hold.
func (c *Counter) Limit() int { return c.limit }
