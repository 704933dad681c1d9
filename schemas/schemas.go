// Package schemas holds the JSON Schemas (draft 2020-12) of every file kind
// in a workspace tree and validates documents against them.
//
// The schemas are the contract for agents written in other languages: they
// are embedded in the binary, published by `workspaced schema`, and each one
// is self-contained except journal.schema.json, which refers to the plan,
// review, claim and done schemas by relative URL. They are compiled once, on
// first use; every function here is safe for concurrent use.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Kind names one kind of file in the tree; each has one schema.
type Kind string

// The file kinds. The string value is the schema's base name:
// Kind "plan" is schemas/plan.schema.json.
const (
	KindWorkspace Kind = "workspace" // workspace.json
	KindAgents    Kind = "agents"    // config/agents.json
	KindTask      Kind = "task"      // tasks/<id>/task.json
	KindPlan      Kind = "plan"      // plan.json, plans/plan_v<N>.json
	KindState     Kind = "state"     // state.json, backups/state_*.json
	KindOutput    Kind = "output"    // outputs/<subtask_id>.json, outputs/history/<subtask_id>.v<N>.json
	KindReview    Kind = "review"    // reviews/<review_id>.json, reviews/history/<review_id>.v<N>.json
	KindEntry     Kind = "entry"     // env, session, agent and global entries
	KindThread    Kind = "thread"    // threads/<id>.json
	KindClaim     Kind = "claim"     // .claim.<agent>[.<suffix>]
	KindDone      Kind = "done"      // .done.<agent>[.<suffix>]
	KindFriction  Kind = "friction"  // friction/friction.json
	KindJournal   Kind = "journal"   // journal/<seq>.json, journal/<first>-<last>.json
	// KindSkill is the front matter of skills/<name>.md, read into an
	// object: the file itself is Markdown, not JSON.
	KindSkill Kind = "skill"
)

var kinds = []Kind{
	KindWorkspace, KindAgents, KindTask, KindPlan, KindState, KindOutput, KindReview,
	KindEntry, KindThread, KindClaim, KindDone, KindFriction, KindJournal,
	KindSkill,
}

// Limits applied by Validate before any JSON is decoded, the same for every
// reader of agent files: no file over 16 MiB, no nesting deeper than 64.
const (
	// MaxBytes is the largest document Validate accepts: 16 MiB.
	MaxBytes = 16 << 20
	// MaxDepth is the deepest nesting of arrays and objects Validate
	// accepts: a top-level object is depth 1.
	MaxDepth = 64
)

// BaseURL is the prefix of every schema's $id; a schema's $id is
// BaseURL + kind + ".schema.json".
const BaseURL = "https://workspaced.dev/schemas/"

// Sentinel errors, for errors.Is.
var (
	// ErrUnknownKind is returned for a Kind that has no schema.
	ErrUnknownKind = errors.New("unknown file kind")
	// ErrTooLarge is returned for a document over the size limit.
	ErrTooLarge = errors.New("document too large")
	// ErrTooDeep is returned for a document nested deeper than the limit.
	ErrTooDeep = errors.New("document nested too deeply")
	// ErrInvalid matches (errors.Is) every *Error and *SyntaxError: the
	// document was read but is not acceptable.
	ErrInvalid = errors.New("invalid document")
)

//go:embed *.schema.json
var files embed.FS

// Files returns the schema files, named <kind>.schema.json, as a read-only
// file system, for publishing them next to the tree.
func Files() fs.FS { return files }

// Kinds returns every file kind, in a fixed order. The slice is a fresh copy.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// Valid reports whether k names a kind with a schema.
func (k Kind) Valid() bool {
	for _, c := range kinds {
		if k == c {
			return true
		}
	}
	return false
}

// ParseKind returns the Kind named s, or an error wrapping ErrUnknownKind
// that lists the known kinds.
func ParseKind(s string) (Kind, error) {
	if k := Kind(s); k.Valid() {
		return k, nil
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownKind, s, strings.Join(names, ", "))
}

// FileName returns the schema's file name, "<kind>.schema.json".
func (k Kind) FileName() string { return string(k) + ".schema.json" }

// URL returns the schema's $id.
func (k Kind) URL() string { return BaseURL + k.FileName() }

// Source returns the raw text of the schema of kind, or nil for an unknown
// kind. The caller owns the returned slice.
func Source(kind Kind) []byte {
	if !kind.Valid() {
		return nil
	}
	b, err := files.ReadFile(kind.FileName())
	if err != nil {
		return nil
	}
	return b
}

// compiled holds one lazily compiled schema per kind. Each kind compiles
// on first use and only then: a command that validates one kind (opening a
// workspace checks workspace.json) pays for that kind alone, not all 13.
var compiled = func() map[Kind]func() (*jsonschema.Schema, error) {
	m := make(map[Kind]func() (*jsonschema.Schema, error), len(kinds))
	for _, k := range kinds {
		m[k] = sync.OnceValues(func() (*jsonschema.Schema, error) { return compileKind(k) })
	}
	return m
}()

