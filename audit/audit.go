// Package audit is the servers' record of who did what from where: every
// tool call and every refusal of the MCP server over HTTP, every login,
// logout and action of the panel, each with the agent the protocol
// records, the person logged in to the panel, the id of the token used
// (never the token) and the client's address.
//
// A Log writes records through log/slog: to the server's own log by
// default (lines whose message is "audit"), or as JSON lines to a file
// of its own (Open), which is created readable by its owner alone, only
// ever appended to, and rotated by size: when it would grow past its
// bound it is renamed aside with the time in its name and a new one
// begun, and only the newest rotated files are kept (lumberjack does it).
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Where a record comes from.
const (
	DoorMCP   = "mcp"
	DoorPanel = "panel"
)

// A record's outcome.
const (
	OK      = "ok"
	Failed  = "error"   // the operation ran and failed
	Refused = "refused" // not allowed, not authenticated, or throttled
)

// Record is one line of the audit.
type Record struct {
	// Door is where it happened: DoorMCP, DoorPanel.
	Door string
	// Action is what was done or tried: a tool's name, "login",
	// "cancel", "review plan"…
	Action string
	// Outcome is OK, Failed or Refused.
	Outcome string
	// Agent is the agent the protocol records for it ("human" for the
	// panel's actions), when there is one.
	Agent string
	// User is the person logged in to the panel: the agent of the token
	// they logged in with, "operator" for the panel's own token, "local"
	// on a loopback panel without one.
	User string
	// Token is the id of the token used (tk_…), never the token.
	Token string
	// From is the client's address.
	From string
	// Task, Thread and Target say what was acted on (a key, a subtask,
	// a checkpoint), when anything.
	Task, Thread, Target string
	// Reason says why it was refused or failed.
	Reason string
}

// Log records audit lines. A nil *Log records nothing. It is safe for
// concurrent use.
type Log struct {
	log  *slog.Logger
	file *lumberjack.Logger
}

// Defaults of Rotation.
const (
	DefaultMaxMegabytes = 100
	DefaultKeep         = 10
)

// Rotation bounds an audit file. Zero fields take the Default… values.
type Rotation struct {
	// MaxMegabytes is the size, in MiB, past which the file is rotated.
	MaxMegabytes int
	// Keep is how many rotated files are kept, the newest; older ones
	// are removed.
	Keep int
}

// New is a Log writing to log, as records whose message is "audit".
func New(log *slog.Logger) *Log { return &Log{log: log} }

// Open is a Log appending JSON lines to the file path, created with mode
// 0600 when missing, and rotated as r says: a file past r.MaxMegabytes
// is renamed to path's name with the time of the rotation before its
// extension (audit-2026-11-29T14-00-00.000.jsonl), keeping its mode, and
// a new one begun; of the rotated files, the r.Keep newest are kept. A
// file the group or others may read or write is refused: the audit names
// agents, tokens' ids and addresses.
func Open(path string, r Rotation) (*Log, error) {
	if r.MaxMegabytes <= 0 {
		r.MaxMegabytes = DefaultMaxMegabytes
	}
	if r.Keep <= 0 {
		r.Keep = DefaultKeep
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the audit log: %w", err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open the audit log: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, &fs.PathError{Op: "open the audit log", Path: path,
			Err: fmt.Errorf("it has mode %s: others than its owner may read or change it (make it private: chmod 600 %s)", fi.Mode(), path)}
	}
	lj := &lumberjack.Logger{Filename: path, MaxSize: r.MaxMegabytes, MaxBackups: r.Keep}
	return &Log{log: slog.New(slog.NewJSONHandler(lj, nil)), file: lj}, nil
}

// Close closes the file of a Log made by Open.
func (l *Log) Close() error {
	if l == nil || l.file == nil {
		return nil
	}
	return l.file.Close()
}

// Record writes r. Empty fields are left out; a refusal is a warning.
func (l *Log) Record(ctx context.Context, r Record) {
	if l == nil {
		return
	}
	attrs := []slog.Attr{slog.String("door", r.Door), slog.String("action", r.Action), slog.String("outcome", r.Outcome)}
	for _, f := range []struct{ k, v string }{{"agent", r.Agent}, {"user", r.User}, {"token", r.Token}, {"from", r.From},
		{"task", r.Task}, {"thread", r.Thread}, {"target", r.Target}, {"reason", r.Reason}} {
		if f.v != "" {
			attrs = append(attrs, slog.String(f.k, f.v))
		}
	}
	level := slog.LevelInfo
	if r.Outcome != OK {
		level = slog.LevelWarn
	}
	l.log.LogAttrs(ctx, level, "audit", attrs...)
}

// maxValue bounds each value Target copies from a call's arguments.
const maxValue = 200

// Target is what a tool call's arguments name: its key (with its scope),
// its subtask or its checkpoint, or "" for none. Arguments that are not
// a JSON object name nothing.
func Target(args json.RawMessage) string {
	var a map[string]json.RawMessage
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	return TargetOf(a)
}

// TargetOf is Target of arguments already read by name (nil: not an
// object).
func TargetOf(a map[string]json.RawMessage) string {
	var parts []string
	for _, k := range []string{"scope", "key", "subtask_id", "checkpoint", "thread_id"} {
		var v string
		if raw, ok := a[k]; ok && json.Unmarshal(raw, &v) == nil && v != "" {
			if len(v) > maxValue {
				v = v[:maxValue] + "…"
			}
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
