package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestMessagesUseAbsolutePaths: with a relative --root, the paths a
// command prints — what it wrote, what failed, what the hint names — are
// absolute, so they work from any directory.
func TestMessagesUseAbsolutePaths(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	rel := filepath.Base(w.Root) // the root, relative to the directory the binary runs in
	claim := strings.TrimSpace(w.Ok("--root", rel, "claim", "--task", "t1", "--agent", "w1", "--subtask", "st_1"))
	if !strings.HasPrefix(claim, filepath.Join(w.Root, "tasks", "t1", ".claim.w1.")) {
		t.Errorf("claim printed %q, want an absolute path under %s", claim, w.Root)
	}
	r := w.Fails(exitNotFound, filepath.Join(w.Root, "tasks", "t1", "backups"), "--root", rel, "backup", "restore", "--task", "t1")
	if strings.Contains(r.Stderr, " tasks/") {
		t.Errorf("a relative path in the error: %v", r)
	}
	w.writeFile("friction/friction.json", "garbage")
	r = w.Fails(exitFailure, "friction log is invalid", "--root", rel, "friction", "list")
	if !strings.Contains(r.Stderr, "hint: fix or move "+filepath.Join(w.Root, "friction", "friction.json")) {
		t.Errorf("the hint does not name the file absolute: %v", r)
	}
	r = w.Fails(exitFailure, filepath.Join(w.Dir, "nope.json"), "--root", rel, "env", "store", "--task", "t1", "--key", "k", "--description", "d", "--value-file", "nope.json")
	if !strings.Contains(r.Stderr, "hint: check the path (a relative one starts at "+w.Dir+")") {
		t.Errorf("an unreadable --value-file without its fix: %v", r)
	}
	out := w.Ok("--root", "ws2", "init")
	if !strings.Contains(out, "workspaced --root "+filepath.Join(w.Dir, "ws2")+" task create") {
		t.Errorf("init's next steps do not name the root absolute:\n%s", out)
	}
}

// TestEnvGetCompact: --compact prints the value, or with --json the
// entry, as canonical JSON on one line.
func TestEnvGetCompact(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "grid", "--description", "d", "--value", `{"b": [1, 2], "a": "x<y"}`)
	if got := w.Ok("env", "get", "--task", "t1", "--key", "grid", "--compact"); got != `{"b":[1,2],"a":"x<y"}`+"\n" {
		t.Errorf("get --compact printed %q", got)
	}
	got := w.Ok("env", "get", "--task", "t1", "--key", "grid", "--compact", "--json")
	if strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, `{"key":"grid","short_description":"d",`) || !strings.HasSuffix(got, `"value":{"b":[1,2],"a":"x<y"}}`+"\n") {
		t.Errorf("get --compact --json printed %q", got)
	}
}

// TestServeLogsDurationsForPeople: the text log writes durations as
// people do (24h, not 24h0m0s); workspace.json is written the same way.
func TestServeLogsDurationsForPeople(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	cmd := clitest.Command("serve", "--rescan", "90s")
	cmd.Dir, cmd.Env = w.Dir, w.Env
	logs := &clitest.Log{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	clitest.Eventually(t, "the daemon to log that it serves", func() (bool, string) {
		return strings.Contains(logs.String(), "msg=ready"), logs.String()
	})
	line := logs.String()
	if !strings.Contains(line, " rescan=1m30s ") || !strings.Contains(line, " grace=5s ") || !strings.Contains(line, " cleanup_interval=24h") || strings.Contains(line, "0m0s") {
		t.Errorf("durations not written for people:\n%s", line)
	}
	w.RunIn("", "init")
	settings := readFile(t, filepath.Join(w.Root, "workspace.json"))
	if !strings.Contains(settings, `"cleanup_interval": "24h"`) || !strings.Contains(settings, `"timeout_low": "30m"`) {
		t.Errorf("workspace.json:\n%s", settings)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
