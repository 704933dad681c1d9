package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/retention"
	"github.com/workspaced/workspaced/workspace"
)

// The namespaced memory parts: every store is a workspace.MemoryStore
// and keeps the rules of workspace/memory.go.

func memoryOf(t *testing.T, s workspace.Store) workspace.MemoryStore {
	t.Helper()
	m, has := workspace.As[workspace.MemoryStore](s)
	if !has {
		t.Fatalf("%T is no workspace.MemoryStore: every store keeps namespaced memory", s)
	}
	return m
}

func put(t *testing.T, m workspace.MemoryStore, ns workspace.Namespace, key, value string) workspace.MemoryItem {
	t.Helper()
	it, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: key, Value: json.RawMessage(value), Agent: "po"})
	ok(t, err, fmt.Sprintf("put %s %q", ns, key))
	return it
}

// names lists items as "<namespace>/<key>" for comparing.
func names(items []workspace.MemoryItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, strings.Join(it.Namespace, ",")+"/"+it.Key)
	}
	return out
}

func search(t *testing.T, m workspace.MemoryStore, req workspace.MemorySearchRequest) []string {
	t.Helper()
	items, err := m.SearchMemory(bg, req)
	ok(t, err, "search")
	return names(items)
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func filterOf(t *testing.T, s workspace.Store, f string) workspace.MemoryFilter {
	t.Helper()
	mf, err := workspace.ParseMemoryFilter([]byte(f), s.Settings().Limits)
	ok(t, err, "filter "+f)
	return mf
}

func testMemory(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	first := put(t, m, workspace.Namespace{"a", "b"}, "k", `{"n": 1}`)
	if first.Version != 1 || first.ExpiresAt != nil || !first.CreatedAt.Equal(first.UpdatedAt) || string(first.Value) != `{"n":1}` {
		t.Fatalf("first put: %+v", first)
	}
	second := put(t, m, workspace.Namespace{"a", "b"}, "k", `{"n":2,"kind":"note"}`)
	if second.Version != 2 || !second.CreatedAt.Equal(first.CreatedAt) || second.UpdatedAt.Before(first.UpdatedAt) {
		t.Fatalf("second put: %+v after %+v", second, first)
	}
	got, err := m.GetMemory(bg, workspace.Namespace{"a", "b"}, "k")
	ok(t, err, "get")
	if got.Version != 2 || string(got.Value) != `{"n":2,"kind":"note"}` || !got.CreatedAt.Equal(first.CreatedAt) || !got.UpdatedAt.Equal(second.UpdatedAt) {
		t.Fatalf("get: %+v, want %+v", got, second)
	}
	// Siblings, prefixes and non-ASCII labels and keys.
	put(t, m, workspace.Namespace{"a", "bc"}, "k", `{"n":3}`)
	put(t, m, workspace.Namespace{"a", "b", "c"}, "k", `{"n":4,"kind":"note"}`)
	put(t, m, workspace.Namespace{"a"}, "k", `{"n":5}`)
	put(t, m, workspace.Namespace{"a", "b"}, "é", `{"n":6,"kind":"todo"}`)
	put(t, m, workspace.Namespace{"ユーザー", "ü ß"}, "clé 🔑", `{"n":7}`)
	put(t, m, workspace.Namespace{"a!"}, "k", `{"n":8}`)
	same(t, "search under [a b]", search(t, m, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"a", "b"}}),
		[]string{"a,b/k", "a,b/é", "a,b,c/k"})
	same(t, "search everything", search(t, m, workspace.MemorySearchRequest{Limit: 100}),
		[]string{"a/k", "a,b/k", "a,b/é", "a,b,c/k", "a,bc/k", "a!/k", "ユーザー,ü ß/clé 🔑"})
	same(t, "search under [a b c d]", search(t, m, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"a", "b", "c", "d"}}), []string{})
	same(t, "search under [ユーザー]", search(t, m, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"ユーザー"}}), []string{"ユーザー,ü ß/clé 🔑"})
	// Filters.
	for _, c := range []struct{ filter, want string }{
		{`{"kind":"note"}`, `["a,b/k","a,b,c/k"]`},
		{`{"n":{"$gte":4,"$lt":7}}`, `["a/k","a,b/é","a,b,c/k"]`},
		{`{"kind":{"$ne":"note"}}`, `["a/k","a,b/é","a,bc/k","a!/k","ユーザー,ü ß/clé 🔑"]`},
		{`{"n":{"$gt":"3"}}`, `[]`},
		{`{"kind":{"$gt":"note"}}`, `["a,b/é"]`},
		{`{"n":2.0}`, `["a,b/k"]`},
	} {
		got := search(t, m, workspace.MemorySearchRequest{Filter: filterOf(t, s, c.filter), Limit: 100})
		b, _ := json.Marshal(got)
		if string(b) != c.want {
			t.Fatalf("filter %s: got %s, want %s", c.filter, b, c.want)
		}
	}
	same(t, "filtered page", search(t, m, workspace.MemorySearchRequest{Filter: filterOf(t, s, `{"kind":{"$ne":"note"}}`), Limit: 2, Offset: 2}),
		[]string{"a,bc/k", "a!/k"})
	// Pagination.
	for i := range 25 {
		put(t, m, workspace.Namespace{"page"}, fmt.Sprintf("k%02d", i), `{}`)
	}
	same(t, "default limit", len(search(t, m, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"page"}})), workspace.DefaultSearchLimit)
	same(t, "last page", search(t, m, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"page"}, Limit: 10, Offset: 20}),
		[]string{"page/k20", "page/k21", "page/k22", "page/k23", "page/k24"})
	same(t, "past the end", search(t, m, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"page"}, Offset: 25}), []string{})
	// Namespaces.
	list := func(q workspace.NamespaceQuery) []workspace.Namespace {
		t.Helper()
		nss, err := m.ListMemoryNamespaces(bg, q)
		ok(t, err, "list namespaces")
		return nss
	}
	same(t, "every namespace", list(workspace.NamespaceQuery{}),
		[][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "bc"}, {"a!"}, {"page"}, {"ユーザー", "ü ß"}})
	same(t, "namespaces under [a b]", list(workspace.NamespaceQuery{Prefix: []string{"a", "b"}}), [][]string{{"a", "b"}, {"a", "b", "c"}})
	same(t, "namespaces under [a *]", list(workspace.NamespaceQuery{Prefix: []string{"a", "*"}}), [][]string{{"a", "b"}, {"a", "b", "c"}, {"a", "bc"}})
	same(t, "namespaces ending [* c]", list(workspace.NamespaceQuery{Suffix: []string{"*", "c"}}), [][]string{{"a", "b", "c"}})
	same(t, "namespaces ending [b]", list(workspace.NamespaceQuery{Suffix: []string{"b"}}), [][]string{{"a", "b"}})
	same(t, "depth 1", list(workspace.NamespaceQuery{MaxDepth: 1}), [][]string{{"a"}, {"a!"}, {"page"}, {"ユーザー"}})
	same(t, "depth 2 under [a]", list(workspace.NamespaceQuery{Prefix: []string{"a"}, MaxDepth: 2}), [][]string{{"a"}, {"a", "b"}, {"a", "bc"}})
	same(t, "a page of namespaces", list(workspace.NamespaceQuery{Limit: 2, Offset: 3}), [][]string{{"a", "bc"}, {"a!"}})
	// Delete, then the events of it all.
	ok(t, m.DeleteMemory(bg, workspace.MemoryDeleteRequest{Namespace: workspace.Namespace{"a", "bc"}, Key: "k", Agent: "po"}), "delete")
	_, err = m.GetMemory(bg, workspace.Namespace{"a", "bc"}, "k")
	is(t, err, workspace.ErrNotFound, "get a deleted item")
	is(t, m.DeleteMemory(bg, workspace.MemoryDeleteRequest{Namespace: workspace.Namespace{"a", "bc"}, Key: "k", Agent: "po"}), workspace.ErrNotFound, "delete it again")
	same(t, "namespaces after the delete", list(workspace.NamespaceQuery{Prefix: []string{"a"}, MaxDepth: 2}), [][]string{{"a"}, {"a", "b"}})
	var evs []workspace.PositionedEvent
	var next int64
	// A store may hold an event back for a moment (PostgreSQL, while an
	// older transaction runs), never for good.
	poll.Until(t, 30*time.Second, "34 memory events readable", func() (bool, string) {
		evs = nil
		var err error
		next, err = m.ReadMemoryEvents(bg, 0, func(e workspace.PositionedEvent) { evs = append(evs, e) })
		ok(t, err, "read memory events")
		return len(evs) >= 34, fmt.Sprintf("%d readable", len(evs))
	})
	if len(evs) != 34 || next != evs[len(evs)-1].End {
		t.Fatalf("memory events: %d up to %d, want 34 (33 puts and a delete) up to the last's end", len(evs), next)
	}
	last := evs[len(evs)-1]
	if last.Name != "memory_deleted" || last.Attrs["namespace"] != `["a","bc"]` || last.Attrs["key"] != "k" || last.Attrs["agent"] != "po" {
		t.Fatalf("delete's event: %+v", last.Event)
	}
	if e := evs[1]; e.Name != "memory_stored" || e.Attrs["version"] != "2" || strings.Contains(workspace.FormatEvent(e.Event), "note") {
		t.Fatalf("second put's event (the value left out): %s", workspace.FormatEvent(e.Event))
	}
	var again []workspace.PositionedEvent
	_, err = m.ReadMemoryEvents(bg, evs[30].End, func(e workspace.PositionedEvent) { again = append(again, e) })
	ok(t, err, "read memory events from a position")
	if len(again) != 3 || again[0].Start != evs[30].End || again[2].End != next {
		t.Fatalf("memory events after %d: %+v", evs[30].End, again)
	}
}

