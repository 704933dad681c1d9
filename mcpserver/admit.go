package mcpserver

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
)

// The arguments a client means to send — the right types, the values an
// enum allows, ids that are ids, integers written as integers — are
// admitted by a check compiled once from the tool's schema, on the
// arguments as read by name for the call's other steps: no second
// decoding into a document, no walk of the validator's (whose deep frames
// grow the stack of every call's new goroutine). It only ever says yes
// to what the validator admits (FuzzAdmittedIsValid); anything else —
// an argument missing or unknown, a wrong type, 2.0 for an integer —
// goes to the validator, which decides and says what is wrong.

// admit says true when the schema it was compiled from admits v, a
// JSON value whose syntax is already known good; false means only that
// the validator must decide.
type admit func(v json.RawMessage) bool

// admitNothing sends every value to the validator.
func admitNothing(json.RawMessage) bool { return false }

// admitter compiles sch into an admit.
func admitter(sch *schema) admit {
	if sch == nil {
		return func(json.RawMessage) bool { return true }
	}
	numeric := sch.Minimum != nil || sch.Maximum != nil
	nested := sch.Items != nil || sch.Properties != nil || sch.Required != nil || sch.AdditionalProperties != nil
	stringy := sch.Enum != nil || sch.Pattern != ""
	switch sch.Type {
	case "":
		if numeric || nested || stringy {
			return admitNothing
		}
		return func(json.RawMessage) bool { return true }
	case "string":
		if numeric || nested {
			return admitNothing
		}
		return admitString(sch)
	case "integer":
		if nested || stringy {
			return admitNothing
		}
		return func(v json.RawMessage) bool {
			n, err := strconv.ParseInt(string(v), 10, 64)
			return err == nil && (sch.Minimum == nil || n >= int64(*sch.Minimum)) && (sch.Maximum == nil || n <= int64(*sch.Maximum))
		}
	case "number":
		if numeric || nested || stringy {
			return admitNothing
		}
		return func(v json.RawMessage) bool { return len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') }
	case "boolean":
		if numeric || nested || stringy {
			return admitNothing
		}
		return func(v json.RawMessage) bool { return string(v) == "true" || string(v) == "false" }
	case "array":
		if numeric || stringy || sch.Properties != nil || sch.Required != nil || sch.AdditionalProperties != nil {
			return admitNothing
		}
		item := admitter(sch.Items)
		return func(v json.RawMessage) bool {
			if len(v) == 0 || v[0] != '[' {
				return false
			}
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				return false
			}
			for _, it := range items {
				if !item(it) {
					return false
				}
			}
			return true
		}
	case "object":
		if numeric || stringy || sch.Items != nil {
			return admitNothing
		}
		fields := admitObject(sch)
		return func(v json.RawMessage) bool {
			if len(v) == 0 || v[0] != '{' {
				return false
			}
			if sch.Properties == nil && sch.Required == nil && sch.AdditionalProperties == nil {
				return true
			}
			var m map[string]json.RawMessage
			return json.Unmarshal(v, &m) == nil && fields(m)
		}
	}
	return admitNothing
}

// admitString admits a string its enum and pattern allow.
func admitString(sch *schema) admit {
	var re *regexp.Regexp
	if sch.Pattern != "" {
		var err error
		if re, err = regexp.Compile(sch.Pattern); err != nil {
			return admitNothing
		}
	}
	return func(v json.RawMessage) bool {
		if len(v) < 2 || v[0] != '"' {
			return false
		}
		s := string(v[1 : len(v)-1])
		if bytes.IndexByte(v, '\\') >= 0 && json.Unmarshal(v, &s) != nil {
			return false
		}
		return (sch.Enum == nil || slices.Contains(sch.Enum, s)) && (re == nil || re.MatchString(s))
	}
}

// admitObject compiles the check of an object's fields, read by name:
// those required are there, each is admitted by its property's schema,
// and none is unknown where the object is closed.
func admitObject(sch *schema) func(map[string]json.RawMessage) bool {
	props := make(map[string]admit, len(sch.Properties))
	for k, p := range sch.Properties {
		props[k] = admitter(p)
	}
	closed := sch.AdditionalProperties != nil && !*sch.AdditionalProperties
	return func(m map[string]json.RawMessage) bool {
		for _, r := range sch.Required {
			if _, ok := m[r]; !ok {
				return false
			}
		}
		for k, v := range m {
			a, ok := props[k]
			if !ok {
				if closed {
					return false
				}
				continue
			}
			if !a(v) {
				return false
			}
		}
		return true
	}
}
