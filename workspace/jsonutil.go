package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/workspaced/workspaced/atomicfile"
)

func jsonDecoder(r io.Reader) *json.Decoder {
	return json.NewDecoder(r)
}

// describeJSONError adds a line and column to a syntax error.
func describeJSONError(data []byte, err error) error {
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
func ParseValue(data []byte, maxDepth int) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := decodeStrict("value", data, maxDepth, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

func marshalCanonical(v any) ([]byte, error) { return atomicfile.Marshal(v) }
