package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/httpauth"
	"github.com/workspaced/workspaced/internal/pgtest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// guardedOps are the requests a store may serve on a token's remembered
// grant (guardedRoutes), each writing or reading under namespace n.
var guardedOps = []struct {
	name, method, path string
	body               any
}{
	{"get", "GET", "/api/v1/memory/items?namespace=n&key=k", nil},
	{"put", "PUT", "/api/v1/memory/items?namespace=n&key=p", map[string]any{"value": map[string]any{"v": 2}}},
	{"batch", "POST", "/api/v1/memory/batch", map[string]any{"puts": []any{
		map[string]any{"namespace": []string{"n"}, "key": "b", "value": map[string]any{"v": 3}},
		map[string]any{"namespace": []string{"n"}, "key": "c", "value": map[string]any{"v": 4}},
	}}},
}

// TestRememberedGrantRefusedAtOnce: a token revoked, its rights changed
// or its expiry brought forward by another process (another Keeper on
// the same root), or its expiry reached, is refused on the very next
// request after requests that were served on its remembered grant — a
// get, a put and a batch alike — and a refused write writes nothing: no
// item, no version, no event. On the tree and SQLite every request looks
// the token up; on PostgreSQL the store finds the token's row changed,
// and the door looks it up and decides again.
func TestRememberedGrantRefusedAtOnce(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, root := openKindAt(t, k.kind)
			other, err := service.Open(ctx, root, service.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			keeper, err := service.Tokens("test", st)
			if err != nil {
				t.Fatal(err)
			}
			otherKeeper, err := service.Tokens("test", other)
			if err != nil {
				t.Fatal(err)
			}
			srv := server(t, st, &httpauth.Gate{Keeper: keeper})
			if _, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"n"}, Key: "k", Value: json.RawMessage(`{"v":1}`), Agent: "x"}); err != nil {
				t.Fatal(err)
			}
			// written is what the namespace holds: its items' versions
			// and the memory events but the probes'. A probe is an item
			// put now: once its event is read, so is every event of a
			// write before it (a reader on PostgreSQL waits for the
			// transactions running anywhere in the cluster).
			probes := 0
			written := func(t *testing.T) string {
				t.Helper()
				items, err := service.MemorySearch(ctx, st, workspace.MemorySearchRequest{Prefix: []string{"n"}, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				probes++
				probe := fmt.Sprint("probe", probes)
				if _, err := service.MemoryPut(ctx, st, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"probes"}, Key: probe, Value: json.RawMessage(`{}`), Agent: "x"}); err != nil {
					t.Fatal(err)
				}
				n := 0
				poll.Until(t, time.Minute, "the probe's event read", func() (bool, string) {
					n = 0
					seen := false
					_, err := service.MemoryEvents(ctx, st, 0, func(e workspace.PositionedEvent) {
						switch {
						case e.Event.Attrs["key"] == probe:
							seen = true
						case !strings.HasPrefix(e.Event.Attrs["key"], "probe"):
							n++
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					return seen, fmt.Sprintf("%d events read", n)
				})
				s := fmt.Sprintf("%d events;", n)
				for _, it := range items {
					s += fmt.Sprintf(" %s@%d", it.Key, it.Version)
				}
				return s
			}
			change := func(g tokens.Grant, f func(*tokens.Grant)) {
				err := otherKeeper.Update(ctx, "test", func(d *tokens.FileDoc) error {
					for i := range d.Tokens {
						if d.Tokens[i].SHA256 == g.SHA256 {
							f(&d.Tokens[i])
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			changes := []struct {
				name   string
				do     func(g tokens.Grant)
				status int
			}{
				{"revoked", func(g tokens.Grant) {
					if _, err := tokens.Revoke(ctx, otherKeeper, g.ID(), ""); err != nil {
						t.Fatal(err)
					}
				}, 401},
				{"rights taken", func(g tokens.Grant) { change(g, func(g *tokens.Grant) { g.GlobalMemory = tokens.GlobalNone }) }, 403},
				{"expiry brought forward", func(g tokens.Grant) {
					change(g, func(g *tokens.Grant) { g.ExpiresAt = g.CreatedAt.Add(time.Millisecond) })
				}, 401},
			}
			for _, ch := range changes {
				for _, op := range guardedOps {
					t.Run(ch.name+"/"+op.name, func(t *testing.T) {
						tok, g, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
						if err != nil {
							t.Fatal(err)
						}
						c := client{t: t, base: srv.URL, token: tok}
						for i := range 3 {
							c.want(c.do(op.method, op.path, op.body), 200, fmt.Sprintf("request %d before the change", i))
						}
						ch.do(g)
						before := written(t)
						c.want(c.do(op.method, op.path, op.body), ch.status, "the next request").problem(t)
						if after := written(t); after != before {
							t.Errorf("a refused %s wrote: %s, was %s", op.name, after, before)
						}
					})
				}
			}
			// Rights given are had on the next request too: a refusal
			// decided on a remembered grant is decided again on a
			// look-up.
			t.Run("rights given", func(t *testing.T) {
				tok, g, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalRead})
				if err != nil {
					t.Fatal(err)
				}
				c := client{t: t, base: srv.URL, token: tok}
				get, put := guardedOps[0], guardedOps[1]
				for range 2 {
					c.want(c.do(get.method, get.path, get.body), 200, "a get with read access")
				}
				c.want(c.do(put.method, put.path, put.body), 403, "a put with read access").problem(t)
				change(g, func(g *tokens.Grant) { g.GlobalMemory = tokens.GlobalWrite })
				c.want(c.do(put.method, put.path, put.body), 200, "a put once write access is given")
			})
			t.Run("expired", func(t *testing.T) {
				exp := keeper.Now().Add(1500 * time.Millisecond)
				tok, _, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite, ExpiresAt: exp})
				if err != nil {
					t.Fatal(err)
				}
				c := client{t: t, base: srv.URL, token: tok}
				for _, op := range guardedOps {
					c.want(c.do(op.method, op.path, op.body), 200, op.name+" before its expiry")
				}
				poll.Until(t, time.Minute, "the token's expiry", func() (bool, string) { return !keeper.Now().Before(exp), "" })
				before := written(t)
				for _, op := range guardedOps {
					c.want(c.do(op.method, op.path, op.body), 401, op.name+" past its expiry").problem(t)
				}
				if after := written(t); after != before {
					t.Errorf("refused writes wrote: %s, was %s", after, before)
				}
			})
		})
	}
}

