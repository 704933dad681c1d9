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
type Error struct {
	Kind error
	Op   string // what failed: "store env arc_task"
	Err  error  // why (may be nil when Msg says it)
	Msg  string
	Hint string // how to fix it, or ""
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

// HintOf returns the hint carried by err, if any.
func HintOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Hint
	}
	return ""
}

func invalidf(op, hint, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

func notFoundf(op, hint, format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Op: op, Msg: fmt.Sprintf(format, args...), Hint: hint}
}
