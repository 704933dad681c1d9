package workspace

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test with errors.Is; the CLI maps them to exit
// codes (ErrNotFound → 3; ErrConflict and ErrLocked → 4; ErrInvalid → 1).
var (
	// ErrNotFound: a task, thread, key or file that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: an if_version that no longer matches, or a thing that
	// already exists where a new one was asked for.
	ErrConflict = errors.New("conflict")
	// ErrLocked: a lock still held when the wait timed out.
	ErrLocked = errors.New("locked")
	// ErrInvalid: input refused before anything was written (a bad id or
	// key, invalid JSON, a schema violation, a value over the limit).
	ErrInvalid = errors.New("invalid input")
	// ErrUnsafe: a file that is a symlink, FIFO, device, oversized or too
	// deeply nested, refused rather than read.
	ErrUnsafe = errors.New("unsafe file")
)

// Error is an error with a fix the user can apply. Kind is one of the
// sentinels above, so errors.Is(err, ErrInvalid) works on it.
//
// Hint speaks of the operation, not of any one way of calling it: it never
// names a command-line flag or a tool argument. Field names the request
// field at fault, so that each surface can point at its own input for it
// (the CLI at a flag, the MCP server at a tool argument).
type Error struct {
	Kind  error
	Op    string // what failed: "store env arc_task"
	Err   error  // why (may be nil when Msg says it)
	Msg   string
	Hint  string // how to fix it, or ""
	Field string // the request field at fault ("value", "status"…), or ""
}

func (e *Error) Error() string {
	s := e.Op
	add := func(part string) {
		if s != "" {
			s += ": "
		}
		s += part
	}
	if e.Msg != "" {
		add(e.Msg)
	}
	if e.Err != nil {
		add(e.Err.Error())
	}
	return s
}

// Unwrap lets errors.Is see both the kind and the cause.
func (e *Error) Unwrap() []error {
	errs := []error{e.Kind}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// Reason is err's text without the operation an *Error names: what a
// caller that already says which file or marker it read puts after that
// name (a journal record's rejection reason, say).
func Reason(err error) string {
	var we *Error
	if errors.As(err, &we) {
		s := we.Msg
		if we.Err != nil {
			if s != "" {
				s += ": "
			}
			s += we.Err.Error()
		}
		if s != "" {
			return s
		}
	}
	return err.Error()
}

// HintOf returns the hint carried by err, if any.
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}

// FieldOf returns the request field err names as at fault, if any: one of
// the Field… constants.
func FieldOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// Request fields an Error may name as at fault. Each is the name of a
// request's field in the workspace's own words.
const (
	FieldDescription = "description" // StoreRequest, UpdateRequest, NewTaskRequest
	FieldValue       = "value"       // StoreRequest, UpdateRequest
	FieldID          = "id"          // NewTaskRequest, NewThreadRequest
	FieldTask        = "task"        // the task a thread is looked up in
	FieldStatus      = "status"      // DoneRequest
	FieldError       = "error"       // DoneRequest
	FieldOutputFile  = "output_file" // DoneRequest
	FieldTTL         = "ttl_seconds" // MemoryPutRequest
	FieldIfVersion   = "if_version"  // MemoryPutRequest, MemoryDeleteRequest
	FieldFilter      = "filter"      // MemorySearchRequest
)

// FieldErr is an error of the given kind naming the request field at
// fault.
func FieldErr(kind error, op, field, hint, format string, args ...any) error {
	return &Error{Kind: kind, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint, Field: field}
}

func Invalidf(op, hint, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

func NotFoundf(op, hint, format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}
