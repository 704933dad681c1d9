package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// Problem is one problem of one file validate found.
type Problem struct {
	Path    string `json:"path"`
	Pointer string `json:"pointer"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// RuleSkipped is the rule of a file a listing or the daemon passes over.
const RuleSkipped = "skipped"

// ValidateReport is what Validate found.
type ValidateReport struct {
	Files    int       `json:"files"`
	Invalid  int       `json:"invalid"`
	Problems []Problem `json:"problems"`
}

// Validate checks every file of a known kind under paths (files or
// directories anywhere inside a workspace, or workspace roots) against
// its schema, and reports every file and directory a listing or the
// daemon passes over, with the reason (rule RuleSkipped). Without paths it
// checks the workspace at root: a directory whole, a database as the tree
// 'workspaced export' would write, each problem named by its place there
// (tasks/t1/outputs/s1.json). warn, when set, hears of a path named that
// is no file kind of the tree (it is not checked). An error is a failure
// to check; problems found are in the report.
func Validate(ctx context.Context, root string, paths []string, warn func(path string)) (ValidateReport, error) {
	rep := ValidateReport{Problems: []Problem{}}
	exported := ""
	if len(paths) == 0 && !HasPaths(root) {
		tmp, tree, err := ExportTemp(ctx, "validate", root)
		if tmp != "" {
			defer os.RemoveAll(tmp)
		}
		if err != nil {
			return rep, err
		}
		exported, paths = tree, []string{tree}
	}
	if len(paths) == 0 {
		if !IsWorkspaceDir(root) {
			return rep, &workspace.Error{Kind: workspace.ErrNotFound, Op: "validate " + Name(root), Msg: "no workspace here",
				Hint: "create one with 'workspaced init', or name what to check: workspaced validate PATH"}
		}
		paths = []string{root}
	}
	v := &validator{ctx: ctx, warn: warn, rep: &rep, seen: map[string]bool{}, flagged: map[string]bool{}, workspaces: map[string]*files.Store{}}
	defer v.close()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := v.validatePath(p); err != nil {
			return rep, err
		}
	}
	if exported != "" {
		for i, p := range rep.Problems {
			if rel, err := filepath.Rel(exported, p.Path); err == nil && filepath.IsLocal(rel) {
				rep.Problems[i].Path = filepath.ToSlash(rel)
			}
		}
	}
	return rep, nil
}

// validator is one run of validate over its paths.
type validator struct {
	ctx  context.Context
	warn func(path string)
	rep  *ValidateReport
	// seen holds the absolute paths counted in rep.Files; flagged those
	// reported as passed over, so overlapping paths report each once.
	seen, flagged map[string]bool
	// workspaces holds the workspace opened for each root met, for
	// SkippedIn; closed by close.
	workspaces map[string]*files.Store
}

func (v *validator) close() {
	for _, w := range v.workspaces {
		w.Close()
	}
}

// workspace opens the workspace at rootDir once, with the default
// settings: a broken workspace.json is a problem to report, not a reason
// to stop.
func (v *validator) workspace(rootDir string) (*files.Store, error) {
	if w := v.workspaces[rootDir]; w != nil {
		return w, nil
	}
	w, err := files.Open(rootDir, workspace.Options{DefaultSettings: true})
	if err != nil {
		return nil, err
	}
	v.workspaces[rootDir] = w
	return w, nil
}

// validatePath checks every file of a known kind under p against its
// schema, and reports every file and directory under p that a listing or
// the daemon passes over (workspace.SkippedIn), with the reason.
func (v *validator) validatePath(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("validate %s: %w", p, err)
	}
	st, err := os.Lstat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &workspace.Error{Kind: workspace.ErrNotFound, Op: "validate " + abs, Msg: "no such file or directory",
				Hint: "check the path; without one, validate checks the whole root"}
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
	w, err := v.workspace(rootDir)
	if err != nil {
		return fmt.Errorf("validate %s: %w", p, err)
	}
	// pending holds what SkippedIn reported for the directories walked so
	// far, by absolute path, until the walk meets the file: reported then,
	// unless the file has problems of its own (they say more).
	pending := map[string]string{}
	skippedIn := func(dir string) error {
		rel, err := filepath.Rel(rootDir, dir)
		if err != nil {
			return err
		}
		items, err := w.SkippedIn(v.ctx, filepath.ToSlash(rel))
		if err != nil {
			return fmt.Errorf("validate %s: %w", dir, err)
		}
		for _, it := range items {
			pending[filepath.Join(rootDir, filepath.FromSlash(it.File))] = it.Reason
		}
		return nil
	}
	flush := func(a, display string) {
		reason, ok := pending[a]
		if !ok {
			return
		}
		delete(pending, a)
		v.flag(a, display, reason)
	}
	if !st.IsDir() {
		if err := skippedIn(start); err != nil {
			return err
		}
	}
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("validate: walk %s: %w", path, err)
		}
		if err := v.ctx.Err(); err != nil {
			return err
		}
		a, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != p && strings.HasPrefix(name, ".") {
				flush(a, path)
				return filepath.SkipDir
			}
			flush(a, path)
			if err := skippedIn(a); err != nil {
				return err
			}
			flush(a, path) // the directory passed over as a whole
			return nil
		}
		if _, marker := workspace.IsMarkerName(name); strings.HasPrefix(name, ".") && !marker {
			flush(a, path)
			return nil
		}
		rel, err := filepath.Rel(rootDir, a)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		kind, ok := schemas.KindOf(rel)
		if !ok {
			if path == p && pending[a] == "" {
				if v.warn != nil {
					v.warn(p)
				}
			}
			flush(a, path)
			return nil
		}
		if v.seen[a] {
			return nil
		}
		v.seen[a] = true
		v.rep.Files++
		probs := validateFile(root, rel, kind)
		if len(probs) == 0 {
			flush(a, path)
			return nil
		}
		delete(pending, a)
		v.flagged[a] = true
		v.rep.Invalid++
		for _, pr := range probs {
			pr.Path = path
			v.rep.Problems = append(v.rep.Problems, pr)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// What the walk did not meet (a file the walk passed over) is
	// reported last, when it lies under p.
	var rest []string
	for a := range pending {
		if r, err := filepath.Rel(abs, a); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			rest = append(rest, a)
		}
	}
	sort.Strings(rest)
	for _, a := range rest {
		r, _ := filepath.Rel(abs, a)
		v.flag(a, filepath.Join(p, r), pending[a])
	}
	return nil
}

// flag reports the file at a (shown as display) as passed over, once.
func (v *validator) flag(a, display, reason string) {
	if v.flagged[a] {
		return
	}
	v.flagged[a] = true
	if !v.seen[a] {
		v.seen[a] = true
		v.rep.Files++
	}
	v.rep.Invalid++
	v.rep.Problems = append(v.rep.Problems, Problem{Path: display, Rule: RuleSkipped, Message: reason})
}

// validateFile reads one file (a regular file within the size limit) and
// validates it, returning its problems.
func validateFile(root *os.Root, rel string, kind schemas.Kind) []Problem {
	data, err := agentfile.Read(root, rel, schemas.MaxBytes)
	if err != nil {
		msg := err.Error()
		var we *workspace.Error
		if errors.As(err, &we) && we.Msg != "" {
			msg = we.Msg
		}
		return []Problem{{Rule: "file", Message: msg}}
	}
	switch kind {
	case schemas.KindSkill:
		err = validateSkill(data)
	case schemas.KindEntry:
		// The depth limit is the value's, as the stores apply it: the
		// entry's own object is one level more.
		err = schemas.ValidateLimits(kind, data, schemas.MaxBytes, schemas.MaxDepth+1)
	default:
		err = schemas.Validate(kind, data)
	}
	if err == nil {
		return nil
	}
	var se *schemas.Error
	var syn *schemas.SyntaxError
	switch {
	case errors.As(err, &se):
		out := make([]Problem, len(se.Problems))
		for i, p := range se.Problems {
			out[i] = Problem{Pointer: p.Pointer, Rule: p.Rule, Message: p.Message}
		}
		return out
	case errors.As(err, &syn):
		return []Problem{{Rule: "syntax", Message: fmt.Sprintf("invalid JSON at line %d, column %d: %s", syn.Line, syn.Column, syn.Msg)}}
	case errors.Is(err, schemas.ErrTooLarge), errors.Is(err, schemas.ErrTooDeep):
		return []Problem{{Rule: "limits", Message: strings.TrimPrefix(err.Error(), string(kind)+": ")}}
	}
	var we *workspace.Error
	if kind == schemas.KindSkill && errors.As(err, &we) && we.Msg != "" {
		rule := "skill"
		if we.Op == "skill front matter" {
			rule = "front matter"
		}
		return []Problem{{Rule: rule, Message: we.Msg}}
	}
	return []Problem{{Rule: "schema", Message: err.Error()}}
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
