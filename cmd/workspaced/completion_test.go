package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
)

// completionCases are command lines with the cursor at their end, and
// words the completion must offer and must not offer there.
var completionCases = []struct {
	line      string // after "workspaced "
	want, not []string
}{
	{"en", []string{"env"}, []string{"init"}},
	{"env ", []string{"store", "get", "list", "update", "delete"}, []string{"--key"}},
	{"env get --", []string{"--key", "--json", "--compact", "--task", "--thread"}, []string{"--value", "--value-file", "--agent", "--if-version"}},
	{"env store --", []string{"--value", "--value-file", "--description", "--agent"}, []string{"--compact"}},
	{"--root /tmp env s", []string{"store"}, []string{"get"}},
	{"serve --log-format ", []string{"text", "json"}, []string{"--rescan"}},
	{"serve --", []string{"--rescan", "--grace", "--log-level"}, []string{"--json"}},
	{"memory list --scope ", []string{"global", "agent", "session"}, nil},
	{"done --task t1 --status ", []string{"completed", "failed", "cancelled"}, nil},
	{"friction add --type ", []string{"worker_failure", "escalation"}, nil},
	{"completion ", []string{"bash", "zsh", "fish"}, nil},
	{"schema ", []string{"plan", "entry"}, nil},
	{"thread ", []string{"new", "chain"}, []string{"store"}},
}

// completionScript writes `workspaced completion SHELL` to a file.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	w := &ws{clitest.At(t, "")}
	p := filepath.Join(w.Dir, "workspaced."+shell)
	if err := os.WriteFile(p, []byte(w.Ok("completion", shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// shellWords is the command line of a completion case as the shell's
// words, quoted: "workspaced", the case's words, and an empty word last
// when the line ends in a space (a new word being completed).
func shellWords(line string) string {
	words := append([]string{"workspaced"}, strings.Fields(line)...)
	if strings.HasSuffix(line, " ") {
		words = append(words, "")
	}
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = shq(w)
	}
	return strings.Join(q, " ")
}

// caseLines splits a shell's output into its lines, failing t unless it
// printed one a completion case.
func caseLines(t *testing.T, shell string, out []byte) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(completionCases) {
		t.Fatalf("%s printed %d lines for %d cases:\n%s", shell, len(lines), len(completionCases), out)
	}
	return lines
}

// checkOffers checks one case's offers, one word a line.
func checkOffers(t *testing.T, shell, line, out string, want, not []string) {
	t.Helper()
	got := map[string]bool{}
	for _, f := range strings.Fields(out) {
		got[f] = true
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("%s: 'workspaced %s<TAB>' does not offer %q; offers %q", shell, line, w, out)
		}
	}
	for _, w := range not {
		if got[w] {
			t.Errorf("%s: 'workspaced %s<TAB>' offers %q", shell, line, w)
		}
	}
}

func needShell(t *testing.T, shell string) string {
	t.Helper()
	p, err := exec.LookPath(shell)
	if err != nil {
		optdep.Skipf(t, shell, "%s is not installed (Debian: apt-get install %s; .ci/run installs it)", shell, shell)
	}
	return p
}

// TestCompletionBash sources the script in bash and asks its function
// what it offers, as bash does on a TAB.
func TestCompletionBash(t *testing.T) {
	t.Parallel()
	bash := needShell(t, "bash")
	script := completionScript(t, "bash")
	var b strings.Builder
	b.WriteString("source " + shq(script) + "\n")
	for _, c := range completionCases {
		b.WriteString("COMP_WORDS=(" + shellWords(c.line) + "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _workspaced; echo \"${COMPREPLY[*]}\"\n")
	}
	out, err := exec.Command(bash, "--norc", "--noprofile", "-c", b.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	lines := caseLines(t, "bash", out)
	for i, c := range completionCases {
		checkOffers(t, "bash", c.line, lines[i], c.want, c.not)
	}
}

// TestCompletionZsh loads the script in a plain zsh with compadd and
// _files stood in for (they exist only inside a completion widget) and
// checks what it offers.
func TestCompletionZsh(t *testing.T) {
	t.Parallel()
	zsh := needShell(t, "zsh")
	script := completionScript(t, "zsh")
	var b strings.Builder
	b.WriteString("compdef() { : }\nsource " + shq(script) + "\n")
	b.WriteString("compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -r -- \"$*\" }\n_files() { print -r -- _files }\n")
	for _, c := range completionCases {
		// zsh's compadd filters by the prefix itself: the function offers
		// every word of its kind, so only wanted words are checked here.
		b.WriteString("words=(" + shellWords(c.line) + "); CURRENT=$#words; print -r -- \"$(_workspaced)\"\n")
	}
	out, err := exec.Command(zsh, "-f", "-c", b.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("zsh: %v\n%s", err, out)
	}
	lines := caseLines(t, "zsh", out)
	for i, c := range completionCases {
		var not []string
		for _, n := range c.not {
			if strings.HasPrefix(n, "--") || strings.HasSuffix(c.line, " ") {
				not = append(not, n)
			}
		}
		checkOffers(t, "zsh", c.line, lines[i], c.want, not)
	}
}

// TestCompletionFish asks fish itself what it completes (complete -C).
func TestCompletionFish(t *testing.T) {
	t.Parallel()
	fish := needShell(t, "fish")
	script := completionScript(t, "fish")
	for _, c := range completionCases {
		cmd := "source " + fishq(script) + "; complete -C " + fishq("workspaced "+c.line)
		out, err := exec.Command(fish, "--no-config", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("fish: %v\n%s", err, out)
		}
		var words []string
		for _, l := range strings.Split(string(out), "\n") {
			w, _, _ := strings.Cut(l, "\t")
			if w != "" {
				words = append(words, w)
			}
		}
		// fish prints a partly typed word whole ("s" → "store"), and a
		// flag's value without the flag.
		checkOffers(t, "fish", c.line, strings.Join(words, " "), c.want, c.not)
	}
}

func TestCompletionUsage(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	w.Fails(exitUsage, "name one shell", "completion")
	w.Fails(exitUsage, `unknown shell "tcsh"`, "completion", "tcsh")
}
