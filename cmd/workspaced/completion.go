package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/schemas"
)

const completionUsage = `workspaced completion — print a shell completion script.

Usage:
  workspaced completion bash|zsh|fish

Prints a script that completes commands, subcommands, flags and the values
of flags that take a file, a directory or one of a few words (a scope, a
status, a log format, ...). The script is made from the commands' own
--help, so it completes exactly the flags each command takes.

Examples:
  source <(workspaced completion bash)                # bash, this shell only
  workspaced completion bash > /etc/bash_completion.d/workspaced
  workspaced completion zsh > "${fpath[1]}/_workspaced"   # zsh: then start a new shell
  workspaced completion fish > ~/.config/fish/completions/workspaced.fish

Exit codes: 0 ok, 2 usage (no shell named, or one not supported).
`

func cmdCompletion(ctx context.Context, e *env, args []string) error {
	fs := newFlags("completion")
	if err := parseArgs(e, fs, completionUsage, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageHint("completion", "name one shell: bash, zsh or fish")
	}
	spec := completionSpec(ctx)
	switch fs.Arg(0) {
	case "bash":
		return writeBash(e.stdout, spec)
	case "zsh":
		return writeZsh(e.stdout, spec)
	case "fish":
		return writeFish(e.stdout, spec)
	}
	hint := "see 'workspaced completion --help'"
	if s := closest(fs.Arg(0), []string{"bash", "zsh", "fish"}); s != "" {
		hint = "did you mean '" + s + "'? (" + hint + ")"
	}
	return &usageError{msg: fmt.Sprintf("completion: unknown shell %q (bash, zsh or fish)", fs.Arg(0)), hint: hint}
}

// helpOf runs `workspaced ARGS... --help` in this process and returns
// what it printed.
func helpOf(ctx context.Context, args ...string) string {
	var out bytes.Buffer
	run(ctx, append(append([]string{}, args...), "--help"), strings.NewReader(""), &out, io.Discard)
	return out.String()
}

// compCommand is one command as the completion scripts know it.
type compCommand struct {
	name, summary string
	subs          []compSub // nil for a command without subcommands
	flags         []helpFlag
}

type compSub struct {
	name, summary string
	flags         []helpFlag
}

// completionSpec asks every command and subcommand for its --help, so the
// scripts complete what the commands really take.
func completionSpec(ctx context.Context) []compCommand {
	var out []compCommand
	for _, c := range commands() {
		cc := compCommand{name: c.name, summary: c.summary}
		h := parseHelp(helpOf(ctx, c.name))
		if len(h.subs) == 0 {
			cc.flags = h.flags
		}
		for _, s := range h.subs {
			cc.subs = append(cc.subs, compSub{name: s[0], summary: s[1], flags: parseHelp(helpOf(ctx, c.name, s[0])).flags})
		}
		out = append(out, cc)
	}
	return out
}

// positional is what a command takes as its arguments, where the scripts
// can offer words.
func positional(cmd string) []string {
	switch cmd {
	case "completion":
		return []string{"bash", "zsh", "fish"}
	case "schema":
		var ks []string
		for _, k := range schemas.Kinds() {
			ks = append(ks, string(k))
		}
		return ks
	case "help":
		var cs []string
		for _, c := range commands() {
			cs = append(cs, c.name)
		}
		return cs
	}
	return nil
}

// valueKind says what a flag's value is, for completion: "file", "dir",
// "words:<w1> <w2> ..." or "" (anything: nothing is offered).
func valueKind(f helpFlag) string {
	switch {
	case f.name == "type" && strings.Contains(f.usage, "friction"):
		return "words:" + strings.Join(friction.Types, " ")
	case strings.Contains(f.arg, "|"):
		return "words:" + strings.ReplaceAll(f.arg, "|", " ")
	case f.arg == "FILE" || f.arg == "PATH":
		return "file"
	case f.arg == "DIR":
		return "dir"
	}
	return ""
}

