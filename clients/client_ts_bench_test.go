package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sys/unix"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/pgtest"
)

// BenchmarkTypeScriptClientVsPostgresStore runs the TypeScript client's
// benchmark (clients/typescript/bench/bench.ts): on one PostgreSQL, a put
// and a get through the HTTP API from Node (WorkspacedStore, `serve
// --listen` on a workspace there) against LangGraph.js's PostgresStore
// in-process, side by side in one run, and 8 and 16 concurrent writers of
// each (ours with its puts coalesced into batch requests, the default, and
// with coalescing off); a put through MCP (`mcp --http` on the same
// workspace, the SDK's client) against the peer's put plus an MCP ping;
// and the floors of a request from Node (an HTTP round trip touching no
// store, an MCP ping).
// Run it with
//
//	go test -run '^$' -bench TypeScriptClientVsPostgresStore -benchtime 1x ./clients/
//
// (BENCH_TRANSPORT=fetch: the client through Node's fetch, not its own
// node:http; BENCH_TRANSPORT=both and -benchtime 4x: the two in turn;
// BENCH_IN_FLIGHT=1,2,4: the writers once more with each of these
// maxInFlight, in the logged result; BENCH_SERVE_PROFILE=FILE: the
// listener's CPU profile.)
//
// It reports the medians' ratios (ours ÷ PostgresStore's: below 1 is
// faster) and the rate ratios of 8 and 16 writers (above 1 is faster),
// 16 writers' also with coalescing off and the coalesced run's items per
// request, each beside its floor, the best the door itself allows measured
// in the same run: a put's floor is an HTTP round trip that touches no store
// plus the peer's own put, a get's that round trip alone (and with the
// peer's get added, the query any server in front of PostgreSQL makes),
// 16 writers' that many loops of such round trips at once; and, on
// Linux, the CPU a single get and put of ours costs Node, the listener
// and PostgreSQL. It reports too the MCP server's own CPU a put and a
// ping, and its peak resident set. And beside them a bare door (bareDoor:
// a Go server running the peer's own statements, nothing else), put and
// get through the same transport in the same alternation: its medians ÷
// the peer's (what any Go door in front of PostgreSQL costs) and ours ÷
// its (what is left to cut), with its CPU and PostgreSQL's a call. It
// logs the whole result.
func BenchmarkTypeScriptClientVsPostgresStore(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		optdep.Skip(b, "node", "node is not on PATH: the TypeScript client's benchmark cannot run")
	}
	if _, err := os.Stat(filepath.Join(tsPackageDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		optdep.Skipf(b, "node", "the benchmark's dependencies are not installed in %s: run npm ci there (.ci/run does)", tsPackageDir)
	}
	if out, err := buildTSPackage(); err != nil {
		b.Fatalf("building the TypeScript client: %v\n%s", err, out)
	}
	// The benchmark is compiled apart (its own tsconfig), so that the
	// client's suite does not need the benchmark's dependencies.
	tsc := exec.Command(node, "node_modules/typescript/bin/tsc", "-b", "tsconfig.bench.json")
	tsc.Dir, tsc.Env = tsPackageDir, clitest.CleanEnv()
	if out, err := tsc.CombinedOutput(); err != nil {
		b.Fatalf("building the benchmark: %v\n%s", err, out)
	}
	root := pgtest.Schema(b)
	db, err := url.Parse(root)
	if err != nil {
		b.Fatal(err)
	}
	q := db.Query()
	q.Del("schema")
	db.RawQuery = q.Encode()
	w := &ws{clitest.At(b, root)}
	w.Ok("init")
	w.Task("t1")
	tok := w.addToken("--agent", "bench", "--task", "t1", "--global-memory", "write")
	// The per-token rate limit (50 a second by default) would measure
	// itself: lifted, as for a trusted program with a token of its own.
	// BENCH_SERVE_PROFILE=FILE: the listener's CPU profile, written
	// there when the benchmark stops it.
	serveArgs := []string{"--rate", "100000", "--burst", "100000", "--address-rate", "100000", "--address-burst", "100000"}
	profile := os.Getenv("BENCH_SERVE_PROFILE")
	if profile != "" {
		serveArgs = append(serveArgs, "--cpu-profile", profile)
	}
	served, base := w.opsServe(serveArgs...)
	if profile != "" {
		defer served.Stop()
	}
	mcpURL, mcpd := w.Listen(reMCPServing, "mcp", "--http", "127.0.0.1:0", "--rate", "100000", "--burst", "100000")
	mcpPID := mcpd.Cmd.Process.Pid
	// The bare door on the same database, its table made by bench.ts.
	bareSchema := fmt.Sprintf("bare_door_%d", os.Getpid())
	bareURL := bareDoor(b, db.String(), bareSchema)
	// BENCH_TRANSPORT=fetch runs the client through fetch instead of its
	// own transport; =both alternates the two, one run each in turn (with
	// -benchtime 2x or more), on the same server.
	transports := []string{os.Getenv("BENCH_TRANSPORT")}
	if transports[0] == "both" {
		transports = []string{"", "fetch"}
	}
	for i := range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
		cmd := exec.CommandContext(ctx, node, "dist/bench/bench.js")
		cmd.Dir = tsPackageDir
		cmd.Env = append(clitest.CleanEnv(), "WORKSPACED_URL="+base[:len(base)-1], "WORKSPACED_TOKEN="+tok,
			"WORKSPACED_MCP_URL="+mcpURL, "BENCH_PG="+db.String(), "BENCH_TRANSPORT="+transports[i%len(transports)],
			"WORKSPACED_PID="+strconv.Itoa(served.Pid()),
			"BENCH_BARE_URL="+bareURL, "BENCH_BARE_SCHEMA="+bareSchema, "BENCH_BARE_PID="+strconv.Itoa(os.Getpid()))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cpu0 := processCPU(mcpPID)
		err := cmd.Run()
		cancel()
		mcpCPU := processCPU(mcpPID) - cpu0
		if err != nil {
			b.Fatalf("node bench.js: %v\n%s%s", err, out.String(), errOut.String())
		}
		var res struct {
			Ratios struct {
				Put     float64 `json:"put_median"`
				Get     float64 `json:"get_median"`
				Writers float64 `json:"writers_rate"`
				First   float64 `json:"writers_rate_first"`
				// Coalescing off (one PUT a put), and the coalesced run's
				// items per HTTP request.
				WritersSingle float64 `json:"writers_rate_single"`
				PerRequest    float64 `json:"writers_items_per_request"`
				MCP           float64 `json:"mcp_put_vs_peer_plus_ping"`
				// The floors: what the door alone allows, as the same ratio.
				PutFloor     float64 `json:"put_floor"`
				GetFloor     float64 `json:"get_floor"`
				WritersFloor float64 `json:"writers_floor_rate"`
				GetQuery     float64 `json:"get_floor_with_query"`
				// The bare door beside the peer, and ours beside it.
				BarePut   float64 `json:"bare_put_vs_peer"`
				BareGet   float64 `json:"bare_get_vs_peer"`
				PutVsBare float64 `json:"put_vs_bare"`
				GetVsBare float64 `json:"get_vs_bare"`
			} `json:"ratios"`
			// Each single call's CPU by process, µs (WORKSPACED_PID).
			CPU map[string]struct {
				Node     float64 `json:"node"`
				Server   float64 `json:"server"`
				Postgres float64 `json:"postgres"`
			} `json:"cpu_us_per_call"`
			MCP struct {
				Put struct {
					N int `json:"n"`
				} `json:"put"`
			} `json:"mcp"`
		}
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			b.Fatalf("bench.js printed %q: %v", out.String(), err)
		}
		b.Logf("%s", out.String())
		b.ReportMetric(res.Ratios.Put, "put-ratio")
		b.ReportMetric(res.Ratios.Get, "get-ratio")
		b.ReportMetric(res.Ratios.First, "writers8-ratio")
		b.ReportMetric(res.Ratios.Writers, "writers16-ratio")
		b.ReportMetric(res.Ratios.WritersSingle, "writers16-uncoalesced-ratio")
		b.ReportMetric(res.Ratios.PerRequest, "writers16-items/request")
		b.ReportMetric(res.Ratios.MCP, "mcp-put-vs-peer+ping")
		// The MCP server's own CPU and its peak resident set, on Linux:
		// it serves the warm-up's 50 puts and pings and the timed ones,
		// nothing else.
		if rss := peakRSS(mcpPID); rss > 0 {
			b.ReportMetric(float64(mcpCPU.Microseconds())/float64(res.MCP.Put.N+50), "mcp-server-cpu-µs/put+ping")
			b.ReportMetric(float64(rss)/(1<<20), "mcp-server-peak-rss-MB")
		}
		b.ReportMetric(res.Ratios.PutFloor, "put-floor-ratio")
		b.ReportMetric(res.Ratios.GetFloor, "get-floor-ratio")
		b.ReportMetric(res.Ratios.WritersFloor, "writers16-floor-ratio")
		b.ReportMetric(res.Ratios.GetQuery, "get-floor+query-ratio")
		b.ReportMetric(res.Ratios.BarePut, "bare-put-vs-peer")
		b.ReportMetric(res.Ratios.BareGet, "bare-get-vs-peer")
		b.ReportMetric(res.Ratios.PutVsBare, "put-vs-bare")
		b.ReportMetric(res.Ratios.GetVsBare, "get-vs-bare")
		for _, op := range []string{"get", "put"} {
			c := res.CPU[op+"_ours"]
			b.ReportMetric(c.Node, op+"-node-cpu-µs")
			b.ReportMetric(c.Server, op+"-server-cpu-µs")
			b.ReportMetric(c.Postgres, op+"-postgres-cpu-µs")
			c = res.CPU[op+"_bare"]
			b.ReportMetric(c.Server, op+"-bare-door-cpu-µs")
			b.ReportMetric(c.Postgres, op+"-bare-postgres-cpu-µs")
		}
	}
}

