package guard

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// clock is a time tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type refusals struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *refusals) Refused(limit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[limit]++
}

func (r *refusals) get(limit string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[limit]
}

// syncBuf is a log written from the requests' goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// tokenIdentify takes "Bearer good-X" as the valid token X.
func tokenIdentify(r *http.Request) (string, bool) {
	t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer good-")
	return t, ok
}

type fixture struct {
	log   *syncBuf
	srv   *httptest.Server
	clk   *clock
	obs   *refusals
	g     *Guard
	block chan struct{} // a stream's handler waits on it
}

func newFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	f := &fixture{clk: &clock{t: time.Unix(1_700_000_000, 0)}, obs: &refusals{n: map[string]int{}}, block: make(chan struct{})}
	f.log = &syncBuf{}
	opt.Now, opt.Observer, opt.Log = f.clk.now, f.obs, slog.New(slog.NewTextHandler(f.log, nil))
	if opt.Identify == nil {
		opt.Identify = tokenIdentify
	}
	g, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	f.g = g
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/401", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	})
	mux.HandleFunc("/401-own", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
		http.Error(w, "no", http.StatusUnauthorized)
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		select {
		case <-f.block:
		case <-r.Context().Done():
		}
	})
	f.srv = httptest.NewServer(g.Wrap(mux))
	t.Cleanup(func() {
		close(f.block)
		f.srv.Close()
	})
	return f
}

func (f *fixture) do(t *testing.T, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp
}

// burstOf sends n requests with hdr and counts the answers by status.
func (f *fixture) burstOf(t *testing.T, n int, hdr map[string]string) map[int]int {
	t.Helper()
	codes := map[int]int{}
	for range n {
		codes[f.do(t, http.MethodGet, "/", hdr).StatusCode]++
	}
	return codes
}

// TestTokenRate: a token that floods gets its burst, then 429 with
// Retry-After, while another token and a client without one are served;
// its bucket refills with time.
func TestTokenRate(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{Rate: 2, Burst: 5}})
	runaway := map[string]string{"Authorization": "Bearer good-runaway"}
	if got := f.burstOf(t, 8, runaway); got[200] != 5 || got[429] != 3 {
		t.Fatalf("the runaway token: %v, want 5 × 200 and 3 × 429", got)
	}
	resp := f.do(t, http.MethodGet, "/", runaway)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("over the limit: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := f.burstOf(t, 5, map[string]string{"Authorization": "Bearer good-other"}); got[200] != 5 {
		t.Fatalf("another token: %v", got)
	}
	if got := f.burstOf(t, 5, nil); got[200] != 5 {
		t.Fatalf("no token: %v", got)
	}
	f.clk.add(time.Second) // two more
	if got := f.burstOf(t, 3, runaway); got[200] != 2 || got[429] != 1 {
		t.Fatalf("a second later: %v, want 2 × 200", got)
	}
	if n := f.obs.get(LimitRate); n != 5 {
		t.Errorf("%d refusals observed, want 5", n)
	}
	// One line for the runaway's refusals of the first second, one for
	// those of the next minute.
	if got := strings.Count(f.log.String(), "limit=token_rate who=\"token runaway\""); got != 1 {
		t.Errorf("%d log lines for the runaway's refusals, want 1:\n%s", got, f.log)
	}
	f.clk.add(time.Minute)
	f.burstOf(t, 200, runaway)
	if got := strings.Count(f.log.String(), "limit=token_rate"); got != 2 {
		t.Errorf("%d log lines after a minute more, want 2:\n%s", got, f.log)
	}
}

// TestListenersCountApart: each guard (one a listener: serve --listen,
// web, mcp --http) keeps its own counts in its own process, as
// docs/SECURITY.md says: a token held back by one listener is served its
// whole burst by another, so a runaway token that reaches k listeners
// gets k times the limits.
func TestListenersCountApart(t *testing.T) {
	web := newFixture(t, Options{Limits: Limits{Rate: 2, Burst: 5}})
	mcp := newFixture(t, Options{Limits: Limits{Rate: 2, Burst: 5}})
	runaway := map[string]string{"Authorization": "Bearer good-runaway"}
	if got := web.burstOf(t, 8, runaway); got[200] != 5 || got[429] != 3 {
		t.Fatalf("on the first listener: %v, want 5 × 200 and 3 × 429", got)
	}
	if got := mcp.burstOf(t, 8, runaway); got[200] != 5 || got[429] != 3 {
		t.Fatalf("on the second listener: %v, want its own 5 × 200 and 3 × 429", got)
	}
}

