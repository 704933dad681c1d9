package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/workspaced/workspaced/workspace"
)

// The batch's body and answer carry every put's value, up to a hundred
// of them: encoding/json's scanner reads each value twice to decode it
// (once to find its end, once to copy it) and once more to encode the
// answer, which made the JSON most of the server's CPU a batch. Here
// the body is decoded, and the answer encoded, by the JSON v2 prototype
// of the Go project (github.com/go-json-experiment/json), in one pass a
// value. Neither changes what the route takes or answers:
//   - the body is decoded so only when it is a batch as the API document
//     writes it (each name as spelled, none repeated, none unknown) with
//     a JSON object for every value; any other body goes through
//     decodeStrict, whose errors say what is wrong and whose batch is the
//     same for every body the first takes (FuzzDecodeBatch);
//   - the answer is written by hand when its items need nothing
//     escaped (answerBytes), else encoded with encoding/json's options
//     (DefaultOptionsV1): json.Marshal's bytes either way
//     (TestBatchAnswerBytes, FuzzBatchAnswer).

// decodeBatch decodes the batch's body into in (see above); maxDepth
// bounds the body's nesting as decodeStrict's does.
func decodeBatch(data []byte, maxDepth int, in *memoryBatch) error {
	if decodeBatchAtOnce(data, maxDepth, in) {
		return nil
	}
	*in = memoryBatch{}
	return decodeStrict("the batch", data, maxDepth, in)
}

// decodeBatchAtOnce is decodeBatch's one pass: false for a body it
// leaves to decodeStrict.
func decodeBatchAtOnce(data []byte, maxDepth int, in *memoryBatch) bool {
	// The decoder checks what CheckText does: text in UTF-8 with no lone
	// surrogate escape.
	return workspace.CheckDepth(data, maxDepth) == nil && jsonv2.Unmarshal(data, in, jsonv2.RejectUnknownMembers(true)) == nil && objects(in.Puts)
}

// decodeItem decodes a single put's body (PUT /memory/items) into in as
// decodeBatch decodes a batch's: in one pass when it is a put as the API
// document writes it with an object for its value, else by decodeStrict
// (FuzzDecodeItem holds the two to the same put).
func decodeItem(data []byte, maxDepth int, in *itemWrite) error {
	if decodeItemAtOnce(data, maxDepth, in) {
		return nil
	}
	*in = itemWrite{}
	return decodeStrict("the item", data, maxDepth, in)
}

// decodeItemAtOnce is decodeItem's one pass: false for a body it leaves
// to decodeStrict.
func decodeItemAtOnce(data []byte, maxDepth int, in *itemWrite) bool {
	return workspace.CheckDepth(data, maxDepth) == nil && jsonv2.Unmarshal(data, in, jsonv2.RejectUnknownMembers(true)) == nil &&
		len(in.Value) > 0 && in.Value[0] == '{'
}

// objects says every put's value is a JSON object, as decoded.
func objects(puts []batchPut) bool {
	for _, p := range puts {
		if len(p.Value) == 0 || p.Value[0] != '{' {
			return false
		}
	}
	return true
}

// encodeAnswer is json.Marshal(v)'s bytes, in one pass over the values.
func encodeAnswer(v any) ([]byte, error) {
	return jsonv2.Marshal(v, jsonv1.DefaultOptionsV1())
}

// answerBytes is the batch's answer as json.Marshal writes it. When
// every result is an item whose labels and key json.Marshal writes as
// they are and whose value is compact with nothing it escapes (as a
// store keeps values: compacted), the answer is written by hand, the
// values copied as they are; else by encodeAnswer. TestBatchAnswerBytes
// and FuzzBatchAnswer hold both to json.Marshal's bytes.
func answerBytes(v any) ([]byte, error) {
	if a, ok := v.(batchAnswer); ok {
		if b, ok := appendAnswer(nil, a); ok {
			return b, nil
		}
	}
	return encodeAnswer(v)
}

