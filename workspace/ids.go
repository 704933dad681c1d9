package workspace

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/workspaced/workspaced/vocab"
)

// MaxKeyBytes bounds a key; MaxFileName bounds its encoded file name so it
// fits every common filesystem's 255-byte name limit.
const (
	MaxKeyBytes = 200
	MaxFileName = 250
)

// ValidateID checks a task, subtask, thread, agent, review or plan id
// against vocab.IDPattern. what names the id in the error ("task id"); the
// error matches ErrInvalid and vocab.ErrInvalidID, and its hint says the
// grammar in words.
func ValidateID(what, id string) error {
	if err := vocab.ValidateID(what, id); err != nil {
		return &Error{Kind: ErrInvalid, Err: err, Hint: vocab.IDRule}
	}
	return nil
}

// ValidateKey checks an entry key: 1–200 bytes of UTF-8 with no control
// characters, whose encoded file name fits MaxFileName.
func ValidateKey(key string) error {
	op := "key"
	switch {
	case key == "":
		return Invalidf(op, "give a key of 1–200 bytes", "empty key")
	case len(key) > MaxKeyBytes:
		return Invalidf(op, "keys are at most 200 bytes", "key is %d bytes", len(key))
	case !utf8.ValidString(key):
		return Invalidf(op, "keys must be valid UTF-8", "key %q is not valid UTF-8", key)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return Invalidf(op, "remove control characters (newlines, tabs, NUL…) from the key", "key %q contains a control character", key)
		}
	}
	if n := len(EncodeKey(key)); n > MaxFileName {
		return Invalidf(op, "use fewer non-ASCII or punctuation characters: each is stored as %XX", "key %q encodes to a %d-byte file name (limit %d)", key, n, MaxFileName)
	}
	return nil
}

// ValidateDescription checks an entry's short description: UTF-8 text
// without NUL. Every store keeps any other text exactly (newlines, tabs and
// other control characters included); a NUL byte or invalid UTF-8 is
// refused on every store alike, because a database's text column cannot
// hold either and the file tree's JSON would not keep invalid UTF-8 as
// given.
func ValidateDescription(desc string) error {
	op := "description"
	switch {
	case !utf8.ValidString(desc):
		return Invalidf(op, "descriptions must be valid UTF-8", "description %q is not valid UTF-8", desc)
	case strings.IndexByte(desc, 0) >= 0:
		return Invalidf(op, "remove the NUL character from the description", "description %q contains a NUL character", desc)
	}
	return nil
}

func keepByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// EncodeKey maps a key to its file name without the ".json" suffix: bytes
// outside [A-Za-z0-9._-], and a leading '.', become %XX (upper-case hex).
// The mapping is reversible and the result never contains '/' and never
// starts with '.', so no key can name a path outside its directory.
func EncodeKey(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		if keepByte(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// DecodeKey reverses EncodeKey. It accepts only canonical encodings (the
// exact output of EncodeKey for some key), so every file name maps to at
// most one key and foreign files are reported, not misread.
func DecodeKey(name string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			if !keepByte(c) || (i == 0 && c == '.') {
				return "", fmt.Errorf("file name %q: byte %q must be percent-encoded", name, c)
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(name) {
			return "", fmt.Errorf("file name %q: truncated escape", name)
		}
		v, ok := unhex(name[i+1], name[i+2])
		if !ok {
			return "", fmt.Errorf("file name %q: bad escape %q (upper-case hex required)", name, name[i:i+3])
		}
		if keepByte(v) && !(b.Len() == 0 && v == '.') {
			return "", fmt.Errorf("file name %q: %q need not be escaped", name, name[i:i+3])
		}
		b.WriteByte(v)
		i += 2
	}
	key := b.String()
	if err := ValidateKey(key); err != nil {
		return "", fmt.Errorf("file name %q: %w", name, err)
	}
	return key, nil
}

func unhex(a, b byte) (byte, bool) {
	h := func(c byte) (byte, bool) {
		switch {
		case c >= '0' && c <= '9':
			return c - '0', true
		case c >= 'A' && c <= 'F':
			return c - 'A' + 10, true
		}
		return 0, false
	}
	x, ok1 := h(a)
	y, ok2 := h(b)
	return x<<4 | y, ok1 && ok2
}
