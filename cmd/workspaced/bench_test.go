package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/bench"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/workspace"
)

// TestBenchHelp checks that the help names the flags people use and not
// the ones of the agent processes the workload starts.
func TestBenchHelp(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	help := w.Ok("bench", "--help")
	for _, f := range []string{"--quick", "--json", "--dir DIR", "--ext4", "--vs-daemon PATH", "--pairs N", "--row 32|1", "--no-python", "--no-files"} {
		if !strings.Contains(help, f) {
			t.Errorf("help lacks %s:\n%s", f, help)
		}
	}
	if strings.Contains(help, "agent-") {
		t.Errorf("help shows the agent processes' flags:\n%s", help)
	}
	for _, line := range strings.Split(help[strings.Index(help, "Flags:"):], "\n")[1:] {
		if f := strings.Fields(line); len(f) == 1 {
			t.Errorf("flag without a description: %q", line)
		}
	}
	// The agent mode refuses to start without its flags (usage, exit 2).
	r := w.Run("bench", "agent")
	if r.Code != 2 || !strings.Contains(r.Stderr, "--agent-root") {
		t.Errorf("bench agent without flags: want exit 2 naming --agent-root, got %v", r)
	}
}

// TestBenchFlagMistakes: flags that cannot work are refused as usage
// errors, before anything is measured.
func TestBenchFlagMistakes(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	for _, tt := range []struct {
		name string
		args []string
		say  string
	}{
		{"pairs without a daemon to compare", []string{"--pairs", "3"}, "--pairs goes with --vs-daemon"},
		{"daemon A without a daemon to compare", []string{"--daemon", clitest.Bin()}, "--daemon goes with --vs-daemon"},
		{"daemon A that is not there", []string{"--vs-daemon", clitest.Bin(), "--daemon", "/nonexistent/workspaced"}, "--daemon /nonexistent/workspaced: not an executable file"},
		{"no pairs", []string{"--vs-daemon", clitest.Bin(), "--pairs", "0"}, "--pairs must be at least 1"},
		{"a daemon that is not there", []string{"--vs-daemon", "/nonexistent/workspaced"}, "not an executable file"},
		{"quick paired rounds", []string{"--vs-daemon", clitest.Bin(), "--quick"}, "--quick and --no-python do not apply"},
		{"row without a daemon to compare", []string{"--row", "1"}, "--row goes with --vs-daemon"},
		{"a row there is not", []string{"--vs-daemon", clitest.Bin(), "--row", "8"}, "--row is 32 (agents at once) or 1 (one agent's marker → state), not 8"},
		{"sizes without scale", []string{"--sizes", "100"}, "--sizes and --profile go with --scale"},
		{"profile without scale", []string{"--profile", "p"}, "--sizes and --profile go with --scale"},
		{"scale with paired rounds", []string{"--scale", "--vs-daemon", clitest.Bin()}, "--scale runs only its own rows"},
		{"scale quick", []string{"--scale", "--quick"}, "--scale runs only its own rows"},
		{"a size too small", []string{"--scale", "--sizes", "100,50"}, `not "50"`},
		{"a size not a number", []string{"--scale", "--sizes", "1k"}, `not "1k"`},
		{"an empty size", []string{"--scale", "--sizes", "100,"}, `not ""`},
		{"a size too large", []string{"--scale", "--sizes", "1000000"}, `not "1000000"`},
		{"no files on a directory root", []string{"--quick", "--no-files"}, "it needs a sqlite: or postgres:// root"},
		{"no files with scale", []string{"--scale", "--no-files"}, "--no-files goes with the workload, not with --scale or --vs-daemon"},
		{"no files with paired rounds", []string{"--vs-daemon", clitest.Bin(), "--no-files"}, "--no-files goes with the workload"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := w.Run(append([]string{"bench"}, tt.args...)...)
			if r.Code != 2 || !strings.Contains(r.Stderr, tt.say) {
				t.Errorf("bench %q: want exit 2 saying %q, got %v", tt.args, tt.say, r)
			}
		})
	}
}

// TestBenchExt4NeedsRoot: without root --ext4 fails at once, saying so and
// pointing at --dir, and leaves nothing behind.
func TestBenchExt4NeedsRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	mnt, err := mountExt4(context.Background(), parent, false)
	if mnt != nil || !errors.Is(err, bench.ErrNeedsRoot) {
		t.Fatalf("mountExt4 as non-root = %v, %v; want ErrNeedsRoot", mnt, err)
	}
	if !strings.Contains(err.Error(), "root") || !strings.Contains(workspace.HintOf(err), "--dir DIR") {
		t.Errorf("error %q, hint %q: want root named and --dir suggested", err, workspace.HintOf(err))
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("%d files left in %s", len(left), parent)
	}
	if os.Geteuid() != 0 {
		r := newWS(t).Run("bench", "--ext4", "--quick", "--dir", parent)
		if r.Code != 1 || !strings.Contains(r.Stderr, "needs root") || !strings.Contains(r.Stderr, "hint:") {
			t.Errorf("bench --ext4 as non-root: want exit 1 saying it needs root with a hint, got %v", r)
		}
	}
}
