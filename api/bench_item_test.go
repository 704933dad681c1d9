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
func countingProxy(b *testing.B, root string) *proxy {
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
