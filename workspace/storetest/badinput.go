package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// The bad input every store refuses, and the odd input every store keeps
// exactly, the file tree included (BadInput, also a part of Run).

// BadIDs are ids (task, thread, subtask, review, agent, lock) every
// operation refuses with ErrInvalid.
var BadIDs = map[string]string{
	"dotdot":       "..",
	"dotdot path":  "../../etc",
	"slash":        "a/b",
	"control":      "a\nb",
	"nul":          "a\x00b",
	"10KB":         strings.Repeat("a", 10<<10),
	"invalid utf8": "a\xffb",
	"leading dot":  ".hidden",
	"sql":          "'); DROP TABLE tasks; --",
	"space":        "a b",
	"unicode":      "задача",
}

// BadKeys are entry keys every entry operation refuses with ErrInvalid.
var BadKeys = map[string]string{
	"control":      "a\nb",
	"nul":          "a\x00b",
	"del":          "a\x7fb",
	"c1 control":   "a\u0085b",
	"10KB":         strings.Repeat("k", 10<<10),
	"invalid utf8": "a\xffb",
	"empty":        "",
	"201 bytes":    strings.Repeat("k", 201),
	"long encoded": strings.Repeat("/", 90),
}

// BadValues are entry values every store refuses with ErrInvalid under
// the limits lim: over the size limit, nested deeper than MaxDepth, not
// one JSON document of UTF-8.
func BadValues(lim workspace.LimitSettings) map[string]json.RawMessage {
	over := append(append([]byte(`"`), bytes.Repeat([]byte("x"), lim.ValueMaxBytes)...), '"')
	return map[string]json.RawMessage{
		"over the limit":   over,
		"not json":         json.RawMessage(`{a:1}`),
		"two documents":    json.RawMessage(`1 2`),
		"truncated":        json.RawMessage(`{"a":`),
		"empty":            json.RawMessage(``),
		"blank":            json.RawMessage(`   `),
		"too deep":         json.RawMessage(strings.Repeat("[", lim.MaxDepth+1) + strings.Repeat("]", lim.MaxDepth+1)),
		"far too deep":     json.RawMessage(strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000)),
		"invalid utf8":     json.RawMessage("\"a\xffb\""),
		"invalid utf8 key": json.RawMessage("{\"a\xff\":1}"),
		"raw nul":          json.RawMessage("\"a\x00b\""),
		"sql":              json.RawMessage(`'); DROP TABLE entries; --`),
	}
}

// BadDescriptions are entry descriptions every store refuses with
// ErrInvalid: a database's text column holds neither.
var BadDescriptions = map[string]string{
	"nul":          "about \x00 it",
	"invalid utf8": "about \xff it",
}

// OddKeys are valid keys that look hostile; a store keeps each and gives
// it back exactly.
var OddKeys = map[string]string{
	"sql":       "'); DROP TABLE entries; --",
	"sql quote": `x' OR '1'='1`,
	"unicode":   "ключ 🔑 é",
	"dotdot":    "..",
	"slash":     "a/b/../c",
	"percent":   "%00%2F",
	"200 bytes": strings.Repeat("k", 200),
}

// OddValues are valid values that look hostile, under the limits lim; a
// store keeps each as given, but for the white space between tokens (the
// file tree writes a value compacted, a database as given).
func OddValues(lim workspace.LimitSettings) map[string]json.RawMessage {
	limit := append(append([]byte(`"`), bytes.Repeat([]byte("x"), lim.ValueMaxBytes-2)...), '"')
	return map[string]json.RawMessage{
		"escaped nul":   json.RawMessage(`"a\u0000b"`),
		"sql string":    json.RawMessage(`{"q": "'); DROP TABLE tasks; --"}`),
		"unicode":       json.RawMessage(`{"ключ": "значение 🔑", "e\u0301": "\ud83d\ude00"}`),
		"max depth":     json.RawMessage(strings.Repeat("[", lim.MaxDepth) + strings.Repeat("]", lim.MaxDepth)),
		"at the limit":  limit,
		"spaced":        json.RawMessage(" {\n\t\"a\" : [ 1 , 2 ]\n} "),
		"big number":    json.RawMessage(`123456789012345678901234567890.5e-3`),
		"control chars": json.RawMessage(`"\u0001\u001f\n\t\\"`),
	}
}

