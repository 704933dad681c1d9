package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

func jsonDecoder(r io.Reader) *json.Decoder {
	return json.NewDecoder(r)
}

// DescribeJSONError adds a line and column to a syntax error.
func DescribeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for i := int64(0); i < se.Offset-1 && i < int64(len(data)); i++ {
			if data[i] == '\n' {
				line++
				col = 1
			} else {
				col++
			}
		}
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, se)
	}
	if errors.Is(err, io.EOF) {
		return errors.New("empty input, expected a JSON document")
	}
	return err
}

// ParseValue checks that data is exactly one JSON document within the depth
// limit and returns it compacted.
//
// Everything wrong with it is ErrInvalid (it is input to refuse): not
// JSON, more than one document, not UTF-8, or nested too deeply.
func ParseValue(data []byte, maxDepth int) (json.RawMessage, error) {
	if !utf8.Valid(data) {
		return nil, Invalidf("value", "values are UTF-8 JSON text", "not valid UTF-8")
	}
	if err := CheckDepth(data, maxDepth); err != nil {
		return nil, Invalidf("value", "flatten the value", "nested deeper than %d levels", maxDepth)
	}
	var raw json.RawMessage
	if err := DecodeStrict("value", data, maxDepth, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// marshalCanonical is the canonical encoding of every file the tree
// keeps: two-space indentation, HTML left unescaped, keys in struct order
// (maps sorted), one trailing newline. It is atomicfile.Marshal's
// encoding, which the file store writes with; the model keeps its own so
// that it writes no file.
func marshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