// TestAddressRate: requests without a valid token — none, or wrong ones
// each different — count against their address; a valid token is not
// held back by them.
func TestAddressRate(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{AddressRate: 1, AddressBurst: 10}})
	codes := map[int]int{}
	for i := range 30 {
		codes[f.do(t, http.MethodGet, "/", map[string]string{"Authorization": fmt.Sprintf("Bearer wrong-%d", i)}).StatusCode]++
	}
	if codes[200] != 10 || codes[429] != 20 {
		t.Fatalf("30 wrong tokens: %v, want 10 × 200 and 20 × 429", codes)
	}
	resp := f.do(t, http.MethodGet, "/", nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("no token after them: %d", resp.StatusCode)
	}
	if got := f.burstOf(t, 10, map[string]string{"Authorization": "Bearer good-agent"}); got[200] != 10 {
		t.Fatalf("a valid token from the same address: %v", got)
	}
	if n := f.obs.get(LimitAddressRate); n != 21 {
		t.Errorf("%d refusals observed, want 21", n)
	}
}

// TestOpenPaths: the health endpoints are never limited.
func TestOpenPaths(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{AddressRate: 1, AddressBurst: 1}, Open: []string{"/healthz"}})
	for range 5 {
		if c := f.do(t, http.MethodGet, "/healthz", nil).StatusCode; c != 200 {
			t.Fatalf("/healthz: %d", c)
		}
	}
}

