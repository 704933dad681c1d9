package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

const validateUsage = `workspaced validate — check files against their schemas.

Usage:
  workspaced validate [--json] [PATH...]

Walks each PATH (a file or a directory; default the whole root), infers
each file's kind from its place in the tree (task.json, plan.json,
outputs/*.json, env entries, markers, skills/*.md, ...) and validates it
against the embedded schema (a skill: its front matter, and its body). Files of no known kind, temporary dot-files and .locks/
are passed over. A PATH may be anywhere inside a workspace, or a workspace
root itself: kinds are computed relative to the root that holds it.

Prints "ok N files", or one line per problem:
  <path>: <JSON pointer>: <rule>: <message>
--json prints {"files": N, "invalid": M, "problems": [{path, pointer, rule, message}]}.

Examples:
  workspaced validate
  workspaced validate examples/workspace
  workspaced validate workspace/tasks/t1/plan.json --json

Exit codes: 0 all valid, 1 some file is invalid (or unreadable), 2 usage, 3 PATH not found.
`

// fileProblem is one problem of one file.
type fileProblem struct {
	Path    string `json:"path"`
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (p fileProblem) String() string {
	return p.Path + ": " + schemas.Problem{Pointer: p.Pointer, Rule: p.Rule, Message: p.Message}.String()
}

// validateReport is `validate --json`.
type validateReport struct {
	Files    int           `json:"files"`
	Invalid  int           `json:"invalid"`
	Problems []fileProblem `json:"problems"`
}

func cmdValidate(ctx context.Context, e *env, args []string) error {
	fs := newFlags("validate")
	asJSON := fs.Bool("json", false, "print a JSON report")
	if err := parseArgs(e, fs, validateUsage, args); err != nil {
		return err
	}
	paths := fs.Args()
	if len(paths) == 0 {
		if !isWorkspaceDir(e.root) {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: "validate " + e.root, Msg: "no workspace here",
				Hint: "create one with 'workspaced init', or name what to check: workspaced validate PATH"}
		}
		paths = []string{e.root}
	}
	rep := validateReport{Problems: []fileProblem{}}
	seen := map[string]bool{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := validatePath(e, p, seen, &rep); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else if len(rep.Problems) == 0 {
		fmt.Fprintf(e.stdout, "ok %d files\n", rep.Files)
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintln(e.stdout, p)
		}
	}
	if rep.Invalid > 0 {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "validate",
			Msg:  fmt.Sprintf("%d of %d files invalid (%d problems)", rep.Invalid, rep.Files, len(rep.Problems)),
			Hint: "see the schemas with 'workspaced schema KIND'"}
	}
	return nil
}

// validatePath checks every file of a known kind under p.
func validatePath(e *env, p string, seen map[string]bool, rep *validateReport) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("validate %s: %w", p, err)
	}
	st, err := os.Lstat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: "validate " + p, Msg: "no such file or directory"}
		}
		return fmt.Errorf("validate %s: %w", p, err)
	}
	start := abs
	if !st.IsDir() {
		start = filepath.Dir(abs)
	}
	rootDir := findRoot(start)
	if rootDir == "" {
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: "validate " + p, Msg: "not inside a workspace (no workspace.json or tasks/ above it)",
			Hint: "name a workspace root or a path inside one"}
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return fmt.Errorf("validate %s: %w", p, err)
	}
	defer root.Close()
	return filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("validate: walk %s: %w", path, err)
		}
		name := d.Name()
		if d.IsDir() {
			if path != p && strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if _, marker := workspace.IsMarkerName(name); strings.HasPrefix(name, ".") && !marker {
			return nil
		}
		a, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(rootDir, a)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		kind, ok := schemas.KindOf(rel)
		if !ok {
			if path == p {
				fmt.Fprintf(e.stderr, "workspaced: warning: %s: not a file kind of the workspace tree; not checked\n", p)
			}
			return nil
		}
		if seen[a] {
			return nil
		}
		seen[a] = true
		rep.Files++
		probs := validateFile(root, rel, kind)
		if len(probs) > 0 {
			rep.Invalid++
			for _, pr := range probs {
				pr.Path = path
				rep.Problems = append(rep.Problems, pr)
			}
		}
		return nil
	})
}

// validateFile reads one file (a regular file within the size limit) and
// validates it, returning its problems.
func validateFile(root *os.Root, rel string, kind schemas.Kind) []fileProblem {
	data, err := workspace.ReadAgentFile(root, rel, schemas.MaxBytes)
	if err != nil {
		msg := err.Error()
		var we *workspace.Error
		if errors.As(err, &we) && we.Msg != "" {
			msg = we.Msg
		}
		return []fileProblem{{Rule: "file", Message: msg}}
	}
	if kind == schemas.KindSkill {
		err = validateSkill(data)
	} else {
		err = schemas.Validate(kind, data)
	}
	if err == nil {
		return nil
	}
	var se *schemas.Error
	var syn *schemas.SyntaxError
	switch {
	case errors.As(err, &se):
		out := make([]fileProblem, len(se.Problems))
		for i, p := range se.Problems {
			out[i] = fileProblem{Pointer: p.Pointer, Rule: p.Rule, Message: p.Message}
		}
		return out
	case errors.As(err, &syn):
		return []fileProblem{{Rule: "syntax", Message: fmt.Sprintf("invalid JSON at line %d, column %d: %s", syn.Line, syn.Column, syn.Msg)}}
	case errors.Is(err, schemas.ErrTooLarge), errors.Is(err, schemas.ErrTooDeep):
		return []fileProblem{{Rule: "limits", Message: strings.TrimPrefix(err.Error(), string(kind)+": ")}}
	}
	var we *workspace.Error
	if kind == schemas.KindSkill && errors.As(err, &we) && we.Msg != "" {
		rule := "skill"
		if we.Op == "skill front matter" {
			rule = "front matter"
		}
		return []fileProblem{{Rule: rule, Message: we.Msg}}
	}
	return []fileProblem{{Rule: "schema", Message: err.Error()}}
}

// validateSkill checks a skill file: its front matter against the skill
// schema (a *schemas.Error lists every problem), its layout and body.
func validateSkill(data []byte) error {
	_, err := workspace.ParseSkill(data)
	return err
}

// findRoot looks upward from dir for the workspace root that holds it: the
// nearest directory with a workspace.json, else the nearest with a tasks/
// directory; "" when there is none.
func findRoot(dir string) string {
	fallback := ""
	for d := dir; ; {
		if st, err := os.Stat(filepath.Join(d, "workspace.json")); err == nil && st.Mode().IsRegular() {
			return d
		}
		if fallback == "" {
			if st, err := os.Stat(filepath.Join(d, "tasks")); err == nil && st.IsDir() {
				fallback = d
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return fallback
		}
		d = parent
	}
}
