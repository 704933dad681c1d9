package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
)

// Arguments are checked here, against the tool's own input schema, before
// a handler sees them, so that a call the schema refuses is answered in
// words a model can act on — "scope must be one of "agent", "session",
// "global", not "planet"" — and names the argument at fault.

// argChecker validates one tool's arguments.
type argChecker struct {
	tool   string
	schema *schema
	v      *jsonschema.Schema
	// admits is the quick check of the arguments by name (admit.go).
	admits func(map[string]json.RawMessage) bool
}

// newArgChecker compiles sch. It panics when the schema does not compile:
// the schemas are built from Go types, so that is a programming error,
// caught when any test builds a server.
func newArgChecker(tool string, sch *schema) *argChecker {
	src, err := json.Marshal(sch)
	if err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", tool, err))
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	url := "mcp:///tools/" + tool + ".schema.json"
	if err := c.AddResource(url, bytes.NewReader(src)); err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", tool, err))
	}
	v, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("input schema of %s: %v", tool, err))
	}
	return &argChecker{tool: tool, schema: sch, v: v, admits: admitObject(sch)}
}

// decodeArgs checks raw, the arguments as sent (args: as read by name),
// and decodes them into In. JSON Schema counts 2.0 and 2e0 as integers,
// and a model may send them so: a number with an integral value is
// decoded into an integer field as the integer it is. (Handlers that keep
// a value exactly, such as value and output, read it from the raw
// arguments, not from In.)
//
// Arguments the quick check admits (admit.go) are decoded from raw
// as sent; the others are checked by the validator, which explains a
// refusal, and decoded as sent when they can be; only when that fails
// (an integer written 2.0 or 2e0, a number no float holds) are they
// decoded again from the checked document, its integral numbers
// rewritten, which decodes them as before or fails saying why.
func decodeArgs[In any](a *argChecker, args *callArgs, raw json.RawMessage) (In, error) {
	var in In
	if args.top != nil && a.admits(args.top) {
		if err := workspace.CheckText("arguments of "+a.tool, raw); err != nil {
			return in, err
		}
		if json.Unmarshal(raw, &in) == nil {
			return in, nil
		}
	}
	doc, err := a.check(raw)
	if err != nil {
		return in, err
	}
	if json.Unmarshal(raw, &in) == nil {
		return in, nil
	}
	return fromDoc[In](a, doc)
}

// fromDoc decodes doc, arguments a checked, into In, each number with an
// integral value as that integer.
func fromDoc[In any](a *argChecker, doc any) (In, error) {
	var in In
	data, err := json.Marshal(integral(doc))
	if err == nil {
		err = json.Unmarshal(data, &in)
	}
	if err != nil {
		return in, &workspace.Error{Kind: workspace.ErrInvalid, Op: "arguments of " + a.tool, Err: err}
	}
	return in, nil
}

// integral rewrites, through v, every number that has an integral value
// and fits an int64 as a plain integer: 2.0 and 2e0 become 2.
func integral(v any) any {
	switch x := v.(type) {
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return x
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
	case map[string]any:
		for k, e := range x {
			x[k] = integral(e)
		}
	case []any:
		for i, e := range x {
			x[i] = integral(e)
		}
	}
	return v
}

// check decodes raw, the arguments as sent, and validates them, returning
// them decoded (numbers as json.Number). No arguments at all are an empty
// object.
func (a *argChecker) check(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := workspace.CheckText("arguments of "+a.tool, raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "arguments of " + a.tool, Msg: "not JSON", Err: err}
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "arguments of " + a.tool, Msg: "not one JSON object: data after it"}
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "arguments of " + a.tool, Msg: "not a JSON object",
			Hint: "pass the arguments as an object, e.g. {\"key\": \"...\"}"}
	}
	err := a.v.Validate(doc)
	if err == nil {
		return doc, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, &workspace.Error{Kind: workspace.ErrInvalid, Op: "arguments of " + a.tool, Err: err}
	}
	var msgs []string
	hint := ""
	seen := map[string]bool{}
	for _, leaf := range leaves(ve) {
		m, h := a.explain(doc, leaf)
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
		if hint == "" {
			hint = h
		}
	}
	sort.Strings(msgs)
	bad := &workspace.Error{Kind: workspace.ErrInvalid, Op: "arguments of " + a.tool, Msg: strings.Join(msgs, "; ")}
	if hint == "" {
		return nil, bad
	}
	return nil, &toolError{err: bad, hint: hint}
}