// BadInput holds s to the tables: every bad id, key and value is refused
// with ErrInvalid and a message, and snapshot (a dump of everything s
// keeps) is the same after each refusal; every odd key and value is
// stored and read back as given, and listed. s must hold no task "t1".
func BadInput(t *testing.T, s workspace.Store, snapshot func(t *testing.T) string) {
	ctx := context.Background()
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "bad input"}); err != nil {
		t.Fatal(err)
	}
	sc := workspace.Scope{Kind: workspace.ScopeThread, TaskID: "t1"}
	if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "existing", Value: json.RawMessage(`1`), Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	// The refusals run one after another, so the snapshot taken after
	// one is the one before the next: a change shows at the refusal that
	// made it, with one snapshot a refusal instead of two.
	last, have := "", false
	refuses := func(t *testing.T, op func() error) {
		t.Helper()
		if !have {
			last, have = snapshot(t), true
		}
		before := last
		err := op()
		if !errors.Is(err, workspace.ErrInvalid) || err.Error() == "" {
			t.Errorf("err = %v, want ErrInvalid with a message", err)
		}
		last = snapshot(t)
		if last != before {
			t.Errorf("a refused write changed the store")
		}
	}
	t.Run("ids", func(t *testing.T) {
		// An empty id too, which a command line reads as "make one up"
		// (not in BadIDs): idOps leaves out the operations that take it.
		ids := map[string]string{"empty": ""}
		for name, id := range BadIDs {
			ids[name] = id
		}
		for name, id := range ids {
			for opName, op := range idOps(ctx, s, id) {
				t.Run(name+"/"+opName, func(t *testing.T) { refuses(t, op) })
			}
		}
	})
	t.Run("keys", func(t *testing.T) {
		for name, key := range BadKeys {
			t.Run(name, func(t *testing.T) {
				refuses(t, func() error {
					_, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: key, Value: json.RawMessage(`1`), Agent: "a"})
					return err
				})
				refuses(t, func() error {
					_, err := s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: key, Value: json.RawMessage(`1`), Agent: "a"})
					return err
				})
				refuses(t, func() error { return s.DeleteEntry(ctx, sc, workspace.DeleteRequest{Key: key, Agent: "a"}) })
				refuses(t, func() error {
					_, err := s.GetEntry(ctx, sc, key)
					return err
				})
			})
		}
	})
	t.Run("values", func(t *testing.T) {
		for name, v := range BadValues(s.Settings().Limits) {
			t.Run(name, func(t *testing.T) {
				refuses(t, func() error {
					_, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "new", Value: v, Agent: "a"})
					return err
				})
				refuses(t, func() error {
					_, err := s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "existing", Value: v, Agent: "a"})
					return err
				})
			})
		}
	})
	t.Run("descriptions", func(t *testing.T) {
		for name, desc := range BadDescriptions {
			t.Run(name, func(t *testing.T) {
				refuses(t, func() error {
					_, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "new", Description: desc, Value: json.RawMessage(`1`), Agent: "a"})
					return err
				})
				refuses(t, func() error {
					_, err := s.UpdateEntry(ctx, sc, workspace.UpdateRequest{Key: "existing", Description: &desc, Agent: "a"})
					return err
				})
			})
		}
	})
	t.Run("odd", func(t *testing.T) { keepsOdd(t, s, sc) })
}