// lookupOnly is a Keeper that remembers no grant: every request looks
// its token up, as before.
type lookupOnly struct{ tokens.Keeper }

// TestRememberedGrantOneRoundTrip: on PostgreSQL a token's get, put and
// batch served on its remembered grant are one transaction each on the
// database, where looking the token up makes two. Counted as
// pg_stat_database's xact_commit of a database of the test's own around
// the requests, each series against the same series of none (what the
// store's opening costs), the store closed each time so that its
// connections report what they did.
func TestRememberedGrantOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := pgtest.DB(t)
	if _, err := service.Init(ctx, root, service.Roles{}); err != nil {
		t.Fatal(err)
	}
	setup, err := service.Open(ctx, root, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keeper, err := service.Tokens("test", setup)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := tokens.Add(ctx, keeper, tokens.Grant{Agent: "w", Tasks: []string{tokens.AllTasks}, GlobalMemory: tokens.GlobalWrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := service.MemoryPut(ctx, setup, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"n"}, Key: "k", Value: json.RawMessage(`{"v":1}`), Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	commits := func() int64 { return pgtest.Commits(t, ctx, root) }
	series := func(remember bool, method, path string, body any, n int) int64 {
		before := commits()
		st, err := service.Open(ctx, root, service.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, err := service.Tokens("test", st)
		if err != nil {
			t.Fatal(err)
		}
		if !remember {
			k = lookupOnly{k}
		}
		srv := httptest.NewServer(New(Config{Store: st, Gate: &httpauth.Gate{Keeper: k}, Log: quiet}))
		c := client{t: t, base: srv.URL, token: tok}
		for range n + 1 { // the first looks the token up
			c.want(c.do(method, path, body), 200, path)
		}
		srv.Close()
		st.Close()
		return commits() - before
	}
	const n = 50
	// What opening the store and the first request cost, once for each
	// way: the first request of a series looks the token up either way.
	base := map[bool]int64{}
	for _, remember := range []bool{true, false} {
		op := guardedOps[0]
		base[remember] = series(remember, op.method, op.path, op.body, 0)
	}
	for _, op := range guardedOps {
		for _, remember := range []bool{true, false} {
			per := float64(series(remember, op.method, op.path, op.body, n)-base[remember]) / n
			t.Logf("%s, remembered %v: %.2f transactions a request", op.name, remember, per)
			switch {
			case remember && (per < 0.9 || per > 1.3):
				t.Errorf("a %s on the remembered grant: %.2f transactions, want 1", op.name, per)
			case !remember && per < 1.8:
				t.Errorf("a %s looking its token up: %.2f transactions, want 2", op.name, per)
			}
		}
	}
}
