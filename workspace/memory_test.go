package workspace

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var memLimits = Settings{}.WithDefaults().Limits

func TestValidateNamespace(t *testing.T) {
	for _, c := range []struct {
		name string
		ns   Namespace
		ok   bool
	}{
		{"one label", Namespace{"a"}, true},
		{"sixteen labels", Namespace(slices.Repeat([]string{"x"}, 16)), true},
		{"non-ASCII", Namespace{"ユーザー", "ü ß", "🔑"}, true},
		{"128 bytes", Namespace{strings.Repeat("é", 64)}, true},
		{"a wildcard is a label", Namespace{"*"}, true},
		{"slashes and dots", Namespace{"a/b", "..", "."}, true},
		{"empty", Namespace{}, false},
		{"nil", nil, false},
		{"seventeen labels", Namespace(slices.Repeat([]string{"x"}, 17)), false},
		{"empty label", Namespace{"a", ""}, false},
		{"129 bytes", Namespace{strings.Repeat("x", 129)}, false},
		{"NUL", Namespace{"a\x00"}, false},
		{"tab", Namespace{"a\tb"}, false},
		{"DEL", Namespace{"a\x7f"}, false},
		{"C1 control", Namespace{"a\u0085"}, false},
		{"separator byte", Namespace{"a\x01b"}, false},
		{"invalid UTF-8", Namespace{"\xc3"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateNamespace(c.ns)
			if (err == nil) != c.ok {
				t.Fatalf("ValidateNamespace(%q) = %v, want ok=%v", c.ns, err, c.ok)
			}
			if err != nil && (!errors.Is(err, ErrInvalid) || HintOf(err) == "") {
				t.Fatalf("error %v: want ErrInvalid with a hint", err)
			}
		})
	}
}

func TestNamespaceOrderAndPrefix(t *testing.T) {
	sorted := []Namespace{{"a"}, {"a", "b"}, {"a", "b", "c"}, {"a", "bc"}, {"a!"}, {"ab"}, {"b"}, {"é"}, {"ユーザー"}}
	for i, a := range sorted {
		for j, b := range sorted {
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := CompareNamespaces(a, b); got != want {
				t.Fatalf("CompareNamespaces(%v, %v) = %d, want %d", a, b, got, want)
			}
			if got := strings.Compare(a.Sortable(), b.Sortable()); got != want {
				t.Fatalf("Sortable order of %v, %v = %d, want %d", a, b, got, want)
			}
		}
	}
	for _, c := range []struct {
		ns, prefix Namespace
		want       bool
	}{
		{Namespace{"a", "b", "c"}, Namespace{"a", "b"}, true},
		{Namespace{"a", "b"}, Namespace{"a", "b"}, true},
		{Namespace{"a", "b"}, nil, true},
		{Namespace{"a", "bc"}, Namespace{"a", "b"}, false},
		{Namespace{"ab"}, Namespace{"a"}, false},
		{Namespace{"a"}, Namespace{"a", "b"}, false},
	} {
		if got := c.ns.HasPrefix(c.prefix); got != c.want {
			t.Fatalf("%v.HasPrefix(%v) = %v", c.ns, c.prefix, got)
		}
		if got := len(c.prefix) == 0 || strings.HasPrefix(c.ns.Sortable(), c.prefix.Sortable()); got != c.want {
			t.Fatalf("Sortable prefix of %v under %v = %v", c.ns, c.prefix, got)
		}
	}
	ns := Namespace{"users", "42", "ü"}
	back, err := ParseSortable(ns.Sortable())
	if err != nil || !slices.Equal(back, ns) {
		t.Fatalf("ParseSortable(Sortable(%v)) = %v, %v", ns, back, err)
	}
	for _, bad := range []string{"", "a", "a\x01\x01"} {
		if _, err := ParseSortable(bad); err == nil {
			t.Fatalf("ParseSortable(%q) accepted", bad)
		}
	}
}

func TestMatchNamespace(t *testing.T) {
	ns := Namespace{"users", "42", "prefs"}
	for _, c := range []struct {
		prefix, suffix []string
		want           bool
	}{
		{nil, nil, true},
		{[]string{"users"}, nil, true},
		{[]string{"*", "42"}, nil, true},
		{[]string{"users", "4"}, nil, false},
		{nil, []string{"prefs"}, true},
		{nil, []string{"*", "prefs"}, true},
		{nil, []string{"42", "*"}, true},
		{nil, []string{"users", "*", "prefs"}, true},
		{nil, []string{"x", "users", "42", "prefs"}, false},
		{[]string{"users"}, []string{"prefs"}, true},
		{[]string{"users"}, []string{"profile"}, false},
		{[]string{"*", "*", "*"}, nil, true},
		{[]string{"*", "*", "*", "*"}, nil, false},
	} {
		if got := MatchNamespace(ns, c.prefix, c.suffix); got != c.want {
			t.Fatalf("MatchNamespace(%v, prefix %v, suffix %v) = %v", ns, c.prefix, c.suffix, got)
		}
	}
}

