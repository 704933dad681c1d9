package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
)

// Every --help reads the same way: a title line ("workspaced task create —
// create a task; prints its id"), the usage text with its examples and exit
// codes, then the command's own flags, each with a named placeholder
// (--rescan DUR, --priority P). The global --root is accepted by every
// command but listed once, in 'workspaced help'.

// rootFlagUsage is the usage of the --root every command accepts after its
// name; printFlags leaves it out (a command with a --root of its own, like
// demo, defines it with its own words).
const rootFlagUsage = "workspace `DIR` (also accepted before the command)"

// printHelp writes the --help of the command being run: its title line
// unless the usage text opens with one, the text, and its own flags.
func printHelp(e *env, fs *flag.FlagSet, usageText string) {
	if !strings.HasPrefix(usageText, "workspaced ") && e.title != "" {
		fmt.Fprintf(e.stdout, "%s.\n\n", e.title)
	}
	fmt.Fprint(e.stdout, usageText)
	printFlags(e.stdout, fs)
}

// printFlags lists fs's flags, each with its placeholder, leaving out the
// global --root.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage != rootFlagUsage {
			own = append(own, f)
		}
	})
	if len(own) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range own {
		_, use := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if p := placeholder(f); p != "" {
			arg += " " + p
		}
		fmt.Fprintf(tw, "  %s\t%s\n", arg, use)
	}
	tw.Flush()
}

// placeholder is the name of the value a flag takes ("" for a switch):
// the word in backquotes in its usage, else a name for its type, so that
// no flag is listed as taking a bare "string" or "duration".
func placeholder(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	switch name {
	case "duration":
		return "DUR"
	case "int", "uint":
		return "N"
	case "float":
		return "F"
	case "string", "value":
		return "VALUE"
	}
	return name
}

// Flag errors from the flag package speak of "-name"; flagError rewrites
// them the way the help spells flags, with a "did you mean" for an unknown
// one.
var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -(.*)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -(.*)$`)
	reBadValue  = regexp.MustCompile(`^invalid (boolean )?value (".*") for (?:flag )?-([^:]*): (.*)$`)
)

// flagError turns an error of fs.Parse into a usage error of cmd.
func flagError(cmd string, fs *flag.FlagSet, err error) error {
	prefix, help := cmd+": ", "see 'workspaced "+cmd+" --help'"
	if cmd == "" { // a flag before the command
		prefix, help = "", "see 'workspaced --help'"
	}
	msg := err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		name := strings.TrimPrefix(m[1], "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		hint := help
		if s := closest(name, names); s != "" {
			hint = "did you mean --" + s + "? (" + help + ")"
		}
		return &usageError{msg: fmt.Sprintf("%sunknown flag --%s", prefix, name), hint: hint}
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		what := "a value"
		if f := fs.Lookup(m[1]); f != nil && placeholder(f) != "" {
			what = placeholder(f)
		}
		return &usageError{msg: fmt.Sprintf("%s--%s needs %s", prefix, m[1], what), hint: help}
	}
	if m := reBadValue.FindStringSubmatch(msg); m != nil {
		want := ""
		if f := fs.Lookup(m[3]); f != nil {
			want = wantOf(f)
		}
		return &usageError{msg: fmt.Sprintf("%sinvalid value %s for --%s: %s", prefix, m[2], m[3], m[4]), hint: want + help}
	}
	return &usageError{msg: prefix + msg, hint: help}
}

// wantOf says in words what a flag's value must look like, for the hint
// of a value that does not parse ("" when the placeholder says enough).
func wantOf(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "--" + f.Name + " is a switch: give it alone, or as --" + f.Name + "=true or =false; "
	}
	switch placeholder(f) {
	case "DUR":
		return "a duration is a number with a unit: 500ms, 30s, 1m30s, 24h; "
	case "N":
		return "--" + f.Name + " takes a whole number; "
	case "F":
		return "--" + f.Name + " takes a number such as 0.5; "
	}
	return ""
}

// closest returns the candidate nearest to name — one it starts, one that
// starts it, or one a few edits away — or "" when none is near enough to
// be what was meant.
func closest(name string, candidates []string) string {
	best, bestD := "", -1
	limit := 2
	if len(name) <= 3 {
		limit = 1
	}
	for _, c := range candidates {
		d := editDistance(name, c)
		if d > 0 && (len(name) >= 3 && strings.HasPrefix(c, name) || len(c) >= 3 && strings.HasPrefix(name, c)) {
			d = 1 // a prefix is as near as one edit
		}
		if d <= limit && (bestD < 0 || d < bestD || d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, counted in bytes
// (names here are ASCII), with a swap of two neighbours counting as one
// edit.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// helpSpec is what one --help says: its subcommands, or its flags.
type helpSpec struct {
	subs  [][2]string // name, summary
	flags []helpFlag
}

// helpFlag is one line of a help's Flags section.
type helpFlag struct {
	name  string // without the dashes
	arg   string // the placeholder, "" for a switch
	usage string
}

var (
	reHelpSub  = regexp.MustCompile(`^  ([a-z][a-z0-9-]*)\s{2,}(.*)$`)
	reHelpFlag = regexp.MustCompile(`^  --([a-z0-9][a-z0-9-]*)(?: (\S+))?\s{2,}(.*)$`)
)

// parseHelp reads the Subcommands and Flags sections of a --help text.
func parseHelp(text string) helpSpec {
	var h helpSpec
	section := ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case line == "Subcommands:" || line == "Flags:":
			section = line
			continue
		case line == "" || !strings.HasPrefix(line, "  "):
			section = ""
			continue
		}
		switch section {
		case "Subcommands:":
			if m := reHelpSub.FindStringSubmatch(line); m != nil {
				h.subs = append(h.subs, [2]string{m[1], m[2]})
			}
		case "Flags:":
			if m := reHelpFlag.FindStringSubmatch(line); m != nil {
				h.flags = append(h.flags, helpFlag{name: m[1], arg: m[2], usage: m[3]})
			}
		}
	}
	return h
}