// shellData writes the lookup functions the bash and zsh scripts share:
// the subcommands of a command, the flags of a command path, and what a
// flag's value is.
func shellData(w io.Writer, spec []compCommand) {
	var names []string
	for _, c := range spec {
		names = append(names, c.name)
	}
	fmt.Fprintf(w, "_workspaced_commands() { echo %s; }\n\n", shq(strings.Join(append(names, "help"), " ")))
	fmt.Fprintln(w, "_workspaced_subs() {\n    case \"$1\" in")
	for _, c := range spec {
		if len(c.subs) > 0 {
			var ss []string
			for _, s := range c.subs {
				ss = append(ss, s.name)
			}
			fmt.Fprintf(w, "        %s) echo %s ;;\n", shq(c.name), shq(strings.Join(ss, " ")))
		}
	}
	fmt.Fprint(w, "    esac\n}\n\n")
	fmt.Fprintln(w, "_workspaced_flags() {\n    case \"$1\" in")
	kinds := map[string]map[string][]string{} // kind → flag → paths
	addFlags := func(path string, flags []helpFlag) {
		var fl []string
		for _, f := range flags {
			fl = append(fl, "--"+f.name)
			if k := valueKind(f); k != "" || f.arg != "" {
				if k == "" {
					k = "any"
				}
				if kinds[k] == nil {
					kinds[k] = map[string][]string{}
				}
				kinds[k]["--"+f.name] = append(kinds[k]["--"+f.name], path)
			}
		}
		fmt.Fprintf(w, "        %s) echo %s ;;\n", shq(path), shq(strings.Join(fl, " ")))
	}
	for _, c := range spec {
		if len(c.subs) == 0 {
			addFlags(c.name, c.flags)
		}
		for _, s := range c.subs {
			addFlags(c.name+" "+s.name, s.flags)
		}
	}
	fmt.Fprint(w, "    esac\n}\n\n")
	// _workspaced_value PATH FLAG prints the value kind, or nothing for a
	// switch (the next word is not its value).
	fmt.Fprintln(w, "_workspaced_value() {\n    case \"$1|$2\" in")
	fmt.Fprintln(w, "        *\"|--root\") echo dir ;;")
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		var pats []string
		for fl, paths := range kinds[k] {
			for _, p := range paths {
				pats = append(pats, shq(p+"|"+fl))
			}
		}
		sort.Strings(pats)
		fmt.Fprintf(w, "        %s) echo %s ;;\n", strings.Join(pats, "|"), shq(k))
	}
	fmt.Fprint(w, "    esac\n}\n\n")
	fmt.Fprintln(w, "_workspaced_positional() {\n    case \"$1\" in")
	for _, c := range append(spec, compCommand{name: "help"}) {
		if p := positional(c.name); p != nil {
			fmt.Fprintf(w, "        %s) echo %s ;;\n", shq(c.name), shq(strings.Join(p, " ")))
		}
	}
	fmt.Fprint(w, "    esac\n}\n\n")
	// _workspaced_where sets cmd, sub and path from the words before the
	// cursor: the command is the first word that is not a flag (--root
	// takes the next word), the subcommand the word right after it when
	// the command has subcommands.
	fmt.Fprint(w, `_workspaced_where() {
    cmd= sub= path=
    local i=1 n=$#
    while [ $i -le $n ]; do
        eval "w=\${$i}"
        case "$w" in
            --root) i=$((i + 2)); continue ;;
            --root=*|-*) i=$((i + 1)); continue ;;
        esac
        cmd=$w
        if [ -n "$(_workspaced_subs "$cmd")" ] && [ $i -lt $n ]; then
            eval "sub=\${$((i + 1))}"
        fi
        break
    done
    path=$cmd
    [ -n "$sub" ] && path="$cmd $sub"
    return 0
}

`)
}

// shq quotes s for a POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeBash(w io.Writer, spec []compCommand) error {
	fmt.Fprint(w, "# bash completion for workspaced. Load it with:\n#   source <(workspaced completion bash)\n\n")
	shellData(w, spec)
	_, err := fmt.Fprint(w, `_workspaced() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=
    [ "$COMP_CWORD" -gt 1 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd sub path w
    _workspaced_where "${COMP_WORDS[@]:1:COMP_CWORD-1}"
    COMPREPLY=()
    local kind=
    if [ -n "$prev" ] && [ "${prev#-}" != "$prev" ]; then
        kind=$(_workspaced_value "$path" "$prev")
    fi
    case "$kind" in
        file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")); return ;;
        dir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")); return ;;
        words:*) COMPREPLY=($(compgen -W "${kind#words:}" -- "$cur")); return ;;
        any) return ;;
    esac
    if [ -z "$cmd" ]; then
        if [ "${cur#-}" != "$cur" ]; then
            COMPREPLY=($(compgen -W "--root --version --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_workspaced_commands)" -- "$cur"))
        fi
        return
    fi
    local subs=$(_workspaced_subs "$cmd")
    if [ -n "$subs" ] && [ -z "$sub" ]; then
        COMPREPLY=($(compgen -W "$subs help" -- "$cur"))
        return
    fi
    if [ "${cur#-}" != "$cur" ]; then
        COMPREPLY=($(compgen -W "$(_workspaced_flags "$path") --help" -- "$cur"))
        return
    fi
    local words=$(_workspaced_positional "$cmd")
    if [ -n "$words" ]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    elif [ "$cmd" = validate ] || [ "$cmd" = lock ]; then
        compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _workspaced workspaced
`)
	return err
}

