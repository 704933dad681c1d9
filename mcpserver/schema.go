package mcpserver

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/vocab"
)

// Input schemas. Each tool's arguments are a Go struct; its JSON Schema is
// derived from the struct here rather than by the go-sdk, so that a field
// can carry what the go-sdk's inference has no tag for: the allowed values
// of an enum and a minimum. Tags read:
//
//	json:"name,omitempty"   the property; without omitempty it is required
//	jsonschema:"..."        its description, where name and type leave
//	                        something to say
//	enum:"a,b,c"            the values it may take
//	minimum:"1"             the least number it may be (every integer
//	                        is also at most 2^31-1)
//	pattern:"id"            an id (of a task, subtask, review...): the
//	                        id grammar, on the string or on each item
//
// Every object is closed (additionalProperties false), so a misspelt
// argument is refused rather than ignored. A field of type any,
// json.RawMessage or sentValue takes any JSON value; map[string]any or
// sentObject any object.

// schema is the part of JSON Schema the tools use.
type schema struct {
	Type                 string             `json:"type,omitempty"`
	Description          string             `json:"description,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Minimum              *int               `json:"minimum,omitempty"`
	Maximum              *int               `json:"maximum,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// sentValue is an argument that takes any JSON value, sentObject one that
// takes any object, read by its handler as sent (rawArg), never from the
// decoded input: decoding the input skips them, however large.
type (
	sentValue  struct{}
	sentObject struct{}
)

func (*sentValue) UnmarshalJSON([]byte) error  { return nil }
func (*sentObject) UnmarshalJSON([]byte) error { return nil }

var (
	sentValueType  = reflect.TypeFor[sentValue]()
	sentObjectType = reflect.TypeFor[sentObject]()
)

// inputSchema is the schema of the arguments struct T. It panics on a
// struct it cannot describe: that is a programming error, caught when the
// server is built in any test.
func inputSchema[T any]() *schema {
	s, err := schemaOf(reflect.TypeFor[T]())
	if err != nil {
		panic(fmt.Sprintf("input schema of %v: %v", reflect.TypeFor[T](), err))
	}
	if s.Type != "object" {
		panic(fmt.Sprintf("input schema of %v: type %q, not object", reflect.TypeFor[T](), s.Type))
	}
	return s
}

func schemaOf(t reflect.Type) (*schema, error) {
	switch t {
	case rawMessageType, sentValueType:
		return &schema{}, nil
	case sentObjectType:
		return &schema{Type: "object"}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return &schema{Type: "string"}, nil
	case reflect.Bool:
		return &schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		// Bounded, so that every integer the schema admits decodes.
		limit := math.MaxInt32
		return &schema{Type: "integer", Maximum: &limit}, nil
	case reflect.Float64:
		return &schema{Type: "number"}, nil
	case reflect.Interface:
		return &schema{}, nil
	case reflect.Slice:
		items, err := schemaOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &schema{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Elem().Kind() != reflect.Interface {
			return nil, fmt.Errorf("map %v: only map[string]any is described", t)
		}
		return &schema{Type: "object"}, nil
	case reflect.Struct:
		return structSchema(t)
	}
	return nil, fmt.Errorf("type %v is not described", t)
}

func structSchema(t reflect.Type) (*schema, error) {
	closed := false
	s := &schema{Type: "object", Properties: map[string]*schema{}, AdditionalProperties: &closed}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			return nil, fmt.Errorf("field %s has no json name", f.Name)
		}
		p, err := schemaOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		p.Description = f.Tag.Get("jsonschema")
		if e := f.Tag.Get("enum"); e != "" {
			p.Enum = strings.Split(e, ",")
		}
		if m := f.Tag.Get("minimum"); m != "" {
			n, err := strconv.Atoi(m)
			if err != nil {
				return nil, fmt.Errorf("field %s: minimum %q: %w", f.Name, m, err)
			}
			p.Minimum = &n
		}
		switch pat := f.Tag.Get("pattern"); {
		case pat == "":
		case pat != "id":
			return nil, fmt.Errorf("field %s: unknown pattern %q", f.Name, pat)
		case p.Type == "string":
			p.Pattern = vocab.IDPattern
		case p.Items != nil && p.Items.Type == "string":
			p.Items.Pattern = vocab.IDPattern
		default:
			return nil, fmt.Errorf("field %s: pattern on a %s", f.Name, p.Type)
		}
		s.Properties[name] = p
		if !strings.Contains(","+opts+",", ",omitempty,") {
			s.Required = append(s.Required, name)
		}
	}
	return s, nil
}

// published is the input schema a client is shown: sch without what only
// the server's own check needs — the id grammar, the integer bound and
// the closing of objects, each of which a refused call spells out — so
// that every client pays for fewer bytes of schema. Arguments are still
// checked against sch itself.
func published(sch *schema) *schema {
	if sch == nil {
		return nil
	}
	c := *sch
	c.Pattern, c.Maximum, c.AdditionalProperties = "", nil, nil
	c.Items = published(sch.Items)
	if sch.Properties != nil {
		c.Properties = make(map[string]*schema, len(sch.Properties))
		for k, p := range sch.Properties {
			c.Properties[k] = published(p)
		}
	}
	return &c
}

// Output schemas, kept small: every client pays for them in every
// listing. A document the workspace validates against its own schema
// (a task, a state, a plan, an output, a review) is described as an
// object.
var (
	outObject  = &schema{Type: "object"}
	outValue   = &schema{Type: "object", Required: []string{"value"}}
	outEntries = &schema{Type: "object", Required: []string{"entries"}}
	outVerdict = &schema{Type: "object", Required: []string{"verdict"}}
)