func TestListNamespaces(t *testing.T) {
	all := []Namespace{{"a", "b", "c"}, {"a", "bc"}, {"a", "b"}, {"x"}, {"a", "b", "c"}}
	for _, c := range []struct {
		name string
		q    NamespaceQuery
		want string
	}{
		{"all", NamespaceQuery{Limit: 100}, `[["a","b"],["a","b","c"],["a","bc"],["x"]]`},
		{"depth 1", NamespaceQuery{MaxDepth: 1, Limit: 100}, `[["a"],["x"]]`},
		{"depth 2", NamespaceQuery{MaxDepth: 2, Limit: 100}, `[["a","b"],["a","bc"],["x"]]`},
		{"prefix", NamespaceQuery{Prefix: []string{"a", "b"}, Limit: 100}, `[["a","b"],["a","b","c"]]`},
		{"suffix", NamespaceQuery{Suffix: []string{"c"}, Limit: 100}, `[["a","b","c"]]`},
		{"page", NamespaceQuery{Limit: 2, Offset: 1}, `[["a","b","c"],["a","bc"]]`},
		{"past the end", NamespaceQuery{Limit: 2, Offset: 9}, `[]`},
	} {
		got, _ := json.Marshal(ListNamespaces(all, c.q))
		if string(got) != c.want {
			t.Fatalf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestCheckPages(t *testing.T) {
	if q, err := CheckSearch(MemorySearchRequest{}); err != nil || q.Limit != DefaultSearchLimit {
		t.Fatalf("default search limit: %+v %v", q, err)
	}
	if q, err := CheckNamespaceQuery(NamespaceQuery{}); err != nil || q.Limit != DefaultNSLimit {
		t.Fatalf("default listing limit: %+v %v", q, err)
	}
	for _, q := range []MemorySearchRequest{{Limit: -1}, {Limit: 1001}, {Offset: -1}, {Prefix: Namespace{""}}} {
		if _, err := CheckSearch(q); !errors.Is(err, ErrInvalid) {
			t.Fatalf("CheckSearch(%+v) = %v", q, err)
		}
	}
	for _, q := range []NamespaceQuery{{MaxDepth: -1}, {MaxDepth: 17}, {Suffix: []string{"\n"}}, {Limit: 1001}} {
		if _, err := CheckNamespaceQuery(q); !errors.Is(err, ErrInvalid) {
			t.Fatalf("CheckNamespaceQuery(%+v) = %v", q, err)
		}
	}
}

func TestMemoryFilter(t *testing.T) {
	value := `{"n": 3, "s": "b", "t": true, "z": null, "arr": [1, {"x": 2}], "obj": {"k": "v"}, "big": 12345678901234567890}`
	for _, c := range []struct {
		filter string
		want   bool
	}{
		{``, true},
		{`null`, true},
		{`{}`, true},
		{`{"n": 3}`, true},
		{`{"n": 3.0}`, true},
		{`{"n": 3e0}`, true},
		{`{"n": "3"}`, false},
		{`{"n": {"$ne": "3"}}`, true},
		{`{"n": {"$gt": 2, "$lte": 3}}`, true},
		{`{"n": {"$gt": 3}}`, false},
		{`{"n": {"$gte": 3}}`, true},
		{`{"n": {"$lt": 3}}`, false},
		{`{"s": {"$lt": "c"}}`, true},
		{`{"s": {"$gt": "B"}}`, true},
		{`{"s": {"$gt": 1}}`, false},
		{`{"t": true}`, true},
		{`{"t": {"$gt": false}}`, false},
		{`{"z": null}`, true},
		{`{"z": {"$ne": null}}`, false},
		{`{"missing": {"$ne": 1}}`, true},
		{`{"missing": null}`, false},
		{`{"missing": {"$lt": 1}}`, false},
		{`{"arr": [1, {"x": 2.0}]}`, true},
		{`{"arr": [1]}`, false},
		{`{"obj": {"k": "v"}}`, true},
		{`{"obj": {"k": "w"}}`, false},
		{`{"big": 12345678901234567890}`, true},
		{`{"big": {"$gt": 12345678901234567889}}`, true},
		{`{"n": 3, "s": "c"}`, false},
	} {
		f, err := ParseMemoryFilter([]byte(c.filter), memLimits)
		if err != nil {
			t.Fatalf("filter %s: %v", c.filter, err)
		}
		if got := f.Match(json.RawMessage(value)); got != c.want {
			t.Fatalf("filter %s on %s = %v, want %v", c.filter, value, got, c.want)
		}
	}
	for _, c := range []struct{ filter, names string }{
		{`[1]`, "not a JSON object"},
		{`"x"`, "not a JSON object"},
		{`{"n": {"$in": [1]}}`, `"$in"`},
		{`{"n": {"$eq": 1, "x": 2}}`, `"x"`},
		{`{"n": 1`, "not a JSON object"},
		{strings.Repeat(`{"a":`, 80) + "1" + strings.Repeat("}", 80), "nested"},
	} {
		_, err := ParseMemoryFilter([]byte(c.filter), memLimits)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.names) || FieldOf(err) != FieldFilter || HintOf(err) == "" {
			t.Fatalf("filter %s: %v, want ErrInvalid on the filter naming %s, with a hint", c.filter, err, c.names)
		}
	}
}

func TestApplyPutAndDelete(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later := t0.Add(time.Minute)
	ns := Namespace{"a"}
	req := MemoryPutRequest{Namespace: ns, Key: "k", Value: json.RawMessage(`{ "a" : 1 }`), Agent: "po"}
	first, err := ApplyPut(nil, req, t0)
	if err != nil || first.Version != 1 || !first.CreatedAt.Equal(t0) || first.ExpiresAt != nil || string(first.Value) != `{"a":1}` {
		t.Fatalf("create: %+v %v", first, err)
	}
	req.TTLSeconds = 30
	second, err := ApplyPut(&first, req, later)
	if err != nil || second.Version != 2 || !second.CreatedAt.Equal(t0) || !second.ExpiresAt.Equal(later.Add(30*time.Second)) {
		t.Fatalf("replace: %+v %v", second, err)
	}
	var ve *VersionError
	req.IfVersion = 1
	if _, err := ApplyPut(&second, req, later); !errors.Is(err, ErrConflict) || !errors.As(err, &ve) || ve.Current != 2 {
		t.Fatalf("stale version: %v", err)
	}
	req.IfVersion, req.IfAbsent = 0, true
	if _, err := ApplyPut(&second, req, later); !errors.Is(err, ErrConflict) {
		t.Fatalf("create only over a live item: %v", err)
	}
	expired := later.Add(time.Hour)
	again, err := ApplyPut(&second, req, expired)
	if err != nil || again.Version != 1 || !again.CreatedAt.Equal(expired) {
		t.Fatalf("create only over an expired item: %+v %v", again, err)
	}
	del := MemoryDeleteRequest{Namespace: ns, Key: "k", Agent: "po"}
	if err := ApplyDelete(nil, del, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete nothing: %v", err)
	}
	if err := ApplyDelete(&second, del, expired); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete an expired item: %v", err)
	}
	del.IfVersion = 1
	if err := ApplyDelete(&second, del, later); !errors.Is(err, ErrConflict) {
		t.Fatalf("delete at a stale version: %v", err)
	}
	del.IfVersion = 2
	if err := ApplyDelete(&second, del, later); err != nil {
		t.Fatalf("delete at the version: %v", err)
	}
	if !second.Live(later.Add(29*time.Second)) || second.Live(later.Add(30*time.Second)) {
		t.Fatal("an item is live until, not at, its expiry")
	}
}

func TestCheckMemoryPut(t *testing.T) {
	good := MemoryPutRequest{Namespace: Namespace{"a"}, Key: "k", Value: json.RawMessage(`{}`), Agent: "po"}
	if err := CheckMemoryPut(good, memLimits); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*MemoryPutRequest){
		"array value":     func(r *MemoryPutRequest) { r.Value = json.RawMessage(`[]`) },
		"string value":    func(r *MemoryPutRequest) { r.Value = json.RawMessage(`"x"`) },
		"no value":        func(r *MemoryPutRequest) { r.Value = nil },
		"two documents":   func(r *MemoryPutRequest) { r.Value = json.RawMessage(`{} {}`) },
		"bad agent":       func(r *MemoryPutRequest) { r.Agent = "no agent" },
		"bad key":         func(r *MemoryPutRequest) { r.Key = "a\nb" },
		"ttl too long":    func(r *MemoryPutRequest) { r.TTLSeconds = MaxTTLSeconds + 1 },
		"negative ttl":    func(r *MemoryPutRequest) { r.TTLSeconds = -5 },
		"negative check":  func(r *MemoryPutRequest) { r.IfVersion = -1 },
		"both the checks": func(r *MemoryPutRequest) { r.IfVersion, r.IfAbsent = 1, true },
	} {
		req := good
		change(&req)
		if err := CheckMemoryPut(req, memLimits); !errors.Is(err, ErrInvalid) || HintOf(err) == "" {
			t.Fatalf("%s: %v, want ErrInvalid with a hint", name, err)
		}
	}
}

