package sqlite_test

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/storetest"
)

// failsClearly runs the binary with stdin and checks it exits code with
// one "workspaced: …" error and a hint naming want, and nothing on stdout.
func failsClearly(t *testing.T, w *clitest.WS, code int, want, stdin string, args ...string) {
	t.Helper()
	r := w.RunIn(stdin, args...)
	if r.Code != code || !strings.HasPrefix(r.Stderr, "workspaced: ") || !strings.Contains(r.Stderr, want) || r.Stdout != "" {
		t.Errorf("workspaced %.120q: want exit %d and an error naming %q: %.600v", args, code, want, r)
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && jsonEqual(x, y)
}

func jsonEqual(x, y any) bool {
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(bx, by)
}

// TestBadInputCLI: through the CLI on a sqlite: root, bad ids, keys and
// values (the tables every store is held to) are refused with a clear
// error and exit 1, and change nothing; odd keys, values and texts that
// only look hostile are stored and read back as given; nothing is lost.
func TestBadInputCLI(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	w.Serve()
	lim := workspace.Settings{}.WithDefaults().Limits

	for name, id := range storetest.BadIDs {
		if strings.ContainsRune(id, 0) {
			continue // no argument holds a NUL: the values below do
		}
		t.Run("id "+name, func(t *testing.T) {
			failsClearly(t, w, 1, "id", "", "task", "create", "--id", id, "--description", "d")
			if name == "sql" || name == "slash" || name == "10KB" {
				failsClearly(t, w, 1, "agent", "", "claim", "--task", "t1", "--subtask", "s1", "--agent", id)
				failsClearly(t, w, 1, "id", `{"summary":"s"}`, "output", "write", "--task", "t1", "--subtask", id, "--agent", "w1", "--file", "-")
			}
		})
	}
	for name, key := range storetest.BadKeys {
		if strings.ContainsRune(key, 0) || key == "" {
			continue
		}
		t.Run("key "+name, func(t *testing.T) {
			failsClearly(t, w, 1, "key", "", "env", "store", "--task", "t1", "--key", key, "--description", "d", "--value", "1")
		})
	}
	for name, v := range storetest.BadValues(lim) {
		t.Run("value "+name, func(t *testing.T) {
			failsClearly(t, w, 1, "value", string(v), "env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value-file", "-")
		})
	}
	failsClearly(t, w, 1, "UTF-8", "{\"summary\":\"a\xffb\"}", "output", "write", "--task", "t1", "--subtask", "s1", "--agent", "w1", "--file", "-")
	failsClearly(t, w, 1, "JSON", "{\"summary\":\"a\x00b\"}", "output", "write", "--task", "t1", "--subtask", "s1", "--agent", "w1", "--file", "-")

	// Nothing of the above was kept.
	if out := w.Ok("task", "list", "--json"); strings.Count(out, `"id"`) != 1 {
		t.Errorf("task list after refusals:\n%s", out)
	}
	if out := w.Ok("env", "list", "--task", "t1", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("env list after refusals:\n%s", out)
	}

	// What only looks hostile is kept as given.
	desc := "'); DROP TABLE tasks; -- ключ 🔑 \"quoted\" \\ %00"
	w.Ok("task", "create", "--id", "t2", "--description", desc)
	var task struct {
		Task struct {
			Description string `json:"description"`
		} `json:"task"`
	}
	clitest.Decode(t, w.Ok("task", "show", "--task", "t2", "--json"), &task)
	if task.Task.Description != desc {
		t.Errorf("description read back as %q, want %q", task.Task.Description, desc)
	}
	values := storetest.OddValues(lim)
	keys := []string{}
	for name, key := range storetest.OddKeys {
		v := values["sql string"]
		if name == "unicode" {
			v = values["unicode"]
		}
		w.Ok("env", "store", "--task", "t1", "--key", key, "--description", desc, "--value", string(v))
		var e workspace.Entry
		clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", key, "--json"), &e)
		if e.Key != key || e.ShortDescription != desc || !sameJSON(e.Value, v) {
			t.Errorf("key %s read back as %q %q %s", name, e.Key, e.ShortDescription, e.Value)
		}
		keys = append(keys, key)
	}
	for name, v := range values {
		key := "value " + name
		w.RunIn(string(v), "env", "store", "--task", "t1", "--key", key, "--description", "d", "--value-file", "-")
		var e workspace.Entry
		clitest.Decode(t, w.Ok("env", "get", "--task", "t1", "--key", key, "--json"), &e)
		if !sameJSON(e.Value, v) {
			t.Errorf("value %s read back as %.100s", name, e.Value)
		}
		keys = append(keys, key)
	}
	var items []struct {
		Key string `json:"key"`
	}
	clitest.Decode(t, w.Ok("env", "list", "--task", "t1", "--json"), &items)
	var listed []string
	for _, it := range items {
		listed = append(listed, it.Key)
	}
	sort.Strings(keys)
	sort.Strings(listed)
	if strings.Join(listed, "\n") != strings.Join(keys, "\n") {
		t.Errorf("env list:\n%q\nwant\n%q", listed, keys)
	}
	summary := "'); DROP TABLE products; -- \u0000 🔑"
	out, _ := json.Marshal(map[string]string{"summary": summary})
	w.RunIn(string(out), "output", "write", "--task", "t1", "--subtask", "s1", "--agent", "w1", "--file", "-")
	var status statusJSON
	clitest.Decode(t, w.Ok("status", "--json"), &status)
	if len(status.Tasks) != 2 {
		t.Errorf("status after the odd input: %+v", status)
	}
}