func testMemoryCAS(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	ns := workspace.Namespace{"users", "42"}
	req := workspace.MemoryPutRequest{Namespace: ns, Key: "prefs", Value: json.RawMessage(`{"theme":"dark"}`), Agent: "po", IfAbsent: true}
	_, err := m.PutMemory(bg, req)
	ok(t, err, "create only")
	conflict := func(err error, current int, what string) {
		t.Helper()
		is(t, err, workspace.ErrConflict, what)
		var ve *workspace.VersionError
		if !errors.As(err, &ve) || ve.Current != current {
			t.Fatalf("%s: %v carries no current version %d", what, err, current)
		}
	}
	_, err = m.PutMemory(bg, req)
	conflict(err, 1, "create only over an item")
	req.IfAbsent, req.IfVersion = false, 3
	_, err = m.PutMemory(bg, req)
	conflict(err, 1, "put at a version the item has not")
	req.IfVersion = 1
	it, err := m.PutMemory(bg, req)
	ok(t, err, "put at the current version")
	if it.Version != 2 {
		t.Fatalf("put at version 1 made version %d", it.Version)
	}
	conflict(m.DeleteMemory(bg, workspace.MemoryDeleteRequest{Namespace: ns, Key: "prefs", IfVersion: 1, Agent: "po"}), 2, "delete at an old version")
	req.Key, req.IfVersion = "none", 1
	_, err = m.PutMemory(bg, req)
	conflict(err, 0, "put at a version of a missing item")
	ok(t, m.DeleteMemory(bg, workspace.MemoryDeleteRequest{Namespace: ns, Key: "prefs", IfVersion: 2, Agent: "po"}), "delete at the current version")

	// Eight writers each add 10 to a counter by compare-and-set; eight
	// more race to create one item: no update lost, one creator.
	const writers, rounds = 8, 10
	put(t, m, ns, "counter", `{"n":0}`)
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	created := make(chan int, writers)
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range rounds {
				for {
					cur, err := m.GetMemory(bg, ns, "counter")
					if err != nil {
						errs <- err
						return
					}
					var v struct{ N int }
					_ = json.Unmarshal(cur.Value, &v)
					_, err = m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "counter", Value: json.RawMessage(fmt.Sprintf(`{"n":%d}`, v.N+1)),
						IfVersion: cur.Version, Agent: "po"})
					if errors.Is(err, workspace.ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
		go func() {
			defer wg.Done()
			_, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "once", Value: json.RawMessage(fmt.Sprintf(`{"by":%d}`, w)),
				IfAbsent: true, Agent: "po"})
			switch {
			case err == nil:
				created <- w
			case !errors.Is(err, workspace.ErrConflict):
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(created)
	for err := range errs {
		t.Fatalf("concurrent writer: %v", err)
	}
	cur, err := m.GetMemory(bg, ns, "counter")
	ok(t, err, "get the counter")
	if string(cur.Value) != fmt.Sprintf(`{"n":%d}`, writers*rounds) || cur.Version != writers*rounds+1 {
		t.Fatalf("counter after %d compare-and-set writes: %s at version %d", writers*rounds, cur.Value, cur.Version)
	}
	var winners []int
	for w := range created {
		winners = append(winners, w)
	}
	once, err := m.GetMemory(bg, ns, "once")
	ok(t, err, "get the item created once")
	if len(winners) != 1 || string(once.Value) != fmt.Sprintf(`{"by":%d}`, winners[0]) || once.Version != 1 {
		t.Fatalf("create only raced: winners %v, item %s at version %d", winners, once.Value, once.Version)
	}
}

func testMemoryTTL(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	ns := workspace.Namespace{"ttl"}
	keep := put(t, m, ns, "keep", `{}`)
	short, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: workspace.Namespace{"ttl", "short"}, Key: "k", Value: json.RawMessage(`{"v":1}`), TTLSeconds: 1, Agent: "po"})
	ok(t, err, "put with a time to live")
	if short.ExpiresAt == nil || !short.ExpiresAt.Equal(short.UpdatedAt.Add(time.Second)) {
		t.Fatalf("expires_at %v, want a second after %v", short.ExpiresAt, short.UpdatedAt)
	}
	if _, err := m.GetMemory(bg, short.Namespace, "k"); err != nil {
		t.Fatalf("get before the expiry: %v", err)
	}
	lapsed, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "lapsed", Value: json.RawMessage(`{"v":1}`), TTLSeconds: 1, Agent: "po"})
	ok(t, err, "put another with a time to live")
	lapsed, err = m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "lapsed", Value: json.RawMessage(`{"v":2}`), TTLSeconds: 1, Agent: "po"})
	ok(t, err, "put it again")
	// Wait for the store's clock to pass the expiry: nothing else.
	poll.Until(t, 10*time.Second, "the store's clock past the expiry", func() (bool, string) {
		now := s.Now()
		return !now.Before(*short.ExpiresAt) && !now.Before(*lapsed.ExpiresAt), now.String()
	})
	_, err = m.GetMemory(bg, short.Namespace, "k")
	is(t, err, workspace.ErrNotFound, "get an expired item")
	same(t, "search after the expiry", search(t, m, workspace.MemorySearchRequest{Prefix: ns}), []string{"ttl/keep"})
	// An expired item not yet removed is absent for a put: a compare-and-set
	// on its version is refused as on a missing item, create-only creates
	// it again at version 1, created anew.
	_, err = m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "lapsed", Value: json.RawMessage(`{}`), IfVersion: lapsed.Version, Agent: "po"})
	is(t, err, workspace.ErrConflict, "put at the version of an expired item")
	var ve *workspace.VersionError
	if !errors.As(err, &ve) || ve.Current != 0 {
		t.Fatalf("put at the version of an expired item: %v, want current version 0", err)
	}
	reborn, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "lapsed", Value: json.RawMessage(`{"v":3}`), IfAbsent: true, Agent: "po"})
	ok(t, err, "create an expired item again before its removal")
	if reborn.Version != 1 || reborn.ExpiresAt != nil || !reborn.CreatedAt.Equal(reborn.UpdatedAt) || !reborn.CreatedAt.After(lapsed.CreatedAt) {
		t.Fatalf("expired item created again: %+v, was %+v", reborn, lapsed)
	}
	if got, err := m.GetMemory(bg, ns, "lapsed"); err != nil || got.Version != 1 || !got.CreatedAt.Equal(reborn.CreatedAt) || string(got.Value) != `{"v":3}` {
		t.Fatalf("get the item created again: %+v %v", got, err)
	}
	ok(t, m.DeleteMemory(bg, workspace.MemoryDeleteRequest{Namespace: ns, Key: "lapsed", Agent: "po"}), "delete it")
	nss, err := m.ListMemoryNamespaces(bg, workspace.NamespaceQuery{Prefix: ns})
	ok(t, err, "list namespaces")
	same(t, "namespaces after the expiry", nss, [][]string{{"ttl"}})
	is(t, m.DeleteMemory(bg, workspace.MemoryDeleteRequest{Namespace: short.Namespace, Key: "k", Agent: "po"}), workspace.ErrNotFound, "delete an expired item")
	n, err := m.PruneMemory(bg, s.Now(), true)
	ok(t, err, "dry run")
	if n != 1 {
		t.Fatalf("a dry run counts %d expired items, want 1", n)
	}
	rep, err := s.Prune(bg, workspace.PruneRequest{Policy: retention.Policy{FullDays: 30, SummaryDays: 90}, Agent: "cleanup"})
	ok(t, err, "retention run")
	if rep.MemoryExpired != 1 {
		t.Fatalf("the retention run removed %d expired items, want 1", rep.MemoryExpired)
	}
	if n, err := m.PruneMemory(bg, s.Now(), true); err != nil || n != 0 {
		t.Fatalf("expired items after the run: %d (%v)", n, err)
	}
	if got, err := m.GetMemory(bg, ns, "keep"); err != nil || got.Version != keep.Version {
		t.Fatalf("retention touched a live item: %+v %v", got, err)
	}
	// An expired item is absent for a put: created again at version 1.
	again, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: short.Namespace, Key: "k", Value: json.RawMessage(`{"v":2}`), IfAbsent: true, Agent: "po"})
	ok(t, err, "create an item again after its expiry")
	if again.Version != 1 || again.ExpiresAt != nil {
		t.Fatalf("item created again: %+v", again)
	}
	// A put refreshes the time to live as given: none when none.
	long, err := m.PutMemory(bg, workspace.MemoryPutRequest{Namespace: ns, Key: "keep", Value: json.RawMessage(`{}`), TTLSeconds: 3600, Agent: "po"})
	ok(t, err, "put with an hour to live")
	if long.ExpiresAt == nil || long.ExpiresAt.Sub(long.UpdatedAt) != time.Hour {
		t.Fatalf("an hour to live: %+v", long)
	}
	if got := put(t, m, ns, "keep", `{}`); got.ExpiresAt != nil {
		t.Fatalf("a put without a time to live kept the expiry %v", got.ExpiresAt)
	}
}