func writeZsh(w io.Writer, spec []compCommand) error {
	fmt.Fprint(w, "#compdef workspaced\n# zsh completion for workspaced. Put it in a directory of $fpath as\n# _workspaced, or load it with: source <(workspaced completion zsh)\n\n")
	shellData(w, spec)
	_, err := fmt.Fprint(w, `_workspaced() {
    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
    local cmd sub path w
    _workspaced_where "${(@)words[2,CURRENT-1]}"
    local kind=
    if [[ $CURRENT -gt 2 && $prev == -* ]]; then
        kind=$(_workspaced_value "$path" "$prev")
    fi
    case "$kind" in
        file) _files; return ;;
        dir) _files -/; return ;;
        words:*) compadd -- ${=kind#words:}; return ;;
        any) return 1 ;;
    esac
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            compadd -- --root --version --help
        else
            compadd -- $(_workspaced_commands)
        fi
        return
    fi
    local subs=$(_workspaced_subs "$cmd")
    if [[ -n $subs && -z $sub ]]; then
        compadd -- ${=subs} help
        return
    fi
    if [[ $cur == -* ]]; then
        compadd -- $(_workspaced_flags "$path") --help
        return
    fi
    local pos=$(_workspaced_positional "$cmd")
    if [[ -n $pos ]]; then
        compadd -- ${=pos}
    elif [[ $cmd == validate || $cmd == lock ]]; then
        _files
    fi
}

if [[ ${funcstack[1]} == _workspaced ]]; then
    _workspaced "$@"
else
    compdef _workspaced workspaced
fi
`)
	return err
}

func writeFish(w io.Writer, spec []compCommand) error {
	fmt.Fprint(w, `# fish completion for workspaced. Put it in ~/.config/fish/completions/
# as workspaced.fish, or load it with: workspaced completion fish | source

# __workspaced_at PATH: the words before the cursor name the command path
# PATH ("env", "env store"); "" is none yet. The command is the first word
# that is not a flag (--root takes the next word), the subcommand the word
# right after it when the command has subcommands.
function __workspaced_at
    set -l words (commandline -opc)
    set -e words[1]
    set -l cmd ''
    set -l sub ''
    set -l i 1
    while test $i -le (count $words)
        set -l w $words[$i]
        if test "$w" = --root
            set i (math $i + 2)
            continue
        end
        if string match -q -- '-*' $w
            set i (math $i + 1)
            continue
        end
        set cmd $w
        if contains -- $cmd $__workspaced_with_subs; and test $i -lt (count $words)
            set sub $words[(math $i + 1)]
        end
        break
    end
    set -l at $cmd
    if test -n "$sub"
        set at "$cmd $sub"
    end
    if contains -- $cmd $__workspaced_with_subs; and test -z "$sub"
        set at "$cmd "
    end
    test "$at" = "$argv[1]"
end

complete -c workspaced -f
complete -c workspaced -n '__workspaced_at ""' -l root -r -a '(__fish_complete_directories)' -d 'the workspace'
complete -c workspaced -n '__workspaced_at ""' -s v -l version -d 'print the version'
`)
	var withSubs []string
	for _, c := range spec {
		if len(c.subs) > 0 {
			withSubs = append(withSubs, c.name)
		}
	}
	fmt.Fprintf(w, "set -g __workspaced_with_subs %s\n\n", strings.Join(withSubs, " "))
	for _, c := range spec {
		fmt.Fprintf(w, "complete -c workspaced -n '__workspaced_at \"\"' -a %s -d %s\n", c.name, fishq(c.summary))
	}
	fishFlags := func(path string, flags []helpFlag) {
		cond := fishq("__workspaced_at " + shq(path))
		for _, f := range flags {
			line := fmt.Sprintf("complete -c workspaced -n %s -l %s", cond, f.name)
			switch k := valueKind(f); {
			case k == "file":
				line += " -r -F"
			case k == "dir":
				line += " -r -a '(__fish_complete_directories)'"
			case strings.HasPrefix(k, "words:"):
				line += " -x -a " + fishq(strings.TrimPrefix(k, "words:"))
			case f.arg != "":
				line += " -x"
			}
			fmt.Fprintf(w, "%s -d %s\n", line, fishq(f.usage))
		}
	}
	for _, c := range spec {
		fmt.Fprintln(w)
		if len(c.subs) == 0 {
			fishFlags(c.name, c.flags)
			if p := positional(c.name); p != nil {
				fmt.Fprintf(w, "complete -c workspaced -n %s -a %s\n", fishq("__workspaced_at "+c.name), fishq(strings.Join(p, " ")))
			}
			if c.name == "validate" {
				fmt.Fprintf(w, "complete -c workspaced -n %s -F\n", fishq("__workspaced_at validate"))
			}
			continue
		}
		for _, s := range c.subs {
			fmt.Fprintf(w, "complete -c workspaced -n %s -a %s -d %s\n", fishq("__workspaced_at '"+c.name+" '"), s.name, fishq(s.summary))
		}
		for _, s := range c.subs {
			fishFlags(c.name+" "+s.name, s.flags)
		}
	}
	p := positional("help")
	_, err := fmt.Fprintf(w, "\ncomplete -c workspaced -n %s -a %s\n", fishq("__workspaced_at help"), fishq(strings.Join(p, " ")))
	return err
}

// fishq quotes s for fish: single quotes, with \ and ' escaped.
func fishq(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
