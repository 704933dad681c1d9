package mcpserver

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/tokens"
)

// maxSessionHeap bounds the heap one open session may add, its client
// session in this process included: 256 KiB, 64 MiB for 256.
const maxSessionHeap = 256 << 10

// TestSessionsHeap opens 64 sessions over Streamable HTTP, each of which
// lists the tools, and measures the heap they hold (after a GC) against
// the heap before: a session holds its identity and its transport, not a
// server of its own. The bound is per session, as it was for 256
// (BenchmarkSessions opens 256): 64 measure the same.
func TestSessionsHeap(t *testing.T) {
	const n = 64
	added := sessionsHeap(t, n)
	t.Logf("%d sessions add %.1f MB of heap (%.1f KB each)", n, float64(added)/(1<<20), float64(added)/n/1024)
	if added > n*maxSessionHeap {
		t.Fatalf("%d sessions add %d bytes of heap, more than %d", n, added, n*maxSessionHeap)
	}
}

// BenchmarkSessions opens 256 sessions with the Go SDK client per
// iteration and reports the heap they add (MB_256_sessions).
func BenchmarkSessions(b *testing.B) {
	var added int64
	for b.Loop() {
		added = sessionsHeap(b, 256)
	}
	b.ReportMetric(float64(added)/(1<<20), "MB_256_sessions")
}

// sessionsHeap opens n sessions, each listing the tools, and returns the
// heap they add (after a collection).
func sessionsHeap(tb testing.TB, n int) int64 {
	// Room above n: the cap is not what is measured, and a client that
	// retries under load must not find it full.
	f := newHTTPFixture(tb, HTTPOptions{MaxSessions: 2 * n, SessionsPerToken: 2 * n})
	tok := f.token(tokens.Grant{Agent: "observer", Tasks: []string{"t1"}, May: allRights})
	// One session first, so that what every session shares is built.
	warm := f.mustConnect(tok, "")
	if _, err := warm.ListTools(context.Background(), nil); err != nil {
		tb.Fatal(err)
	}
	warm.Close()
	eventually(tb, "the first session to close", func() bool { return f.h.Sessions() == 0 })
	before := heap()
	sessions := make([]*mcp.ClientSession, 0, n)
	for range n {
		cs := f.mustConnect(tok, "")
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			tb.Fatal(err)
		}
		sessions = append(sessions, cs)
	}
	// Every client has its session, but the server counts a session from
	// the moment it reserves it to the moment the goroutine that waits
	// for its end releases it: on a loaded machine the count may lag the
	// clients for a moment. It settles at n, or the test fails.
	poll.Until(tb, 30*time.Second, fmt.Sprintf("%d sessions open", n), func() (bool, string) {
		got := f.h.Sessions()
		return got == n, fmt.Sprintf("%d open", got)
	})
	added := int64(heap()) - int64(before)
	runtime.KeepAlive(sessions)
	for _, cs := range sessions {
		cs.Close()
	}
	return added
}

// heap is the live heap after a collection.
func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
