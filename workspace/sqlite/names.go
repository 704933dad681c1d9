package sqlite

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/workspaced/workspaced/workspace"
)

// checkMarkerName refuses (ErrInvalid) a marker name an agent chose that
// the file tree could not hold as the marker's file name, so that every
// marker the daemon journals here exports, and reads in messages, as on
// files: it names a marker of kind, in at most workspace.MaxFileName
// bytes of UTF-8, with no '/', '\' or control character (NUL, newline).
// Anything else — quotes, spaces, SQL, any script — is kept as given: the
// store passes names as parameters, never as SQL.
func checkMarkerName(kind, name string) error {
	bad := func(msg string) error {
		return &workspace.Error{Kind: workspace.ErrInvalid, Op: "drop marker " + fmt.Sprintf("%.80q", name), Msg: msg,
			Hint: "name it ." + kind + ".<agent>.<unique suffix>, as a file name: at most 250 bytes of UTF-8, no '/', '\\' or control characters"}
	}
	if k, ok := workspace.IsMarkerName(name); !ok || k != kind {
		return bad("not the name of a " + kind + " marker")
	}
	switch {
	case len(name) > workspace.MaxFileName:
		return bad(fmt.Sprintf("%d bytes, over the %d-byte limit of a file name", len(name), workspace.MaxFileName))
	case !utf8.ValidString(name):
		return bad("not valid UTF-8")
	case strings.ContainsAny(name, `/\`):
		return bad("holds a '/' or '\\'")
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return bad("holds a control character")
	}
	return nil
}
