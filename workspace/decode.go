package workspace

import (
	"bytes"
	"fmt"
	"io/fs"
)

// FileKind names the type of a file that is not a regular file, in words
// fit for an error or a rejection reason: "symlink", "FIFO", "socket",
// "device", "directory", else "special file".
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
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
