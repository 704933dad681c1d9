package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/service"
)

// TestValidateReportsSkipped: files env list skips — a key field given
// twice, a key that does not match its file name, a name that is not
// UTF-8 — and a symlinked task directory make validate fail, each named
// with its reason; env list still skips them, with a warning each.
func TestValidateReportsSkipped(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	w.Ok("env", "store", "--task", "t1", "--key", "good", "--description", "d", "--value", "1")
	if got := w.Ok("validate"); got != "ok 6 files\n" {
		t.Fatalf("validate of a sound tree printed %q", got)
	}
	env := filepath.Join(w.Root, "tasks", "t1", "env")
	entry := func(key string) string {
		return `{"key": "` + key + `", "short_description": "d", "stored_by": "a", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "version": 1, "value": 1}` + "\n"
	}
	files := map[string]string{
		"dup.json":         strings.Replace(entry("dup"), `"key": "dup"`, `"key": "dup", "key": "dup"`, 1),
		"mismatch.json":    entry("other"),
		"\xff\x1b[2J.json": entry("x"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(env, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("t1", filepath.Join(w.Root, "tasks", "alias")); err != nil {
		t.Fatal(err)
	}

	r := w.Run("env", "list", "--task", "t1")
	if r.Code != 0 || !strings.Contains(r.Stdout, "good") || strings.Count(r.Stderr, "workspaced: warning: skipped ") != 3 {
		t.Fatalf("env list: want good listed and three warnings:\n%v", r)
	}
	if strings.Contains(r.Stderr, "\x1b") {
		t.Fatalf("env list printed a file name's escape sequence raw:\n%q", r.Stderr)
	}

	r = w.Run("validate")
	want := []string{
		filepath.Join(w.Root, "tasks", "alias") + `: (root): skipped: is a symlink (to "t1")`,
		filepath.Join(env, "dup.json") + `: (root): skipped: field "key" appears twice`,
		filepath.Join(env, "mismatch.json") + `: (root): skipped: holds key "other", which does not match its file name`,
		// Quoted: the name is not UTF-8 and holds an escape sequence.
		strconv.Quote(filepath.Join(env, "\xff\x1b[2J.json")) + `: (root): skipped: `,
	}
	lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	if r.Code != exitFailure || len(lines) != len(want) {
		t.Fatalf("validate: want exit 1 and %d lines:\n%v", len(want), r)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, want[i]) {
			t.Errorf("line %d = %q, want it to start with %q", i, l, want[i])
		}
	}
	if !strings.HasPrefix(r.Stderr, "workspaced: validate: 4 of 10 files invalid (4 problems)") || !strings.Contains(r.Stderr, "\nhint: ") {
		t.Fatalf("validate stderr:\n%s", r.Stderr)
	}

	var rep service.ValidateReport
	clitest.Decode(t, w.Run("validate", "--json").Stdout, &rep)
	skipped := 0
	for _, p := range rep.Problems {
		if p.Rule == "skipped" {
			skipped++
		}
	}
	if rep.Invalid != 4 || skipped != 4 {
		t.Fatalf("validate --json: %+v", rep)
	}

	// A file named on the command line is judged alone.
	r = w.Run("validate", filepath.Join(env, "mismatch.json"))
	if r.Code != exitFailure || !strings.Contains(r.Stdout, "mismatch.json: (root): skipped: ") || strings.Count(r.Stdout, "\n") != 1 {
		t.Fatalf("validate FILE:\n%v", r)
	}
	if got := w.Ok("validate", filepath.Join(env, "good.json")); got != "ok 1 files\n" {
		t.Fatalf("validate of a sound file printed %q", got)
	}

	// Fixed, it is ok again.
	for name := range files {
		os.Remove(filepath.Join(env, name))
	}
	os.Remove(filepath.Join(w.Root, "tasks", "alias"))
	if got := w.Ok("validate"); got != "ok 6 files\n" {
		t.Fatalf("validate after the fix printed %q", got)
	}
}
