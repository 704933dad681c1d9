package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// helpPaths lists every command and subcommand the binary offers, read
// from 'workspaced help' and from each command's own --help, so that a
// command added later is checked too.
func helpPaths(t *testing.T) [][]string {
	t.Helper()
	w := &ws{clitest.At(t, "")}
	top := w.Ok("help")
	i := strings.Index(top, "\nCommands:\n")
	if i < 0 {
		t.Fatalf("'workspaced help' has no Commands section:\n%s", top)
	}
	var paths [][]string
	for _, line := range strings.Split(top[i+len("\nCommands:\n"):], "\n") {
		m := regexp.MustCompile(`^  ([a-z][a-z-]*)\s{2,}\S`).FindStringSubmatch(line)
		if m == nil {
			break
		}
		paths = append(paths, []string{m[1]})
		for _, s := range parseHelp(w.Ok(m[1], "--help")).subs {
			paths = append(paths, []string{m[1], s[0]})
		}
	}
	if len(paths) < 40 {
		t.Fatalf("found only %d commands and subcommands: %v", len(paths), paths)
	}
	return paths
}

// rePlaceholder is a flag's placeholder: NAME, a|b, or [NAME] for a value
// that may be left out.
var rePlaceholder = regexp.MustCompile(`^(\[([A-Z][A-Z0-9_]*)\]|[A-Z][A-Z0-9_]*|[a-z0-9-]+(\|[a-z0-9-]+)+)$`)

// TestEveryHelp: every command's and subcommand's --help opens with a
// title line, has a usage line, examples and exit codes, lists only the
// flags it takes, each with a named placeholder, and is what 'workspaced
// help CMD [SUB]' prints.
func TestEveryHelp(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	for _, p := range helpPaths(t) {
		t.Run(strings.Join(p, "_"), func(t *testing.T) {
			w.T = t
			out := w.Ok(append(append([]string{}, p...), "--help")...)
			title, _, _ := strings.Cut(out, "\n")
			if !strings.HasPrefix(title, "workspaced "+p[0]) || !strings.Contains(title, " — ") {
				t.Errorf("the first line is not a title (\"workspaced %s — what it does\"): %q", p[0], title)
			}
			for _, want := range []string{"\nUsage:\n  workspaced ", "\nExamples:\n", "\nExit codes:"} {
				if !strings.Contains(out, want) {
					t.Errorf("help lacks %q:\n%s", want, out)
				}
			}
			if ex := strings.Index(out, "\nExamples:\n"); ex >= 0 {
				block, _, _ := strings.Cut(out[ex+len("\nExamples:\n"):], "\n\n")
				if n := strings.Count(block, "workspaced "); n < 2 {
					t.Errorf("help has %d examples, want at least 2:\n%s", n, block)
				}
			}
			text, flags, _ := strings.Cut(out, "\nFlags:\n")
			h := parseHelp(out)
			if n := strings.Count("\n"+flags, "\n  --"); n != len(h.flags) {
				t.Errorf("%d flag lines, %d of them parse:\n%s", n, len(h.flags), flags)
			}
			for _, f := range h.flags {
				if f.name == "root" && p[0] != "demo" {
					t.Errorf("lists the global --root among its own flags")
				}
				if f.arg != "" && (!rePlaceholder.MatchString(f.arg) || f.arg == "VALUE") {
					t.Errorf("--%s has placeholder %q; name what it takes (DUR, N, FILE, a|b)", f.name, f.arg)
				}
				if !strings.Contains(text, "--"+f.name) {
					t.Errorf("--%s is listed under Flags but the usage above never mentions it", f.name)
				}
			}
			if via := w.Ok(append([]string{"help"}, p...)...); via != out {
				t.Errorf("'workspaced help %s' differs from --help", strings.Join(p, " "))
			}
		})
	}
}