// schemaOf returns the compiled schema of a known kind.
func schemaOf(k Kind) (*jsonschema.Schema, error) {
	f, ok := compiled[k]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, k)
	}
	return f()
}

// compileAll compiles every kind (the tests use it to check them all).
func compileAll() (map[Kind]*jsonschema.Schema, error) {
	out := make(map[Kind]*jsonschema.Schema, len(kinds))
	for _, k := range kinds {
		s, err := schemaOf(k)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func compileKind(kind Kind) (*jsonschema.Schema, error) {
	c, err := compiler()
	if err != nil {
		return nil, err
	}
	s, err := c.Compile(kind.URL())
	if err != nil {
		return nil, fmt.Errorf("compile schema %s: %w", kind, err)
	}
	return s, nil
}

// compiler is a compiler that reads the embedded schemas.
func compiler() (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.Formats["date-time"] = isDateTime
	// Every reference resolves inside the embedded set; nothing is
	// fetched. A schema is read and parsed when a compile first reaches
	// it (journal's reaches plan, review, claim and done), not every one
	// for each compile: a command that checks workspace.json alone parses
	// that schema alone.
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		if name, ok := strings.CutPrefix(u, BaseURL); ok {
			if k := Kind(strings.TrimSuffix(name, ".schema.json")); k.Valid() && k.FileName() == name {
				src, err := files.ReadFile(name)
				if err != nil {
					return nil, fmt.Errorf("read schema %s: %w", k, err)
				}
				return io.NopCloser(bytes.NewReader(src)), nil
			}
		}
		return nil, fmt.Errorf("schema %s is not embedded", u)
	}
	return c, nil
}

// isDateTime accepts what RFC 3339 calls a date-time and Go's time.Time
// also decodes: the RFC allows a lower-case 't' and 'z' and a leap second,
// which Go refuses, so a document that passed would still fail to load.
func isDateTime(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true // format applies to strings only; "type" judges the rest
	}
	if !jsonschema.Formats["date-time"](s) {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// Problem is one way a document breaks its schema.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value:
	// "" for the whole document, "/subtasks/0/id" for a nested one. For a
	// missing required field it is the object that lacks it.
	Pointer string `json:"pointer"`
	// Rule is the schema keyword that failed: "required", "enum",
	// "pattern", "type", "format", "minimum", ...
	Rule string `json:"rule"`
	// Message says what is wrong, for people.
	Message string `json:"message"`
}

// String formats the problem as "<pointer>: <rule>: <message>", with
// "(root)" for the empty pointer.
func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return ptr + ": " + p.Rule + ": " + p.Message
}

// Error is returned by Validate for a well-formed JSON document that breaks
// its schema. Problems is never empty and is sorted by document position
// (pointer, array indexes compared as numbers), then rule, so the first
// problem is stable from run to run.
type Error struct {
	Kind     Kind
	Problems []Problem
}

// maxErrorLines bounds how many problems Error() prints.
const maxErrorLines = 20