// appendAnswer appends a's JSON to b, or says it cannot (ok false).
func appendAnswer(b []byte, a batchAnswer) (_ []byte, ok bool) {
	if a.Results == nil {
		return nil, false
	}
	n := 16
	for _, r := range a.Results {
		if r.Status != http.StatusOK || r.Item == nil || r.Problem != nil {
			return nil, false
		}
		n += 24 + itemSize(r.Item)
	}
	b = slices.Grow(b, n)
	b = append(b, `{"results":[`...)
	for i, r := range a.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"status":200,"item":`...)
		if b, ok = appendItem(b, r.Item); !ok {
			return nil, false
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), true
}

// itemBytes is a single item's answer (GET and PUT /memory/items) as
// json.Marshal writes it: by hand when nothing in it needs escaping, as
// answerBytes writes a batch's (TestItemAnswerBytes, FuzzBatchAnswer),
// else by json.Marshal.
func itemBytes(v any) ([]byte, error) {
	if it, ok := v.(workspace.MemoryItem); ok {
		if b, ok := appendItem(make([]byte, 0, itemSize(&it)), &it); ok {
			return b, nil
		}
	}
	return json.Marshal(v)
}

// itemSize is about what appendItem writes of it: its names, its value,
// and under 200 bytes for the field names, the version and three times.
func itemSize(it *workspace.MemoryItem) int {
	n := 200 + len(it.Key) + len(it.Value)
	for _, l := range it.Namespace {
		n += len(l) + 3
	}
	return n
}

// appendItem appends it's JSON to b, or says it cannot (ok false).
func appendItem(b []byte, it *workspace.MemoryItem) (_ []byte, ok bool) {
	b = append(b, `{"namespace":`...)
	if it.Namespace == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for j, l := range it.Namespace {
			if !workspace.PlainJSON(l) {
				return nil, false
			}
			if j > 0 {
				b = append(b, ',')
			}
			b = append(append(append(b, '"'), l...), '"')
		}
		b = append(b, ']')
	}
	if !workspace.PlainJSON(it.Key) || !plainValue(it.Value) {
		return nil, false
	}
	b = append(append(append(b, `,"key":"`...), it.Key...), `","version":`...)
	b = strconv.AppendInt(b, int64(it.Version), 10)
	b = append(b, `,"created_at":`...)
	if b, ok = appendTime(b, it.CreatedAt); !ok {
		return nil, false
	}
	b = append(b, `,"updated_at":`...)
	if b, ok = appendTime(b, it.UpdatedAt); !ok {
		return nil, false
	}
	b = append(b, `,"expires_at":`...)
	if it.ExpiresAt == nil {
		b = append(b, "null"...)
	} else if b, ok = appendTime(b, *it.ExpiresAt); !ok {
		return nil, false
	}
	return append(append(append(b, `,"value":`...), it.Value...), '}'), true
}

// appendTime appends t as time.Time's MarshalJSON writes it, for the
// years it writes (0 to 9999).
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return nil, false
	}
	b = append(b, '"')
	return append(t.AppendFormat(b, time.RFC3339Nano), '"'), true
}

// plainValue says json.Marshal writes the raw JSON v as it is: an
// object, compact (no white space outside its strings), with none of
// the characters it escapes for HTML and JavaScript (<, >, &, U+2028,
// U+2029, whose UTF-8 starts with 0xE2) and no control character.
func plainValue(v []byte) bool {
	if len(v) == 0 || v[0] != '{' || bytes.IndexByte(v, '<') >= 0 || bytes.IndexByte(v, '>') >= 0 ||
		bytes.IndexByte(v, '&') >= 0 || bytes.IndexByte(v, 0xE2) >= 0 {
		return false
	}
	// Outside strings (a quote after an even run of backslashes ends
	// one), no byte of white space or control.
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"':
			for {
				j := bytes.IndexByte(v[i+1:], '"')
				if j < 0 {
					return false
				}
				i += 1 + j
				k := i - 1
				for v[k] == '\\' {
					k--
				}
				if (i-1-k)%2 == 0 {
					break
				}
			}
		case c <= ' ':
			return false
		}
	}
	return true
}