// leaves flattens a validation error tree into its leaves.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// explain says what one failed rule means, naming the argument, and how
// to fix it when there is more to say than the message.
func (a *argChecker) explain(doc any, ve *jsonschema.ValidationError) (msg, hint string) {
	ptr := splitPointer(ve.InstanceLocation)
	sch, val := a.schema, doc
	for _, tok := range ptr {
		switch {
		case sch == nil:
		case sch.Items != nil:
			sch = sch.Items
		default:
			sch = sch.Properties[tok]
		}
		switch v := val.(type) {
		case map[string]any:
			val = v[tok]
		case []any:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(v) {
				val = v[i]
			}
		}
	}
	where := argName(ptr)
	rule := ve.KeywordLocation[strings.LastIndexByte(ve.KeywordLocation, '/')+1:]
	if sch == nil {
		return where + ": " + ve.Message, ""
	}
	switch rule {
	case "required":
		obj, _ := val.(map[string]any)
		var miss []string
		for _, r := range sch.Required {
			if _, ok := obj[r]; !ok {
				miss = append(miss, r)
			}
		}
		if len(ptr) == 0 {
			return "missing required argument " + strings.Join(miss, ", "), ""
		}
		return where + " lacks " + strings.Join(miss, ", "), ""
	case "additionalProperties":
		obj, _ := val.(map[string]any)
		var extra []string
		for k := range obj {
			if _, ok := sch.Properties[k]; !ok {
				extra = append(extra, strconv.Quote(k))
			}
		}
		sort.Strings(extra)
		var names []string
		for k := range sch.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		takes := "no arguments"
		if len(names) > 0 {
			takes = strings.Join(names, ", ")
		}
		if len(ptr) == 0 {
			return "unknown argument " + strings.Join(extra, ", "), a.tool + " takes " + takes
		}
		return where + " has unknown field " + strings.Join(extra, ", "), "it takes " + takes
	case "enum":
		q := make([]string, len(sch.Enum))
		for i, e := range sch.Enum {
			q[i] = strconv.Quote(e)
		}
		return fmt.Sprintf("%s must be one of %s, not %s", where, strings.Join(q, ", "), jsonText(val)), ""
	case "type":
		return fmt.Sprintf("%s must be %s, not %s", where, article(sch.Type), jsonText(val)), ""
	case "pattern":
		return fmt.Sprintf("%s must be an id, not %s: %s", where, jsonText(val), vocab.IDRule), ""
	case "minimum":
		return fmt.Sprintf("%s must be at least %d, not %s", where, *sch.Minimum, jsonText(val)), ""
	case "maximum":
		return fmt.Sprintf("%s must be at most %d, not %s", where, *sch.Maximum, jsonText(val)), ""
	}
	return where + ": " + ve.Message, ""
}

// splitPointer splits a JSON pointer into its unescaped tokens.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks
}

// argName names the argument at ptr as a model writes it: scope,
// subtasks[0].id.
func argName(ptr []string) string {
	if len(ptr) == 0 {
		return "the arguments"
	}
	var b strings.Builder
	for i, t := range ptr {
		if _, err := strconv.Atoi(t); err == nil && i > 0 {
			b.WriteString("[" + t + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
}

// article says a JSON type with its article: "a string", "an integer".
func article(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "":
		return "a JSON value"
	}
	return "a " + t
}

// jsonText shows a value as JSON, cut short when long.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(b)); len(r) > 60 {
		return string(r[:57]) + "..."
	}
	return string(b)
}
