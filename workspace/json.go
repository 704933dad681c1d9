package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: the document ends before it is complete (a truncated file?)")
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
	if err := CheckText("value", data); err != nil {
		return nil, err
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

// strictText is jsontext's checks made those of CheckText and
// encoding/json: UTF-8 with no lone surrogate escape, a name that repeats
// allowed. compactChecked adds Value.Compact's keeping of strings and
// numbers as written, as json.Compact keeps them.
var (
	strictText     = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(false)}
	compactChecked = append(strictText[:len(strictText):len(strictText)], jsontext.PreserveRawStrings(true))
)

// CompactValue is data, one JSON value, compacted (the bytes json.Compact
// makes of it) into a new slice, in one pass that checks it as well: ok
// only for exactly one JSON value whose text CheckText takes. It does
// not say what is wrong: a caller that must explain a refusal asks the
// slower checks (ParseValue) for their error.
func CompactValue(data []byte) (out []byte, ok bool) {
	out, err := jsontext.AppendFormat(make([]byte, 0, len(data)), data, compactChecked...)
	return out, err == nil && len(out) > 0
}

// IsObject says data is exactly one JSON object whose text CheckText
// takes (no limit of depth), in one pass that allocates nothing. Like
// CompactValue it does not say what is wrong.
func IsObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && jsontext.Value(t).IsValid(strictText...)
}

// PlainJSON says json.Marshal writes s between its quotes as it is:
// printable ASCII other than the quote, the backslash and the three it
// escapes for HTML.
func PlainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// CheckText refuses JSON text that is not valid UTF-8, or whose strings
// hold a lone surrogate escape ("\ud800" with no low half after it):
// Go's decoder turns either into U+FFFD without a word, so "bad\xffkey"
// and "bad\udcffkey" would both arrive as "bad\ufffdkey" and name the
// same entry. Every door decoding JSON a client wrote (MCP arguments, the
// panel's and the API's bodies) checks it first. what names the text in
// the error ("arguments of store_memory"); the error is ErrInvalid.
func CheckText(what string, data []byte) error {
	if !utf8.Valid(data) {
		i := invalidAt(data)
		return Invalidf(what, "send text as UTF-8: a key, an id, a name or a value may not hold other bytes",
			"not valid UTF-8 (byte %d is 0x%02x)", i, data[i])
	}
	if i := loneSurrogate(data); i >= 0 {
		return Invalidf(what, "escape a character outside the BMP as a surrogate pair (\\ud83d\\ude00), never half of one",
			"not valid UTF-8: a lone surrogate escape %s at byte %d", data[i:i+6], i)
	}
	return nil
}

func invalidAt(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

// loneSurrogate is the offset of the first \uD800–\uDFFF escape of a
// JSON string that is not a high half followed by a low half, or -1.
func loneSurrogate(data []byte) int {
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inStr {
			inStr = c == '"'
			continue
		}
		switch c {
		case '"':
			inStr = false
		case '\\':
			if i+1 >= len(data) {
				return -1
			}
			if data[i+1] != 'u' {
				i++
				continue
			}
			u, ok := hex4(data, i+2)
			if !ok {
				i++
				continue
			}
			switch {
			case u >= 0xD800 && u <= 0xDBFF:
				if lo, ok := hex4(data, i+8); ok && i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
				return i
			case u >= 0xDC00 && u <= 0xDFFF:
				return i
			}
			i += 5
		}
	}
	return -1
}

// hex4 is the value of the four hex digits at data[i:], if they are.
func hex4(data []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(data) {
		return 0, false
	}
	var v rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
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
	depth := 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			// To the string's closing quote: the next quote after an even
			// run of backslashes (none, or escaped backslashes).
			for {
				j := bytes.IndexByte(data[i+1:], '"')
				if j < 0 {
					return nil
				}
				i += 1 + j
				k := i - 1
				for k >= 0 && data[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
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
