package service

import (
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// Hint is the fix for err as every door says it: the hint err carries,
// else the one its kind of failure has (a document its schema refuses, a
// file that is not one JSON document, the lock of a busy file), or ""
// when none is known. A failure of the machine (a full disk, a read-only
// filesystem) has workspace.FaultHint's line besides.
func Hint(err error) string {
	if h := workspace.HintOf(err); h != "" {
		return h
	}
	var (
		invalid *schemas.Error
		syntax  *schemas.SyntaxError
	)
	switch {
	case errors.As(err, &invalid):
		return SchemaHint(invalid)
	case errors.As(err, &syntax):
		return fmt.Sprintf("the document must be one JSON value; look at line %d, column %d", syntax.Line, syntax.Column)
	case errors.Is(err, workspace.ErrLocked):
		return "another agent is writing the same thing; try again in a moment"
	}
	return ""
}

// SchemaHint says which field of a schema-invalid document is at fault
// and what is allowed there, and where the whole schema is.
func SchemaHint(e *schemas.Error) string {
	p := e.Problems[0]
	where := p.Pointer
	if where == "" {
		where = "the top level"
	}
	fix := "fix " + where
	if p.Rule == "required" {
		fix = "add the missing field to " + where
	}
	more := ""
	if n := len(e.Problems); n > 1 {
		more = fmt.Sprintf(" (and %d more problems above)", n-1)
	}
	return fmt.Sprintf("%s: %s%s; 'workspaced schema %s' shows every field and what it allows", fix, p.Message, more, e.Kind)
}