// TestHelpListsOwnFlags: a verb lists the flags it reads, not its
// siblings'.
func TestHelpListsOwnFlags(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	cases := []struct {
		args      []string
		has, hasn []string
	}{
		{[]string{"env", "get"}, []string{"key", "json", "compact", "task", "thread"}, []string{"value", "value-file", "description", "if-version", "agent", "root"}},
		{[]string{"env", "list"}, []string{"json", "task"}, []string{"key", "value", "agent", "compact"}},
		{[]string{"env", "store"}, []string{"key", "value", "value-file", "description", "agent"}, []string{"if-version", "compact"}},
		{[]string{"env", "update"}, []string{"if-version", "value"}, []string{"compact"}},
		{[]string{"memory", "get"}, []string{"scope", "agent", "key"}, []string{"value", "description"}},
		{[]string{"serve"}, []string{"rescan", "grace", "cleanup-interval"}, []string{"root", "json"}},
	}
	for _, c := range cases {
		got := map[string]bool{}
		for _, f := range parseHelp(w.Ok(append(c.args, "--help")...)).flags {
			got[f.name] = true
		}
		for _, f := range c.has {
			if !got[f] {
				t.Errorf("%s --help lacks --%s", strings.Join(c.args, " "), f)
			}
		}
		for _, f := range c.hasn {
			if got[f] {
				t.Errorf("%s --help lists --%s, which it does not take", strings.Join(c.args, " "), f)
			}
		}
	}
	serve := w.Ok("serve", "--help")
	for _, want := range []string{"--rescan DUR ", "--grace DUR ", "--log-format text|json "} {
		if !strings.Contains(serve, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	if create := w.Ok("task", "create", "--help"); !strings.Contains(create, "--priority P ") {
		t.Errorf("task create --help lacks --priority P:\n%s", create)
	}
}

// TestVersionFlags: --version and -v print what 'version' prints.
func TestVersionFlags(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	v := w.Ok("version")
	if !regexp.MustCompile(`^workspaced (devel|v\S+)\n`).MatchString(v) {
		t.Fatalf("version printed %q", v)
	}
	for _, args := range [][]string{{"--version"}, {"-v"}, {"--root", "/nowhere", "--version"}} {
		if got := w.Ok(args...); got != v {
			t.Errorf("%q printed %q, want %q", args, got, v)
		}
	}
}

// TestDidYouMean: a mistyped command, subcommand, flag or shell gets the
// nearest real one in its hint; one far from any gets none.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	cases := []struct {
		args      []string
		msg, hint string
	}{
		{[]string{"tsak", "list"}, `unknown command "tsak"`, "did you mean 'workspaced task'?"},
		{[]string{"serv"}, `unknown command "serv"`, "did you mean 'workspaced serve'?"},
		{[]string{"stauts"}, `unknown command "stauts"`, "did you mean 'workspaced status'?"},
		{[]string{"xyzzy"}, `unknown command "xyzzy"`, ""},
		{[]string{"env", "stor"}, `unknown subcommand "stor"`, "did you mean 'workspaced env store'?"},
		{[]string{"thread", "chian"}, `unknown subcommand "chian"`, "did you mean 'workspaced thread chain'?"},
		{[]string{"env", "store", "--valu", "1"}, "unknown flag --valu", "did you mean --value?"},
		{[]string{"env", "get", "--tsak", "t1"}, "unknown flag --tsak", "did you mean --task?"},
		{[]string{"serve", "--rescna", "1s"}, "unknown flag --rescna", "did you mean --rescan?"},
		{[]string{"task", "create", "--desc", "x"}, "unknown flag --desc", "did you mean --description?"},
		{[]string{"--rot", "x", "status"}, "unknown flag --rot", "did you mean --root?"},
		{[]string{"--verison"}, "unknown flag --verison", "did you mean --version?"},
		{[]string{"env", "get", "--zzzzzz"}, "unknown flag --zzzzzz", ""},
		{[]string{"completion", "zhs"}, `unknown shell "zhs"`, "did you mean 'zsh'?"},
	}
	for _, c := range cases {
		r := w.Fails(exitUsage, c.msg, c.args...)
		hint := r.Stderr[strings.Index(r.Stderr, "\nhint: ")+1:]
		if c.hint == "" && strings.Contains(hint, "did you mean") || !strings.Contains(hint, c.hint) {
			t.Errorf("%q: hint %q, want one with %q", c.args, hint, c.hint)
		}
	}
}

// TestFlagErrors: a flag's bad value or missing value is a usage error
// spelled the way the help spells flags, saying what the value must be.
func TestFlagErrors(t *testing.T) {
	t.Parallel()
	w := &ws{clitest.At(t, "")}
	cases := []struct {
		args      []string
		msg, hint string
	}{
		{[]string{"serve", "--rescan"}, "serve: --rescan needs DUR", "see 'workspaced serve --help'"},
		{[]string{"serve", "--rescan", "5"}, `invalid value "5" for --rescan`, "a duration is a number with a unit"},
		{[]string{"env", "update", "--if-version", "two"}, `invalid value "two" for --if-version`, "takes a whole number"},
		{[]string{"env", "get", "--json=maybe"}, `invalid value "maybe" for --json`, "is a switch"},
		{[]string{"demo", "--time-scale", "fast"}, `invalid value "fast" for --time-scale`, "takes a number"},
	}
	for _, c := range cases {
		r := w.Fails(exitUsage, c.msg, c.args...)
		if !strings.Contains(r.Stderr, "\nhint: ") || !strings.Contains(r.Stderr, c.hint) {
			t.Errorf("%q: want a hint with %q, got %v", c.args, c.hint, r)
		}
		if strings.Contains(r.Stderr, " -"+strings.TrimPrefix(c.args[1], "--")) {
			t.Errorf("%q: a flag spelled with one dash: %v", c.args, r)
		}
	}
}
