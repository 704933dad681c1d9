// Package workspace is the model and the contract every store keeps:
// the types of tasks, plans, outputs, reviews, threads, entries, markers
// and events (and their ids, settings, errors and the event format),
// the pure builders and validators a store judges agents' writes with,
// and the interfaces a store implements (Store, Served and the optional
// capabilities), with Wait and the verdicts an agent reads back.
//
// It reads and writes no file and no database: the stores do
// (workspace/files for a directory tree, workspace/postgres and
// workspace/sqlite for databases), and Ops assembles context over any
// of them.
package workspace

import (
	"os"
	"time"
)

// Options tune how a workspace tree is opened (files.Open, files.Init).
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// DefaultSettings opens the workspace with the default settings,
	// without reading workspace.json: for a checker (validate) that must
	// look at a tree whose workspace.json is itself broken.
	DefaultSettings bool
}

// ResolveRoot picks the root directory: flag, then $WORKSPACE_ROOT, then
// DefaultRoot in the working directory.
func ResolveRoot(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("WORKSPACE_ROOT"); env != "" {
		return env
	}
	return DefaultRoot
}
