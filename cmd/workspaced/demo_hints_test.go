package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestDemoHintsWork runs, as printed, every command the demo's closing
// "Where to look" suggests, from another directory: each works, and the
// git one leaves a clean history without lock or temporary files.
func TestDemoHintsWork(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	root := filepath.Join(w.Dir, "run dir") // a space: the commands must quote it
	out := w.Ok("demo", "--root", root, "--time-scale", "0.01", "--quiet")
	_, where, ok := strings.Cut(out, "\nWhere to look\n")
	if !ok {
		t.Fatalf("no 'Where to look' in:\n%s", out)
	}
	_, gitErr := exec.LookPath("git")
	elsewhere := t.TempDir()
	ran := 0
	for _, line := range strings.Split(strings.TrimSpace(where), "\n") {
		label, cmd, ok := strings.Cut(strings.TrimSpace(line), ":  ")
		if !ok || label == "the tree" {
			continue
		}
		cmd = strings.TrimSpace(cmd)
		if strings.Contains(cmd, "git ") && gitErr != nil {
			t.Logf("git is not installed: not running %q", cmd)
			continue
		}
		if !strings.HasPrefix(cmd, clitest.Bin()+" ") && !strings.HasPrefix(cmd, "cd ") {
			t.Errorf("%s: %q does not run this binary by its path (it is not on $PATH)", label, cmd)
		}
		sh := exec.Command("sh", "-c", cmd)
		sh.Dir = elsewhere
		sh.Env = append(clitest.CleanEnv(), "HOME="+elsewhere, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		got, err := sh.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %q failed: %v\n%s", label, cmd, err, got)
		}
		ran++
	}
	if ran < 4 {
		t.Fatalf("ran %d suggested commands, want at least 4:\n%s", ran, where)
	}
	if gitErr == nil {
		git := exec.Command("git", "status", "--porcelain", "--ignored=no")
		git.Dir = root
		st, err := git.CombinedOutput()
		if err != nil || len(st) != 0 {
			t.Errorf("git status after the suggested commit: %v\n%s", err, st)
		}
		ls := exec.Command("git", "ls-files")
		ls.Dir = root
		files, _ := ls.Output()
		for _, f := range strings.Fields(string(files)) {
			if strings.Contains(f, ".locks/") || strings.HasSuffix(f, ".workspaced.lock") || strings.Contains(f, ".tmp-") {
				t.Errorf("git tracks %s", f)
			}
		}
	}
}

// TestCommandFor: how the demo names this binary in what it suggests.
func TestCommandFor(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, "cmd", "workspaced"), 0o755); err != nil {
		t.Fatal(err)
	}
	onPath := filepath.Join(t.TempDir(), "workspaced")
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "my bin", "workspaced")
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	found := func(string) (string, error) { return onPath, nil }
	goRun := filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "workspaced")
	cases := []struct {
		name, exe, wd string
		look          func(string) (string, error)
		want          string
	}{
		{"go run from the module root", goRun, repo, noPath, "go run ./cmd/workspaced"},
		{"go run from elsewhere", goRun, t.TempDir(), noPath, "go run github.com/workspaced/workspaced/cmd/workspaced"},
		{"the workspaced on $PATH", onPath, repo, found, "workspaced"},
		{"another binary than the one on $PATH", other, repo, found, "'" + other + "'"},
		{"nothing on $PATH", other, repo, noPath, "'" + other + "'"},
	}
	for _, c := range cases {
		if got := commandFor(c.exe, c.wd, c.look); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