// TestStreams: a token holds at most Streams live streams; the next is
// refused while others' are not; a stream ended frees its place.
func TestStreams(t *testing.T) {
	f := newFixture(t, Options{Limits: Limits{Streams: 2}})
	sse := func(who string) map[string]string {
		return map[string]string{"Authorization": "Bearer good-" + who, "Accept": "text/event-stream"}
	}
	var open []*http.Response
	for range 2 {
		resp := f.do(t, http.MethodGet, "/events", sse("a"))
		if resp.StatusCode != 200 {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		open = append(open, resp)
	}
	if resp := f.do(t, http.MethodGet, "/events", sse("a")); resp.StatusCode != 429 {
		t.Fatalf("a third stream: %d, want 429", resp.StatusCode)
	}
	other := f.do(t, http.MethodGet, "/events", sse("b"))
	if other.StatusCode != 200 {
		t.Fatalf("another token's stream: %d", other.StatusCode)
	}
	other.Body.Close()
	if c := f.do(t, http.MethodGet, "/", map[string]string{"Authorization": "Bearer good-a"}).StatusCode; c != 200 {
		t.Fatalf("a plain request of the token with its streams full: %d", c)
	}
	open[0].Body.Close()
	poll.Until(t, 30*time.Second, "the closed stream's place is freed", func() (bool, string) {
		resp := f.do(t, http.MethodGet, "/events", sse("a"))
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	open[1].Body.Close()
	if n := f.obs.get(LimitStreams); n < 1 {
		t.Errorf("no refusal observed")
	}
}

// TestOrigin: another origin is refused on what changes something and on
// every request of an AllMethods path; no Origin, the same origin and a
// trusted one pass; a page followed from a link elsewhere opens.
func TestOrigin(t *testing.T) {
	f := newFixture(t, Options{AllMethods: []string{"/mcp"}, Origins: []string{"https://trusted.example"}})
	host := strings.TrimPrefix(f.srv.URL, "http://")
	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
		want               int
	}{
		{"post without origin", "POST", "/act", nil, 200},
		{"post same origin", "POST", "/act", map[string]string{"Origin": "http://" + host}, 200},
		{"post other origin", "POST", "/act", map[string]string{"Origin": "http://evil.example"}, 403},
		{"post null origin", "POST", "/act", map[string]string{"Origin": "null"}, 403},
		{"post cross-site fetch", "POST", "/act", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"post same-origin fetch", "POST", "/act", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host}, 200},
		{"post trusted origin", "POST", "/act", map[string]string{"Origin": "https://trusted.example"}, 200},
		{"get page from elsewhere", "GET", "/tasks", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 200},
		{"mcp get other origin", "GET", "/mcp", map[string]string{"Origin": "http://evil.example"}, 403},
		{"mcp post other origin", "POST", "/mcp", map[string]string{"Origin": "http://evil.example"}, 403},
		{"mcp post no origin", "POST", "/mcp", nil, 200},
		{"delete other origin", "DELETE", "/mcp", map[string]string{"Origin": "http://evil.example"}, 403},
	} {
		if got := f.do(t, c.method, c.path, c.hdr).StatusCode; got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if n := f.obs.get(LimitOrigin); n != 6 {
		t.Errorf("%d origin refusals observed, want 6", n)
	}
	if _, err := New(Options{Origins: []string{"trusted.example"}}); err == nil {
		t.Errorf("an origin without a scheme was taken")
	}
}

// TestChallenge: a 401 of any handler behind the guard carries the
// bearer challenge, with error= when a token was sent.
func TestChallenge(t *testing.T) {
	f := newFixture(t, Options{ResourceMetadata: "https://h.example/.well-known/oauth-protected-resource"})
	for _, c := range []struct {
		auth, want string
	}{
		{"", `Bearer realm="workspaced", resource_metadata="https://h.example/.well-known/oauth-protected-resource"`},
		{"Bearer nope", `Bearer realm="workspaced", error="invalid_token"`},
		{"Basic eDp5", `Bearer realm="workspaced", error="invalid_request"`},
	} {
		resp := f.do(t, http.MethodGet, "/401", map[string]string{"Authorization": c.auth})
		got := resp.Header.Values("WWW-Authenticate")
		if resp.StatusCode != 401 || len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
			t.Errorf("Authorization %q: %d %q, want %q", c.auth, resp.StatusCode, got, c.want)
		}
	}
	if h := f.do(t, http.MethodGet, "/401-own", nil).Header.Values("WWW-Authenticate"); len(h) != 1 || h[0] != `Bearer error="insufficient_scope"` {
		t.Errorf("a handler's own challenge became %q", h)
	}
	if h := f.do(t, http.MethodGet, "/", nil).Header.Get("WWW-Authenticate"); h != "" {
		t.Errorf("a 200 with a challenge: %q", h)
	}
}

// TestClientAddress: the address a request counts under — a trusted
// proxy's X-Forwarded-For, an IPv6 address's /64.
func TestClientAddress(t *testing.T) {
	p, err := newProxies([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ remote, xff, want string }{
		{"192.0.2.7:5000", "", "192.0.2.7"},
		{"192.0.2.7:5000", "203.0.113.9", "192.0.2.7"}, // not a proxy: its header is not believed
		{"10.1.2.3:5000", "203.0.113.9", "203.0.113.9"},
		{"10.1.2.3:5000", "198.51.100.1, 203.0.113.9, 10.9.9.9", "203.0.113.9"},
		{"10.1.2.3:5000", "junk", "10.1.2.3"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64"},
		{"[::1]:80", "2001:db8::1", "2001:db8::/64"},
		{"[::ffff:192.0.2.7]:80", "", "192.0.2.7"},
	} {
		r := &http.Request{RemoteAddr: c.remote, Header: http.Header{}}
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := p.client(r); got != c.want {
			t.Errorf("%s via %q: %q, want %q", c.remote, c.xff, got, c.want)
		}
	}
	if _, err := newProxies([]string{"not-an-address"}); err == nil {
		t.Errorf("a bad proxy was taken")
	}
}

// TestBucketsBounded: buckets full again are dropped, and past maxKeys
// new keys share one.
func TestBucketsBounded(t *testing.T) {
	b := newBuckets(10, 10)
	now := time.Unix(0, 0)
	for i := range maxKeys + 5 {
		b.take(fmt.Sprint(i), now)
	}
	if n := b.len(); n != maxKeys+1 {
		t.Fatalf("%d buckets, want %d (the shared one included)", n, maxKeys+1)
	}
	b.take("late", now.Add(2*time.Minute))
	if n := b.len(); n != 1 {
		t.Fatalf("%d buckets after they were all idle, want 1", n)
	}
}