// FuzzNamespaceOrder holds Sortable to the label-by-label order and
// prefixes for any two valid namespaces.
func FuzzNamespaceOrder(f *testing.F) {
	f.Add("a/b", "a/bc")
	f.Add("a", "a/b")
	f.Add("é/x", "e/x")
	f.Fuzz(func(t *testing.T, x, y string) {
		a, b := Namespace(strings.Split(x, "/")), Namespace(strings.Split(y, "/"))
		if ValidateNamespace(a) != nil || ValidateNamespace(b) != nil {
			return
		}
		if got, want := strings.Compare(a.Sortable(), b.Sortable()), CompareNamespaces(a, b); got != want {
			t.Fatalf("%q vs %q: Sortable says %d, labels %d", a, b, got, want)
		}
		if got, want := strings.HasPrefix(a.Sortable(), b.Sortable()), a.HasPrefix(b); got != want {
			t.Fatalf("%q under %q: Sortable says %v, labels %v", a, b, got, want)
		}
		if back, err := ParseSortable(a.Sortable()); err != nil || !slices.Equal(back, a) {
			t.Fatalf("ParseSortable(Sortable(%q)) = %q, %v", a, back, err)
		}
	})
}

// FuzzMemoryFilter parses any bytes as a filter: refused with ErrInvalid
// or matched against any value without a panic.
func FuzzMemoryFilter(f *testing.F) {
	f.Add([]byte(`{"n":{"$gte":1}}`), []byte(`{"n":2}`))
	f.Add([]byte(`{"a":[1,{"b":null}]}`), []byte(`{"a":[1,{"b":null}]}`))
	f.Add([]byte(`{"s":{"$bad":1}}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, filter, value []byte) {
		mf, err := ParseMemoryFilter(filter, memLimits)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("filter %q: %v is not ErrInvalid", filter, err)
			}
			return
		}
		mf.Match(value)
	})
}

// FuzzCheckMemoryPut reads any namespace, key and value as a put would:
// refused with ErrInvalid and a hint, or accepted and then written as a
// compact JSON object whose namespace round-trips through Sortable.
func FuzzCheckMemoryPut(f *testing.F) {
	f.Add("users/42", "prefs", []byte(`{"theme":"dark"}`), 60)
	f.Add("a\x00b", "k", []byte(`{}`), 0)
	f.Add("é/ü", "clé 🔑", []byte(` { "a" : [1, 2] } `), -1)
	f.Add("a", "k\xff", []byte(`[1]`), 0)
	f.Fuzz(func(t *testing.T, ns, key string, value []byte, ttl int) {
		req := MemoryPutRequest{Namespace: Namespace(strings.Split(ns, "/")), Key: key, Value: value, TTLSeconds: ttl, Agent: "po"}
		if err := CheckMemoryPut(req, memLimits); err != nil {
			if !errors.Is(err, ErrInvalid) || HintOf(err) == "" {
				t.Fatalf("put %q %q %q: %v is not ErrInvalid with a hint", ns, key, value, err)
			}
			return
		}
		it, err := ApplyPut(nil, req, time.Unix(0, 0).UTC())
		if err != nil {
			t.Fatalf("an accepted put failed: %v", err)
		}
		if !json.Valid(it.Value) || it.Value[0] != '{' || strings.ContainsAny(string(it.Value), "\n") {
			t.Fatalf("value kept as %q", it.Value)
		}
		if back, err := ParseSortable(it.Namespace.Sortable()); err != nil || !slices.Equal(back, it.Namespace) {
			t.Fatalf("namespace %q does not round-trip: %q %v", it.Namespace, back, err)
		}
	})
}