// Error prints each problem on its own line, prefixed by the kind:
//
//	plan: /subtasks/0/id: pattern: does not match pattern '^[A-Za-z0-9]...'
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i == maxErrorLines {
			fmt.Fprintf(&b, "\n%s: ... and %d more problems", e.Kind, len(e.Problems)-i)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(string(e.Kind))
		b.WriteString(": ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// SyntaxError is returned by Validate for bytes that are not one
// well-formed JSON value in UTF-8.
type SyntaxError struct {
	Kind Kind
	// Offset is the byte offset of the problem, counted from 0.
	Offset int64
	// Line and Column locate the same byte, both counted from 1; Column
	// counts bytes.
	Line, Column int
	Msg          string
	// Err is the underlying decoder error, if any.
	Err error
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s: invalid JSON at line %d, column %d (byte %d): %s", e.Kind, e.Line, e.Column, e.Offset, e.Msg)
}

// Unwrap returns the underlying decoder error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid.
func (e *SyntaxError) Is(target error) bool { return target == ErrInvalid }

// Validate checks that data is one JSON document of the given kind: at most
// MaxBytes long, nested at most MaxDepth deep, valid UTF-8, well-formed
// JSON, and valid against the kind's schema (with formats such as date-time
// asserted). It returns nil, an error wrapping ErrUnknownKind, ErrTooLarge or
// ErrTooDeep, a *SyntaxError, or an *Error listing every problem. The size
// and depth are checked before anything is decoded, so hostile input costs
// at most one pass over MaxBytes. Validate never modifies data.
func Validate(kind Kind, data []byte) error {
	return ValidateLimits(kind, data, MaxBytes, MaxDepth)
}

// ValidateLimits is Validate with the size and depth limits given (from
// workspace.json limits); a limit <= 0 takes the default.
func ValidateLimits(kind Kind, data []byte, maxBytes, maxDepth int) error {
	if !kind.Valid() {
		return fmt.Errorf("validate: %w %q", ErrUnknownKind, string(kind))
	}
	if err := CheckLimits(data, maxBytes, maxDepth); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	v, err := decode(kind, data)
	if err != nil {
		return err
	}
	sch, err := schemaOf(kind)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	return judge(kind, sch, v, "")
}

// judge validates v against sch, kind's schema or the part of it at the
// pointer at ("" for the whole document), and names each problem's place
// in the whole document.
func judge(kind Kind, sch *jsonschema.Schema, v any, at string) error {
	err := sch.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		if at == "" {
			return fmt.Errorf("%s: validate: %w", kind, err)
		}
		return fmt.Errorf("%s: validate %s: %w", kind, at, err)
	}
	ps := problems(ve)
	for i := range ps {
		ps[i].Pointer = at + ps[i].Pointer
	}
	return &Error{Kind: kind, Problems: ps}
}

// CheckLimits refuses data longer than maxBytes or with arrays and objects
// nested deeper than maxDepth, in one pass over the bytes and without
// decoding; a limit <= 0 takes the default (MaxBytes, MaxDepth). Brackets
// inside strings are not counted. Malformed JSON may pass: the decoder
// reports it afterwards.
func CheckLimits(data []byte, maxBytes, maxDepth int) error {
	if maxBytes <= 0 {
		maxBytes = MaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = MaxDepth
	}
	if len(data) > maxBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), maxBytes)
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			// Skip the string: find its closing quote, stepping over
			// escapes, with IndexAny doing the fast scanning.
			for i++; i < len(data); i++ {
				j := bytes.IndexAny(data[i:], `"\`)
				if j < 0 {
					i = len(data)
					break
				}
				i += j
				if data[i] == '"' {
					break
				}
				i++ // the escaped byte
			}
		case '[', '{':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("%w: more than %d levels at byte %d", ErrTooDeep, maxDepth, i)
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// decode parses data into the generic form the validator expects, with
// numbers kept exact, refusing invalid UTF-8 and trailing data.
func decode(kind Kind, data []byte) (any, error) {
	if !utf8.Valid(data) {
		off := invalidUTF8Offset(data)
		return nil, syntaxError(kind, data, off, "invalid UTF-8", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			// Offset is the count of bytes read when the error was seen,
			// so the offending byte is the one before it.
			return nil, syntaxError(kind, data, max(se.Offset-1, 0), se.Error(), err)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, syntaxError(kind, data, int64(len(data)), "unexpected end of JSON input", err)
		case errors.As(err, &te):
			return nil, syntaxError(kind, data, te.Offset, te.Error(), err)
		default:
			return nil, syntaxError(kind, data, dec.InputOffset(), err.Error(), err)
		}
	}
	// Exactly one value: anything but white space after it is an error.
	end := dec.InputOffset()
	rest := bytes.TrimLeft(data[end:], " \t\r\n")
	if len(rest) > 0 {
		off := int64(len(data) - len(rest))
		return nil, syntaxError(kind, data, off, "unexpected data after the top-level value", nil)
	}
	return v, nil
}

func invalidUTF8Offset(data []byte) int64 {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return int64(i)
		}
		i += size
	}
	return int64(len(data))
}

func syntaxError(kind Kind, data []byte, off int64, msg string, err error) *SyntaxError {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	prefix := data[:off]
	line := bytes.Count(prefix, []byte{'\n'}) + 1
	col := int(off) - (bytes.LastIndexByte(prefix, '\n') + 1) + 1
	msg = strings.TrimPrefix(msg, "json: ")
	return &SyntaxError{Kind: kind, Offset: off, Line: line, Column: col, Msg: msg, Err: err}
}

// problems flattens a validation error tree into its leaves, deduplicated
// and sorted.
func problems(ve *jsonschema.ValidationError) []Problem {
	seen := make(map[Problem]bool)
	var out []Problem
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := Problem{Pointer: pointerOf(e.InstanceLocation), Rule: ruleOf(e.KeywordLocation), Message: e.Message}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	walk(ve)
	if len(out) == 0 {
		// Cannot happen with the library's error trees, but an *Error must
		// name at least one problem.
		out = append(out, Problem{Pointer: pointerOf(ve.InstanceLocation), Rule: ruleOf(ve.KeywordLocation), Message: ve.Message})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if c := comparePointers(out[i].Pointer, out[j].Pointer); c != 0 {
			return c < 0
		}
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// pointerOf turns the validator's instance location, whose segments are
// RFC 6901 escaped and then percent-encoded, into a plain RFC 6901 pointer.
func pointerOf(loc string) string {
	if !strings.Contains(loc, "%") {
		return loc
	}
	segs := strings.Split(loc, "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	return strings.Join(segs, "/")
}

// namedKeywords are keywords whose next keyword-location segment is a name
// (a property, a definition) rather than a keyword.
var namedKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependentRequired": true, "dependencies": true,
}

// ruleOf returns the last schema keyword in a keyword location such as
// "/properties/subtasks/items/$ref/properties/id/$ref/pattern" ("pattern"),
// skipping property names and array indexes.
func ruleOf(loc string) string {
	segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	rule := ""
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if s == "" {
			continue
		}
		if _, err := strconv.Atoi(s); err == nil {
			continue
		}
		rule = s
		if namedKeywords[s] {
			i++
		}
	}
	if rule == "" {
		rule = "schema"
	}
	return rule
}

// comparePointers orders JSON pointers by document structure: segment by
// segment, numeric segments as numbers, a parent before its children.
func comparePointers(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		an, aerr := strconv.Atoi(as[i])
		bn, berr := strconv.Atoi(bs[i])
		if aerr == nil && berr == nil {
			if an < bn {
				return -1
			}
			return 1
		}
		return strings.Compare(as[i], bs[i])
	}
	return len(as) - len(bs)
}

// KindOf infers the kind of a file from its slash-separated path relative to
// the workspace root ("tasks/t1/outputs/st_1.json" → KindOutput). It reports
// false for anything that is not a schema'd file: events.log, lock files,
// temporary dot-files, unclean paths ("..", leading "/"), and files in
// unexpected places. It only looks at the path, never at the disk.
func KindOf(relPath string) (Kind, bool) {
	if relPath == "" || path.IsAbs(relPath) || path.Clean(relPath) != relPath {
		return "", false
	}
	segs := strings.Split(relPath, "/")
	for _, s := range segs[:len(segs)-1] {
		if strings.HasPrefix(s, ".") {
			return "", false
		}
	}
	name := segs[len(segs)-1]
	// jsonFile: a visible *.json name (temp files are dot-files).
	jsonFile := !strings.HasPrefix(name, ".") && len(name) > len(".json") && strings.HasSuffix(name, ".json")
	switch len(segs) {
	case 1:
		if name == "workspace.json" {
			return KindWorkspace, true
		}
	case 2:
		switch {
		case relPath == "config/agents.json":
			return KindAgents, true
		case relPath == "friction/friction.json":
			return KindFriction, true
		case segs[0] == "skills" && !strings.HasPrefix(name, ".") && len(name) > len(".md") && strings.HasSuffix(name, ".md"):
			// Markdown: what has the schema is its front matter.
			return KindSkill, true
		}
	}
	switch {
	case len(segs) == 3 && segs[0] == "memory" && segs[1] == "global" && jsonFile:
		return KindEntry, true
	case len(segs) == 4 && segs[0] == "memory" && segs[1] == "agents" && jsonFile:
		return KindEntry, true
	case len(segs) >= 3 && segs[0] == "tasks":
		return taskKind(segs[2:], name, jsonFile)
	}
	return "", false
}

// taskKind classifies a path inside tasks/<id>/; rest is what follows the
// task id.
func taskKind(rest []string, name string, jsonFile bool) (Kind, bool) {
	switch len(rest) {
	case 1:
		switch {
		case name == "task.json":
			return KindTask, true
		case name == "plan.json":
			return KindPlan, true
		case name == "state.json":
			return KindState, true
		case strings.HasPrefix(name, ".claim.") && len(name) > len(".claim."):
			return KindClaim, true
		case strings.HasPrefix(name, ".done.") && len(name) > len(".done."):
			return KindDone, true
		}
	case 2:
		if !jsonFile {
			return "", false
		}
		switch rest[0] {
		case "plans":
			n := strings.TrimSuffix(strings.TrimPrefix(name, "plan_v"), ".json")
			if strings.HasPrefix(name, "plan_v") && n != "" && strings.Trim(n, "0123456789") == "" {
				return KindPlan, true
			}
		case "backups":
			if strings.HasPrefix(name, "state_") {
				return KindState, true
			}
		case "outputs":
			return KindOutput, true
		case "reviews":
			return KindReview, true
		case "env":
			return KindEntry, true
		case "threads":
			return KindThread, true
		case "journal":
			return KindJournal, true
		}
	case 3:
		switch {
		case !jsonFile:
		case rest[0] == "sessions":
			return KindEntry, true
		case rest[0] == "outputs" && rest[1] == "history":
			// The versions an output replaced: outputs/history/<id>.v<N>.json.
			return KindOutput, true
		case rest[0] == "reviews" && rest[1] == "history":
			return KindReview, true
		}
	}
	return "", false
}
