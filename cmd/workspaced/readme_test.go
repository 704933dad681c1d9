package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
)

// readmeBlock is one shell block of the README's walk-through and the
// output block shown right after it, if any.
type readmeBlock struct {
	line   int // of its opening fence
	script string
	output []string // the lines the README shows it printing
}

// walkthroughSections are the README's sections whose shell blocks make
// one walk-through, run in order.
var walkthroughSections = []string{"## How to start", "## How to use it"}

// readmeWalkthrough reads the shell blocks of the walk-through from the
// README, in order. A block preceded by a line "<!-- not run: WHY -->"
// is left out; WHY must be said.
func readmeWalkthrough(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks []readmeBlock
	in, lastWasSh := false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			in = false
			for _, s := range walkthroughSections {
				in = in || l == s
			}
			continue
		}
		if !in || !strings.HasPrefix(l, "```") {
			continue
		}
		lang := strings.TrimPrefix(l, "```")
		start := i
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		switch {
		case lang == "sh":
			if prev := strings.TrimSpace(lines[start-1]); strings.HasPrefix(prev, "<!-- not run") {
				if why := strings.TrimSuffix(strings.TrimPrefix(prev, "<!-- not run:"), "-->"); strings.TrimSpace(why) == "" || why == prev {
					t.Errorf("README.md:%d: a block not run says why: <!-- not run: WHY -->", start)
				}
				lastWasSh = false
				continue
			}
			blocks = append(blocks, readmeBlock{line: start + 1, script: strings.Join(body, "\n")})
			lastWasSh = true
			continue
		case lang == "" && lastWasSh:
			blocks[len(blocks)-1].output = body
		}
		lastWasSh = false
	}
	return blocks
}

// TestReadmeWalkthrough runs the README's walk-through as a reader pastes
// it: every shell block of "How to start" and "How to use it", in order,
// in one bash in a fresh directory (with the example files the blocks
// copy), $HOME a fresh directory too, and the built binary on PATH —
// which is what the first line's `go install ./cmd/workspaced` leaves, so
// that line is answered by a `go` on PATH that does nothing else. Every
// block must succeed, and print the output the README shows after it.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	blocks := readmeWalkthrough(t)
	if len(blocks) < 5 {
		t.Fatalf("the walk-through has %d shell blocks", len(blocks))
	}
	dir, home, shims := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "examples", "workspace-src"), os.DirFS(filepath.Join(repoRoot(t), "examples", "workspace-src"))); err != nil {
		t.Fatal(err)
	}
	goShim := "#!/bin/sh\n[ \"$*\" = 'install ./cmd/workspaced' ] && exit 0\necho \"go $*: not run by the README's test\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(shims, "go"), []byte(goShim), 0o755); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	// Background jobs (the daemon, the panel) end with the script.
	script.WriteString("set -e -o pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n")
	for i, b := range blocks {
		fmt.Fprintf(&script, "echo '@@ block %d'\n%s\n", i, b.script)
	}
	script.WriteString("echo '@@ end'\n")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(clitest.CleanEnv(), "HOME="+home,
		"PATH="+shims+string(os.PathListSeparator)+filepath.Dir(clitest.Bin())+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	outs := splitBlocks(stdout.String())
	if err != nil {
		last := len(outs) - 1
		where := "before the first block"
		if last >= 0 && last < len(blocks) {
			where = fmt.Sprintf("in the block at README.md:%d", blocks[last].line)
		}
		t.Fatalf("the walk-through failed %s: %v\nstdout:\n%s\nstderr:\n%s", where, err, stdout.String(), stderr.String())
	}
	if _, ok := outs[len(blocks)]; !ok {
		t.Fatalf("the walk-through stopped early:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	for i, b := range blocks {
		for _, want := range b.output {
			if want = strings.TrimSpace(want); want != "" && !strings.Contains(outs[i], want) {
				t.Errorf("README.md:%d: the block did not print %q; it printed:\n%s", b.line, want, outs[i])
			}
		}
	}
	// What the blocks say they print, and what the walk-through left.
	for _, c := range []struct{ command, want string }{
		{"task create --id arc1", "arc1"},
		{"env get --task arc1 --key deadline", `"2024-01-21"`},
		{"env get --thread th_solver --key observed_patterns", "rotation_180"},
	} {
		found := false
		for i, b := range blocks {
			if strings.Contains(b.script, c.command) {
				found = true
				if !strings.Contains(outs[i], c.want) {
					t.Errorf("README.md:%d: %q did not print %q:\n%s", b.line, c.command, c.want, outs[i])
				}
			}
		}
		if !found {
			t.Errorf("the walk-through has no %q", c.command)
		}
	}
	w := &ws{clitest.At(t, filepath.Join(home, "agents"))}
	if got := w.Ok("thread", "list", "--task", "arc1"); !strings.Contains(got, "th_observer") {
		t.Errorf("the walk-through's task has no thread th_observer:\n%s", got)
	}
}

// splitBlocks cuts a walk-through's stdout at its "@@ block N" lines (and
// "@@ end", kept as the index after the last block).
func splitBlocks(out string) map[int]string {
	m := map[int]string{}
	cur := -1
	var b strings.Builder
	flush := func() {
		if cur >= 0 {
			m[cur] = b.String()
		}
		b.Reset()
	}
	for _, l := range strings.SplitAfter(out, "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(l), "@@ block "); ok {
			flush()
			cur, _ = strconv.Atoi(n)
			continue
		}
		if strings.TrimSpace(l) == "@@ end" {
			flush()
			cur = len(m)
			m[cur] = ""
			cur = -1
			continue
		}
		b.WriteString(l)
	}
	flush()
	return m
}
