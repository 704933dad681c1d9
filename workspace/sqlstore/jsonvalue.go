package sqlstore

import "github.com/go-json-experiment/json/jsontext"

// compactChecked is jsontext's checks made those of workspace.CheckText
// and encoding/json (UTF-8 with no lone surrogate escape, a name that
// repeats allowed), with Value.Compact's keeping of strings and numbers
// as written, as json.Compact keeps them.
var compactChecked = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(false), jsontext.PreserveRawStrings(true)}

// compactValue is the store's workspace.Compactor: the value checked and
// compacted in one pass, where the standard library's (CheckText's scan,
// then json.Compact's) reads it twice; the same bytes, the same values
// refused (FuzzCompactValue). Most of a memory batch's bytes are values.
func compactValue(data []byte) (out []byte, ok bool) {
	out, err := jsontext.AppendFormat(make([]byte, 0, len(data)), data, compactChecked...)
	return out, err == nil && len(out) > 0
}
