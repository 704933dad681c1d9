package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/poll"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestOpen: the audit file is created private and appended to; one that
// others may read is refused, saying how to fix it.
func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 {
		l, err := Open(path, Rotation{})
		if err != nil {
			t.Fatal(err)
		}
		l.Record(context.Background(), Record{Door: DoorMCP, Action: "store_memory", Outcome: OK, Agent: "a", Token: "tk_0123456789ab", From: "127.0.0.1:1"})
		l.Record(context.Background(), Record{Door: DoorPanel, Action: "login", Outcome: Refused, From: "127.0.0.1:2", Reason: "not the token"})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if n := strings.Count(string(data), "\n"); n != 2*(i+1) {
			t.Fatalf("after %d opens: %d lines, want %d (appended)", i+1, n, 2*(i+1))
		}
	}
	data, _ := os.ReadFile(path)
	var first map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["msg"] != "audit" || first["agent"] != "a" || first["token"] != "tk_0123456789ab" || first["level"] != "INFO" {
		t.Fatalf("record: %v", first)
	}
	if _, ok := first["user"]; ok {
		t.Fatalf("an empty field is written: %v", first)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	os.Chmod(path, 0o644)
	if _, err := Open(path, Rotation{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a file others may read: %v", err)
	}
	var nilLog *Log
	nilLog.Record(context.Background(), Record{}) // records nothing, does not fail
}

// TestRotate: an audit file past its bound is renamed aside and a new one
// begun, private like the first; only the newest rotated files are kept,
// and no record is lost from those kept.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path, Rotation{MaxMegabytes: 1, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Records of about 1 KiB: 4 MiB of them rotate the file 3 or 4 times.
	reason := strings.Repeat("r", 900)
	const n = 4 << 10
	for i := range n {
		l.Record(context.Background(), Record{Door: DoorMCP, Action: "x", Outcome: Refused, Target: "key=k" + strconv.Itoa(i), Reason: reason})
	}
	rotated := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, "audit-*.jsonl"))
		return m
	}
	// The rotated files past Keep are removed in the background.
	poll.Until(t, 10*time.Second, "two rotated files kept", func() (bool, string) {
		return len(rotated()) == 2, strings.Join(rotated(), " ")
	})
	lines := 0
	for _, p := range append(rotated(), path) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || fi.Size() > 1<<20 {
			t.Errorf("%s: mode %v, %d bytes (bound 1 MiB)", p, fi.Mode(), fi.Size())
		}
		data, _ := os.ReadFile(p)
		lines += strings.Count(string(data), "\n")
	}
	// The current file and two full rotated ones: more than two MiB of
	// the newest records, ending with the last.
	if lines < 2*(1<<20)/1100 || lines >= n {
		t.Fatalf("%d records kept of %d", lines, n)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "key=k"+strconv.Itoa(n-1)) {
		t.Fatal("the last record is not in the current file")
	}
}

// TestTarget: what a call names, from its arguments; nothing from
// arguments that are not an object; long values cut.
func TestTarget(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{`{"scope":"global","key":"plan","value":{"x":1}}`, "scope=global key=plan"},
		{`{"subtask_id":"st_1"}`, "subtask_id=st_1"},
		{`{"key":7}`, ""},
		{`[1,2]`, ""},
		{`not json`, ""},
		{``, ""},
		{`{"key":"` + strings.Repeat("k", 300) + `"}`, "key=" + strings.Repeat("k", maxValue) + "…"},
	} {
		if got := Target(json.RawMessage(c.args)); got != c.want {
			t.Errorf("Target(%.40s) = %q, want %q", c.args, got, c.want)
		}
	}
	var b bytes.Buffer
	New(slog.New(slog.NewTextHandler(&b, nil))).Record(context.Background(), Record{Door: DoorMCP, Action: "x", Outcome: Refused, Target: "key=a b\nc"})
	if !strings.Contains(b.String(), "level=WARN msg=audit") || strings.Count(b.String(), "\n") != 1 {
		t.Fatalf("a refusal on the server's log: %q", b.String())
	}
}
