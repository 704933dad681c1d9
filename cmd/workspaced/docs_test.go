package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// repoRoot is the repository's top directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// commandFlags maps each command to the flags its --help and its
// subcommands' list, read from the binary.
func commandFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	w := &ws{clitest.At(t, "")}
	flags := map[string]map[string]bool{}
	for _, p := range helpPaths(t) {
		if flags[p[0]] == nil {
			flags[p[0]] = map[string]bool{}
		}
		for _, f := range parseHelp(w.Ok(append(append([]string{}, p...), "--help")...)).flags {
			flags[p[0]][f.name] = true
		}
	}
	return flags
}

var reDocFlag = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9-]*)`)

// docFlags lists the --flags named in text.
func docFlags(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range reDocFlag.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// globalFlags are accepted by every command.
var globalFlags = map[string]bool{"root": true, "help": true, "version": true}

// TestCLIDocMatchesHelp compares each command's --help with its section
// of docs/CLI.md: every flag the help lists is in the section, and every
// flag the section names is one the command takes.
func TestCLIDocMatchesHelp(t *testing.T) {
	t.Parallel()
	doc := readFile(t, filepath.Join(repoRoot(t), "docs", "CLI.md"))
	all := commandFlags(t)
	sections := map[string]string{}          // command → the text of its sections
	together := map[string]map[string]bool{} // command → the commands a section shares with it
	for _, part := range strings.Split(doc, "\n## ")[1:] {
		heading, body, _ := strings.Cut(part, "\n")
		var named []string
		for _, word := range strings.FieldsFunc(heading, func(r rune) bool { return r == ' ' || r == '/' || r == ',' || r == '`' }) {
			if _, ok := all[word]; ok {
				named = append(named, word)
			}
		}
		for _, c := range named {
			sections[c] += body + "\n"
			if together[c] == nil {
				together[c] = map[string]bool{}
			}
			for _, o := range named {
				together[c][o] = true
			}
		}
	}
	for cmd, flags := range all {
		text, ok := sections[cmd]
		if !ok {
			t.Errorf("docs/CLI.md has no section for %q", cmd)
			continue
		}
		text = withoutOtherCommands(text, together[cmd], all)
		allowed := map[string]bool{}
		for c := range together[cmd] {
			for f := range all[c] {
				allowed[f] = true
			}
		}
		var missing, unknown []string
		for f := range flags {
			if !regexp.MustCompile(`(^|[^\w-])--` + regexp.QuoteMeta(f) + `\b`).MatchString(text) {
				missing = append(missing, "--"+f)
			}
		}
		for f := range docFlags(text) {
			if !allowed[f] && !globalFlags[f] {
				unknown = append(unknown, "--"+f)
			}
		}
		sort.Strings(missing)
		sort.Strings(unknown)
		if len(missing) > 0 {
			t.Errorf("docs/CLI.md on %q lacks %v, which its --help lists", cmd, missing)
		}
		if len(unknown) > 0 {
			t.Errorf("docs/CLI.md on %q names %v, which %q does not take", cmd, unknown, cmd)
		}
	}
}

// commandLines finds the command lines in text: for each "workspaced
// [--root DIR] CMD ...", CMD and its arguments up to a comment, a pipe,
// the end of a shell command or of a code span, or a "--" after which the
// arguments are another command's. Continued lines are joined first.
func commandLines(text string) [][2]string {
	text = strings.ReplaceAll(text, "\\\n", " ")
	var out [][2]string
	parts := strings.Split(text, "workspaced ")
	for _, part := range parts[1:] {
		if i := strings.IndexAny(part, "#|;&`()'\"\n"); i >= 0 {
			part = part[:i]
		}
		part, _, _ = strings.Cut(part+" ", " -- ")
		fields := strings.Fields(part)
		for len(fields) >= 2 && (fields[0] == "--root" || fields[0] == "[--root") {
			fields = fields[2:]
		}
		if len(fields) == 0 {
			continue
		}
		out = append(out, [2]string{fields[0], strings.Join(fields[1:], " ")})
	}
	return out
}

// withoutOtherCommands removes from text the arguments of command lines
// of commands other than those in keep, so that a section's example that
// runs another command does not count as naming that command's flags.
func withoutOtherCommands(text string, keep map[string]bool, all map[string]map[string]bool) string {
	var b strings.Builder
	parts := strings.Split(text, "workspaced ")
	b.WriteString(parts[0])
	for _, part := range parts[1:] {
		b.WriteString("workspaced ")
		fields := strings.Fields(part)
		if len(fields) > 0 {
			if _, known := all[fields[0]]; known && !keep[fields[0]] {
				if i := strings.IndexAny(part, "#|;&`()'\"\n"); i >= 0 {
					part = part[i:]
				} else {
					part = ""
				}
			}
		}
		b.WriteString(part)
	}
	return b.String()
}

// TestDocsNameRealFlags: every command line in the README and docs/ uses
// only flags its command takes.
func TestDocsNameRealFlags(t *testing.T) {
	t.Parallel()
	flags := commandFlags(t)
	files, _ := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	files = append(files, filepath.Join(repoRoot(t), "README.md"))
	checked := 0
	for _, f := range files {
		for _, l := range commandLines(readFile(t, f)) {
			cmd := l[0]
			known, ok := flags[cmd]
			if !ok {
				continue // prose ("workspaced is ..."), not a command line
			}
			checked++
			for fl := range docFlags(l[1]) {
				if !known[fl] && !globalFlags[fl] {
					t.Errorf("%s: \"workspaced %s %s\": %s takes no --%s", filepath.Base(f), cmd, l[1], cmd, fl)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d command lines", checked)
	}
}

// TestDocsReferToRepositoryFiles: the README, CHANGELOG and docs/ link
// and name only documents that are in the repository.
func TestDocsReferToRepositoryFiles(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md"))
	reLink := regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)
	reDoc := regexp.MustCompile(`\b[\w./-]*[A-Z][A-Z_]*\.md\b`) // README.md, docs/CLI.md; not notes.md, a file of a task
	for _, f := range files {
		text := readFile(t, f)
		dir := filepath.Dir(f)
		for _, m := range reLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(target))); err != nil {
				t.Errorf("%s links %s, which is not in the repository", filepath.Base(f), target)
			}
		}
		for _, name := range reDoc.FindAllString(text, -1) {
			if strings.Contains(name, "://") {
				continue
			}
			found := false
			for _, base := range []string{dir, root, filepath.Join(root, "docs")} {
				if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(name))); err == nil {
					found = true
				}
			}
			if !found {
				t.Errorf("%s names %s, which is not in the repository", filepath.Base(f), name)
			}
		}
	}
}

// TestREADMELength keeps the README short enough to be read through.
func TestREADMELength(t *testing.T) {
	t.Parallel()
	text := readFile(t, filepath.Join(repoRoot(t), "README.md"))
	if n := strings.Count(text, "\n"); n > 450 {
		t.Errorf("README.md has %d lines; keep it to 450 and move detail into docs/", n)
	}
}
