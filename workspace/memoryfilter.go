package workspace

import (
	"bytes"
	"encoding/json"
	"math/big"
	"sort"
	"strings"
)

// MemoryFilter is the filter of a search: conditions on top-level fields
// of an item's value, all of which must hold. The zero filter matches
// every item.
type MemoryFilter struct {
	conds []filterCond
}

type filterCond struct {
	field string
	op    string
	value any // decoded with json.Number
}

// The filter's operators; a plain value is $eq.
var filterOps = map[string]bool{"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true}

// ParseMemoryFilter reads a filter: a JSON object {field: value |
// {"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": value, ...}}. An object whose
// keys start with "$" is a set of operators (each must be known); any
// other value, objects without such keys included, is compared with
// $eq. Empty input or null is no filter. Anything else is ErrInvalid
// naming what is wrong.
func ParseMemoryFilter(data []byte, lim LimitSettings) (MemoryFilter, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return MemoryFilter{}, nil
	}
	bad := func(format string, args ...any) error {
		return FieldErr(ErrInvalid, "filter", FieldFilter,
			`give an object of conditions on the value's fields, e.g. {"score": {"$gte": 3}, "kind": "note"}`, format, args...)
	}
	if len(data) > lim.ValueMaxBytes {
		return MemoryFilter{}, bad("filter is %d bytes, over the %d-byte limit", len(data), lim.ValueMaxBytes)
	}
	if err := CheckDepth(data, lim.MaxDepth); err != nil {
		return MemoryFilter{}, bad("nested deeper than %d levels", lim.MaxDepth)
	}
	var top map[string]json.RawMessage
	if err := DecodeStrict("filter", data, lim.MaxDepth, &top); err != nil || top == nil {
		return MemoryFilter{}, bad("not a JSON object")
	}
	var f MemoryFilter
	for field, raw := range top {
		v, err := decodeFilterValue(raw)
		if err != nil {
			return MemoryFilter{}, bad("field %q: %v", field, err)
		}
		ops, isOps := v.(map[string]any)
		if isOps && !hasOperator(ops) {
			isOps = false
		}
		if !isOps {
			f.conds = append(f.conds, filterCond{field: field, op: "$eq", value: v})
			continue
		}
		for op, arg := range ops {
			if !filterOps[op] {
				return MemoryFilter{}, FieldErr(ErrInvalid, "filter", FieldFilter, "use $eq, $ne, $gt, $gte, $lt or $lte",
					"field %q: unknown operator %q", field, op)
			}
			f.conds = append(f.conds, filterCond{field: field, op: op, value: arg})
		}
	}
	sort.Slice(f.conds, func(i, j int) bool {
		a, b := f.conds[i], f.conds[j]
		return a.field < b.field || a.field == b.field && a.op < b.op
	})
	return f, nil
}

func hasOperator(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

func decodeFilterValue(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// Empty says whether the filter matches every item.
func (f MemoryFilter) Empty() bool { return len(f.conds) == 0 }

// Match says whether an item's value (a JSON object) meets every
// condition. A field the value lacks, or holds a value of another type,
// meets only $ne. Numbers compare numerically, strings by bytes; arrays
// and objects only for equality; $gt, $gte, $lt and $lte hold only
// between two numbers or two strings.
func (f MemoryFilter) Match(value json.RawMessage) bool {
	if f.Empty() {
		return true
	}
	v, err := decodeFilterValue(value)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return false
	}
	for _, c := range f.conds {
		have, present := obj[c.field]
		if !holds(c.op, have, present, c.value) {
			return false
		}
	}
	return true
}

func holds(op string, have any, present bool, want any) bool {
	if op == "$ne" {
		return !present || !equal(have, want)
	}
	if !present {
		return false
	}
	if op == "$eq" {
		return equal(have, want)
	}
	c, ok := order(have, want)
	if !ok {
		return false
	}
	switch op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	}
	return c <= 0 // $lte
}

// order compares two numbers or two strings; any other pair has none.
func order(a, b any) (int, bool) {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return 0, false
		}
		return compareNumbers(x, y)
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}

func compareNumbers(a, b json.Number) (int, bool) {
	x, _, errA := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, errB := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	if errA != nil || errB != nil {
		return 0, false
	}
	return x.Cmp(y), true
}

// equal is JSON equality: same type, numbers numerically, arrays element
// by element, objects key by key.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case json.Number, string:
		c, ok := order(a, b)
		return ok && c == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}
