package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// hintFor is the fix for an error that carries no hint of its own, where
// the command line knows one ("" where none is known). report prints it.
func hintFor(err error) string {
	var (
		serving *service.ServingError
		invalid *schemas.Error
		syntax  *schemas.SyntaxError
	)
	switch {
	case errors.As(err, &serving):
		pid := "its pid"
		if serving.PID > 0 {
			pid = fmt.Sprint(serving.PID)
		}
		return fmt.Sprintf("one daemon serves a root: 'workspaced --root %s status' names it; stop it with 'kill %s' "+
			"(it stops cleanly on SIGTERM) before starting another, or serve another root", shellQuote(serving.Root), pid)
	case errors.Is(err, service.ErrUnsafeFilesystem):
		return "put the root on a local filesystem, or serve without --strict (it then only warns)"
	case errors.As(err, &invalid):
		return service.SchemaHint(invalid)
	case errors.As(err, &syntax):
		return fmt.Sprintf("the file must hold one JSON document; look at line %d, column %d", syntax.Line, syntax.Column)
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of the path is a file, not a directory: check --root and the paths given"
	}
	// A full disk, a read-only filesystem, missing permissions and the
	// open-files limit get workspace.FaultHint's line, in the CLI and the
	// MCP tools alike (see report).
	return ""
}

// inputError is a --file or --value-file that cannot be read, with the
// fix for its cause.
func inputError(name string, err error) error {
	abs, aerr := filepath.Abs(name)
	if aerr != nil {
		abs = name
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is said once, absolute
	}
	hint := ""
	switch {
	case errors.Is(err, fs.ErrNotExist):
		wd, _ := os.Getwd()
		hint = "check the path (a relative one starts at " + wd + "), or give '-' to read standard input"
	case errors.Is(err, syscall.ENOTDIR):
		hint = "a part of the path is a file, not a directory"
	case errors.Is(err, fs.ErrPermission):
		hint = "this user may not read it: check its owner and mode, or pipe it in with '-'"
	case errors.Is(err, syscall.EISDIR):
		hint = "name a file, not a directory"
	}
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "read " + abs, Err: err, Hint: hint}
}

// frictionHint is the fix for an entry the friction log refuses; msg is
// the friction package's error, which names the part at fault.
func frictionHint(msg string) string {
	switch {
	case strings.Contains(msg, "type \""):
		return "give one of the types listed (--type)"
	case strings.Contains(msg, "status \""):
		return "give one of the statuses listed (--status)"
	case strings.Contains(msg, "empty description"):
		return "say what happened (--description)"
	case strings.Contains(msg, "task id"):
		return "ids are 1–128 characters of letters, digits, '.', '_' and '-', starting with a letter or digit (--task)"
	}
	return ""
}

// rootName is the root as printed: a database URL with its password
// masked (url.URL.Redacted), a directory as given.
func (e *env) rootName() string { return service.Name(e.root) }

// absRoot is the root as an absolute path, for messages that must work
// from any directory.
func (e *env) absRoot() string {
	if abs, err := filepath.Abs(e.root); err == nil {
		return abs
	}
	return e.root
}

// errWriter is where report writes: stderr, through rootedWriter once the
// command has opened the workspace, so that a path of the tree in an error
// or a hint is printed absolute.
func (e *env) errWriter(stderr io.Writer) io.Writer {
	if !e.opened || !service.HasPaths(e.root) {
		return stderr // a database's names are not paths
	}
	return &rootedWriter{w: stderr, root: e.absRoot()}
}

// reTreePath is a path of the tree relative to its root, as the workspace
// names them in errors ("tasks/t1/state.json", "friction/friction.json"),
// after a space, a parenthesis or the start of the line. A bare "tasks/"
// speaks of the layout, not of a file, and is left alone.
var reTreePath = regexp.MustCompile(`(^|[\s(])((?:tasks|memory|friction|config)/[^\s:,;)]+)`)

// rootedWriter prefixes the root to the tree's relative paths in what is
// written through it. report writes one line a call.
type rootedWriter struct {
	w    io.Writer
	root string
}

func (r *rootedWriter) Write(p []byte) (int, error) {
	out := reTreePath.ReplaceAllFunc(p, func(m []byte) []byte {
		sub := reTreePath.FindSubmatch(m)
		return append(append([]byte{}, sub[1]...), filepath.Join(r.root, filepath.FromSlash(string(sub[2])))...)
	})
	if _, err := r.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