// idOps are the operations that take an id, each given id. An empty id
// is refused by all but four: it asks create task and new thread to make
// one up, names the workspace itself as a thread's agent, and a task's
// whole lock (LockTaskNamed).
func idOps(ctx context.Context, s workspace.Store, id string) map[string]func() error {
	entry := func(sc workspace.Scope, agent string) func() error {
		return func() error {
			_, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: "k", Value: json.RawMessage(`1`), Agent: agent})
			return err
		}
	}
	done := "done"
	ops := map[string]func() error{
		"create task": func() error {
			_, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: "d"})
			return err
		},
		"store thread task":    entry(workspace.Scope{Kind: workspace.ScopeThread, TaskID: id}, "a"),
		"store session thread": entry(workspace.Scope{Kind: workspace.ScopeSession, TaskID: "t1", ThreadID: id}, "a"),
		"store agent scope":    entry(workspace.Scope{Kind: workspace.ScopeAgent, Agent: id}, "a"),
		"store by agent":       entry(workspace.Scope{Kind: workspace.ScopeGlobal}, id),
		"new thread": func() error {
			_, err := s.NewThread(ctx, workspace.NewThreadRequest{TaskID: "t1", ID: id, From: "a", To: "b"})
			return err
		},
		"update thread": func() error {
			_, err := s.UpdateThread(ctx, "t1", id, "a", workspace.ThreadUpdate{Status: &done})
			return err
		},
		"update thread agent": func() error {
			_, err := s.UpdateThread(ctx, "t1", "t1", id, workspace.ThreadUpdate{Status: &done})
			return err
		},
		"output subtask": func() error {
			_, err := s.WriteOutput(ctx, "t1", id, "a", []byte(`{}`))
			return err
		},
		"review id": func() error {
			_, err := s.WriteReview(ctx, "t1", id, "a", []byte(`{"type":"plan_review","verdict":"approved"}`))
			return err
		},
		"claim agent": func() error {
			_, err := s.WriteClaim(ctx, "t1", id, "st_1")
			return err
		},
		"claim subtask": func() error {
			_, err := s.WriteClaim(ctx, "t1", "a", id)
			return err
		},
		"plan agent": func() error {
			_, err := s.WritePlan(ctx, "t1", id, []byte(`{"subtasks":[]}`))
			return err
		},
		"lock name": func() error {
			l, err := s.LockTaskNamed(ctx, "t1", id, "a")
			if err == nil {
				l.Release()
			}
			return err
		},
	}
	if id == "" {
		delete(ops, "create task")
		delete(ops, "new thread")
		delete(ops, "update thread agent")
		delete(ops, "lock name")
	}
	return ops
}

// sameValue reports whether two JSON texts are the same but for the white
// space between tokens: the same members in the same order, the same
// escapes.
func sameValue(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// keepsOdd stores every odd key and value and reads each back as given.
func keepsOdd(t *testing.T, s workspace.Store, sc workspace.Scope) {
	ctx := context.Background()
	for name, key := range OddKeys {
		desc := "about " + key + " \t\x01\n\u0085 ünï 🔑"
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: key, Description: desc, Value: json.RawMessage(`{"k":1}`), Agent: "a"}); err != nil {
			t.Errorf("store key %s: %v", name, err)
			continue
		}
		e, err := s.GetEntry(ctx, sc, key)
		if err != nil || e.Key != key || e.ShortDescription != desc || string(e.Value) != `{"k":1}` {
			t.Errorf("key %s read back as %q, %q, %s, %v", name, e.Key, e.ShortDescription, e.Value, err)
		}
	}
	for name, v := range OddValues(s.Settings().Limits) {
		key := "odd " + name
		if _, err := s.StoreEntry(ctx, sc, workspace.StoreRequest{Key: key, Value: v, Agent: "a"}); err != nil {
			t.Errorf("store value %s: %v", name, err)
			continue
		}
		if e, err := s.GetEntry(ctx, sc, key); err != nil || !sameValue(e.Value, v) {
			t.Errorf("value %s read back as %.80q, %v; want %.80q", name, e.Value, err, v)
		}
	}
	items, err := s.ListEntries(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, it := range items {
		listed[it.Key] = true
	}
	for _, key := range OddKeys {
		if !listed[key] {
			t.Errorf("key %q is not listed", key)
		}
	}
}