// testMemoryBadInput holds every store to the model's refusals: ErrInvalid,
// nothing written.
func testMemoryBadInput(t *testing.T, s workspace.Store, _ Hooks) {
	m := memoryOf(t, s)
	long := strings.Repeat("x", workspace.MaxLabelBytes+1)
	deep := slices.Repeat([]string{"d"}, workspace.MaxNamespaceDepth+1)
	good := json.RawMessage(`{"a":1}`)
	for _, c := range []struct {
		name string
		req  workspace.MemoryPutRequest
	}{
		{"no namespace", workspace.MemoryPutRequest{Key: "k", Value: good}},
		{"empty label", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a", ""}, Key: "k", Value: good}},
		{"long label", workspace.MemoryPutRequest{Namespace: workspace.Namespace{long}, Key: "k", Value: good}},
		{"too deep", workspace.MemoryPutRequest{Namespace: deep, Key: "k", Value: good}},
		{"NUL in a label", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a\x00b"}, Key: "k", Value: good}},
		{"newline in a label", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a\nb"}, Key: "k", Value: good}},
		{"invalid UTF-8 label", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a\xffb"}, Key: "k", Value: good}},
		{"invalid UTF-8 key", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Key: "k\xff", Value: good}},
		{"empty key", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Value: good}},
		{"not an object", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Key: "k", Value: json.RawMessage(`[1]`)}},
		{"not JSON", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Key: "k", Value: json.RawMessage(`{`)}},
		{"negative TTL", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Key: "k", Value: good, TTLSeconds: -1}},
		{"both checks", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Key: "k", Value: good, IfVersion: 1, IfAbsent: true}},
		{"too large", workspace.MemoryPutRequest{Namespace: workspace.Namespace{"a"}, Key: "k",
			Value: json.RawMessage(`{"a":"` + strings.Repeat("x", s.Settings().Limits.ValueMaxBytes) + `"}`)}},
	} {
		c.req.Agent = "po"
		_, err := m.PutMemory(bg, c.req)
		is(t, err, workspace.ErrInvalid, "put with "+c.name)
	}
	_, err := m.SearchMemory(bg, workspace.MemorySearchRequest{Limit: workspace.MaxMemoryLimit + 1})
	is(t, err, workspace.ErrInvalid, "search over the limit")
	_, err = m.SearchMemory(bg, workspace.MemorySearchRequest{Prefix: workspace.Namespace{"a", ""}})
	is(t, err, workspace.ErrInvalid, "search under an empty label")
	_, err = m.ListMemoryNamespaces(bg, workspace.NamespaceQuery{MaxDepth: -1})
	is(t, err, workspace.ErrInvalid, "list namespaces at depth -1")
	_, err = m.ReadMemoryEvents(bg, -1, func(workspace.PositionedEvent) {})
	is(t, err, workspace.ErrInvalid, "memory events from -1")
	items, err := m.SearchMemory(bg, workspace.MemorySearchRequest{})
	ok(t, err, "search")
	if len(items) != 0 {
		t.Fatalf("refused puts wrote %v", names(items))
	}
}
