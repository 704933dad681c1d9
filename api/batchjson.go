package api

import (
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
//   - the answer is encoded with encoding/json's options
//     (DefaultOptionsV1): the same bytes (TestBatchAnswerBytes).

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
