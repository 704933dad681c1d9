package api

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
)

// TestItemRouteOneRoundTrip: on PostgreSQL a token's get, put, put with
// If-Match and batch of memory items, once its grant is remembered, each
// send PostgreSQL one message (a statement's Bind, Execute and Sync in
// one write): no transaction around the statement, no look-up, no
// statement prepared again. Counted at a proxy in front of the server.
func TestItemRouteOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgtest.Migrated(t, func(ctx context.Context, root string) error {
		_, err := service.Init(ctx, root, service.Roles{})
		return err
	})
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		t.Fatal(err)
	}
	px := countingProxy(t, root)
	st, err := service.Open(ctx, px.root, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keeper, err := service.Tokens("test", st)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		t.Fatal(err)
	}
	c := client{t: t, base: server(t, st, &httpauth.Gate{Keeper: keeper}).URL, token: tok}
	c.want(c.do("PUT", "/api/v1/memory/items?namespace=n&key=k", map[string]any{"value": map[string]any{"v": 1}}), 200, "the item")
	ops := append(guardedOps, struct {
		name, method, path string
		body               any
	}{"put with If-Match", "PUT", "/api/v1/memory/items?namespace=n&key=m", map[string]any{"value": map[string]any{"v": 5}}})
	const n = 40
	for _, op := range ops {
		send := func() {
			var hdr []string
			if op.name == "put with If-Match" {
				got := c.do("GET", op.path, nil)
				hdr = []string{"If-Match", got.header.Get("ETag")}
				if got.status == 404 {
					hdr = nil
				}
			}
			c.want(c.do(op.method, op.path, op.body, hdr...), 200, op.name)
		}
		for range 6 { // the grant remembered, the statement past its first plans
			send()
		}
		sent := px.sent.Load()
		for range n {
			send()
		}
		per := float64(px.sent.Load()-sent) / n
		if op.name == "put with If-Match" {
			per-- // its get
		}
		t.Logf("%s: %.3f round trips a request", op.name, per)
		// Besides: a token's last use, written once a minute, and a
		// connection idle over a second, pinged as the pool hands it out
		// (a stalled machine): two in n at most.
		if per < 1 || per > 1+2.5/n {
			t.Errorf("a %s: %.3f round trips to PostgreSQL a request, want 1", op.name, per)
		}
	}
}

// BenchmarkItemRoute: on PostgreSQL, a token's single GET and PUT of
// /api/v1/memory/items (a value of 1 KiB) through an httptest listener
// from a Go client, one after another: ns/op, allocs/op and the process's
// CPU an operation (cpu-µs/op: client and server in one process,
// getrusage; PostgreSQL's not), and round-trips/op: the messages the
// store's connections send PostgreSQL for 100 requests to a second
// listener whose store reaches the server through a counting proxy. Run
// it with
//
//	go test -run '^$' -bench ItemRoute -benchmem ./api/
func BenchmarkItemRoute(b *testing.B) {
	root := pgtest.Migrated(b, func(ctx context.Context, root string) error {
		_, err := service.Init(ctx, root, service.Roles{})
		return err
	})
	ctx := context.Background()
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		b.Fatal(err)
	}
	px := countingProxy(b, root)
	var tok string
	bases := map[string]string{}
	for name, at := range map[string]string{"direct": root, "counted": px.root} {
		st, err := service.Open(ctx, at, service.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		keeper, err := service.Tokens("bench", st)
		if err != nil {
			b.Fatal(err)
		}
		if tok == "" {
			if tok, _, err = tokens.Add(ctx, keeper, tokens.Grant{Agent: "bench", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalWrite}); err != nil {
				b.Fatal(err)
			}
		}
		bases[name] = server(b, st, &httpauth.Gate{Keeper: keeper}).URL + itemPath("k", "bench")
	}
	do := benchRequests(&http.Client{}, tok)
	value := map[string]any{"value": map[string]any{"text": strings.Repeat("x", 1000)}}
	for _, url := range bases {
		for range 10 { // the grant remembered, the statements prepared
			if err := do("PUT", url, value); err != nil {
				b.Fatal(err)
			}
			if err := do("GET", url, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, m := range []struct {
		name, method string
		body         any
	}{{"get", "GET", nil}, {"put", "PUT", value}} {
		b.Run(m.name, func(b *testing.B) {
			const counted = 100
			sent := px.sent.Load()
			for range counted {
				if err := do(m.method, bases["counted"], m.body); err != nil {
					b.Fatal(err)
				}
			}
			trips := float64(px.sent.Load()-sent) / counted
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				if err := do(m.method, bases["direct"], m.body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(trips, "round-trips/op")
		})
	}
}

// proxy forwards TCP connections to a PostgreSQL server and counts the
// client's writes: with pgx, which flushes a statement's messages at
// once, one a round trip.
type proxy struct {
	root string
	sent atomic.Int64
}

// countingProxy starts a proxy to root's server for the benchmark and
// returns it with root rewritten to reach the server through it: a Unix
// socket where root names one (pgtest's clusters), as the store would
// reach it.
func countingProxy(b testing.TB, root string) *proxy {
	b.Helper()
	u, err := url.Parse(root)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	network, target, ln := "tcp", u.Host, net.Listener(nil)
	if dir := q.Get("host"); strings.HasPrefix(dir, "/") {
		port := u.Port()
		if port == "" {
			port = "5432"
		}
		network, target = "unix", filepath.Join(dir, ".s.PGSQL."+port)
		mine, err := os.MkdirTemp("", "pgproxy")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(mine) })
		ln, err = net.Listen("unix", filepath.Join(mine, ".s.PGSQL."+port))
		if err != nil {
			b.Fatal(err)
		}
		q.Set("host", mine)
		u.RawQuery = q.Encode()
	} else if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	} else {
		u.Host = ln.Addr().String()
	}
	p := &proxy{}
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial(network, target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Go(func() { p.pipe(s, c, true); s.Close() })
			wg.Go(func() { p.pipe(c, s, false); c.Close() })
		}
	})
	p.root = u.String()
	return p
}

// pipe copies from src to dst, counting src's reads when count.
func (p *proxy) pipe(dst, src net.Conn, count bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if count {
				p.sent.Add(1)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
