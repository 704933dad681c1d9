package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// panel is a workspace tree served by a Server, through its Store, over a
// real listener.
type panel struct {
	t   *testing.T
	ws  *files.Store
	s   *Server
	srv *httptest.Server
}

func newPanel(t *testing.T, cfg Config) *panel {
	t.Helper()
	ws, err := files.Init(filepath.Join(t.TempDir(), "ws"), workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return servePanel(t, ws, cfg)
}

func servePanel(t *testing.T, ws *files.Store, cfg Config) *panel {
	t.Helper()
	cfg.Store = ws
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.BaseContext = func(_ net.Listener) context.Context { return ctx }
	srv.Start()
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run ended before it was ready: %v", err)
	}
	return &panel{t: t, ws: ws, s: s, srv: srv}
}

// startDaemon runs the daemon of ws's root until the test ends.
func startDaemon(t *testing.T, ws *files.Store) {
	t.Helper()
	servetest.StartTree(t, ws.Dir(), 100*time.Millisecond, daemon.Config{Rescan: time.Hour})
}

// resp is an answer read whole.
type resp struct {
	code int
	h    http.Header
	body string
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, r.body)
	}
}

// do sends a request; hdr holds extra headers.
func (p *panel) do(c *http.Client, method, path, body string, hdr map[string]string) resp {
	p.t.Helper()
	if c == nil {
		c = p.srv.Client()
	}
	req, err := http.NewRequest(method, p.srv.URL+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		}
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{code: res.StatusCode, h: res.Header, body: string(b)}
}

func (p *panel) get(path string) resp { return p.do(nil, "GET", path, "", nil) }

// browser is a client with a cookie jar that has loaded a page, so it
// holds the csrf cookie; csrf is the token the page carried.
type browser struct {
	c    *http.Client
	csrf string
}

func (p *panel) browser() *browser {
	p.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := *p.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	b := &browser{c: &c}
	r := p.do(&c, "GET", "/api/csrf", "", nil)
	var tok struct{ Token string }
	r.json(p.t, &tok)
	b.csrf = tok.Token
	return b
}

func (p *panel) post(b *browser, path, body string) resp {
	p.t.Helper()
	return p.do(b.c, "POST", path, body, map[string]string{csrfHeader: b.csrf})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sseEvent is one event read from a stream.
type sseEvent struct{ name, id, data string }

// openStream opens an event stream and returns a channel of its events.
func (p *panel) openStream(ctx context.Context, path string, hdr map[string]string) <-chan sseEvent {
	p.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.srv.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := p.srv.Client().Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		p.t.Fatalf("stream %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 1024)
	go func() {
		defer res.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return out
}
