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

// CheckDepth reports an error if the JSON text nests arrays and objects
// deeper than max. It scans bytes (strings skipped) without decoding, so a
// hostile document costs one pass and no allocation.
func CheckDepth(data []byte, max int) error {
	depth, inStr, esc := 0, false, false
	for i, c := range data {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
			if depth > max {
				return &Error{Kind: ErrUnsafe, Op: "parse JSON", Msg: fmt.Sprintf("nested deeper than %d levels (at byte %d)", max, i)}
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// DecodeStrict decodes JSON data into v after the depth check, rejecting
// trailing data. name labels errors.
func DecodeStrict(name string, data []byte, maxDepth int, v any) error {
	if err := CheckDepth(data, maxDepth); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dec := jsonDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return &Error{Kind: ErrInvalid, Op: "parse " + name, Err: DescribeJSONError(data, err)}
	}
	if dec.More() {
		return &Error{Kind: ErrInvalid, Op: "parse " + name, Msg: "trailing data after the JSON document"}
	}
	return nil
}
