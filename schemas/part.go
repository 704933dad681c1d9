package schemas

import (
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// parts holds the subschemas ValidateAt compiled, by kind and pointer.
var parts sync.Map // partKey → func() (*jsonschema.Schema, error)

type partKey struct {
	kind    Kind
	pointer string
}

// ValidateAt checks data, one JSON value that sits at at in a document of
// kind, against the subschema of kind's schema at pointer (a JSON pointer
// into the schema, "/properties/subtasks/additionalProperties" say), as
// Validate checks a whole document: size, depth, UTF-8, syntax, then the
// subschema, each compiled once. The problems of an *Error it returns are
// located in the document (at prefixed), as Validate would locate them.
// It serves a writer that knows the rest of the document valid and
// checks only the values it changed.
func ValidateAt(kind Kind, pointer, at string, data []byte) error {
	if !kind.Valid() {
		return fmt.Errorf("validate: %w %q", ErrUnknownKind, string(kind))
	}
	if err := CheckLimits(data, MaxBytes, MaxDepth-strings.Count(at, "/")); err != nil {
		return fmt.Errorf("%s: %s: %w", kind, at, err)
	}
	v, err := decode(kind, data)
	if err != nil {
		return err
	}
	key := partKey{kind, pointer}
	f, ok := parts.Load(key)
	if !ok {
		f, _ = parts.LoadOrStore(key, sync.OnceValues(func() (*jsonschema.Schema, error) {
			return compilePart(kind, pointer)
		}))
	}
	sch, err := f.(func() (*jsonschema.Schema, error))()
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	return judge(kind, sch, v, at)
}

// compilePart compiles the subschema at pointer of kind's schema.
func compilePart(kind Kind, pointer string) (*jsonschema.Schema, error) {
	c, err := compiler()
	if err != nil {
		return nil, err
	}
	s, err := c.Compile(kind.URL() + "#" + pointer)
	if err != nil {
		return nil, fmt.Errorf("compile schema %s at %s: %w", kind, pointer, err)
	}
	return s, nil
}