// reMCPServing finds the URL `mcp --http` prints when it serves.
var reMCPServing = regexp.MustCompile(`serving (https?://[^ ]+/mcp)`)

// processCPU is the CPU time process pid has used so far, user and
// system, all its threads: its CPU clock (clock_getcpuclockid(3), Linux's
// encoding); 0 where it cannot be read.
func processCPU(pid int) time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(int32((^pid)<<3|2), &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// peakRSS is the peak resident set of process pid, in bytes (VmHWM of
// Linux's /proc); 0 where it cannot be read.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// bareDoor starts the least a door in front of PostgreSQL could be and
// returns its URL: a net/http server with one pgx pool on dsn, whose
// handlers run PostgresStore's own statements on a table of its shape in
// schema (made by bench.ts through the peer's own setup before the door's
// first request): PUT /items/{ns}/{key} the peer's upsert of the body as
// it came, GET the peer's select, answering the item's value as stored
// (404 for none). No token, no event, no JSON read or written: 200 and a
// small body. It serves from this process: like the listener, a process
// apart from Node and PostgreSQL, built by the same compiler with the same
// GOMAXPROCS, and this process does nothing else while Node runs.
func bareDoor(b *testing.B, dsn, schema string) string {
	b.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	// As crud-operations.js of @langchain/langgraph-checkpoint-postgres
	// sends them, with its schema's name.
	upsert := fmt.Sprintf(`INSERT INTO "%s".store (namespace_path, key, value, expires_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT (namespace_path, key)
DO UPDATE SET value = $3, expires_at = $4, updated_at = CURRENT_TIMESTAMP`, schema)
	get := fmt.Sprintf(`SELECT namespace_path, key, value, created_at, updated_at
FROM "%s".store
WHERE namespace_path = $1 AND key = $2
  AND (expires_at IS NULL OR expires_at > CURRENT_TIMESTAMP)`, schema)
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /items/{ns}/{key}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			// A string goes to jsonb as the JSON text it is; no expiry.
			_, err = pool.Exec(r.Context(), upsert, r.PathValue("ns"), r.PathValue("key"), string(body), nil)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("GET /items/{ns}/{key}", func(w http.ResponseWriter, r *http.Request) {
		var ns, key string
		var value []byte
		var created, updated *time.Time
		err := pool.QueryRow(r.Context(), get, r.PathValue("ns"), r.PathValue("key")).Scan(&ns, &key, &value, &created, &updated)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			http.NotFound(w, r)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(value)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
