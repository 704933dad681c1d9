package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"
)

// FuzzDecodeBatch: a body the one pass takes is taken by decodeStrict
// too, as the same batch; a body it leaves is decodeStrict's to take or
// refuse.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{
		`{"puts": [{"namespace": ["a"], "key": "k", "value": {"x": [1, 2.5, "é"]}}]}`,
		`{"puts": [{"namespace": ["a","b"], "key": "k", "value": {}, "ttl_seconds": 60, "if_version": 2}, {"namespace": ["a"], "key": "k2", "value": {"a":1,"a":2}, "if_absent": true}]}`,
		`{"PUTS": [{"Namespace": ["a"], "KEY": "k", "value": {}}]}`,
		`{"puts": [{"namespace": ["a"], "key": "k", "value": {}, "ttl_seconds": 1e2}]}`,
		`{"puts": [{"namespace": ["a"], "key": "k", "value": {}, "if_version": 1.0}]}`,
		`{"puts": [{"namespace": ["a"], "key": "k", "value": null}]}`,
		`{"puts": [{"namespace": null, "key": null, "value": {}, "if_version": null, "if_absent": null, "ttl_seconds": null}]}`,
		`{"puts": null}`, `{"puts": [], "puts": [{}]}`, `{"puts": [{"namespace": ["\ud800"], "key": "k", "value": {}}]}`,
		`{"puts": [{"namespace": ["a"], "key": "k", "value": {}}]} {}`, "{\"puts\": [{\"key\": \"\xff\", \"value\": {}}]}",
		`{"puts": [{"namespace": ["a"], "key": "k", "value": {}, "if_version": 99999999999999999999}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, strict memoryBatch
		if !decodeBatchAtOnce(data, 8, &fast) {
			return
		}
		if err := decodeStrict("the batch", data, 8, &strict); err != nil {
			t.Fatalf("%q: taken at once, refused by decodeStrict: %v", data, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%q: at once %+v, decodeStrict %+v", data, fast, strict)
		}
	})
}

// TestBatchAnswerBytes: the batch's answer is json.Marshal's bytes, with
// the characters it escapes in values, labels and keys, an expiry or
// none, and a refusal's problem.
func TestBatchAnswerBytes(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 15, 0, 123456789, time.UTC)
	exp := at.Add(time.Hour)
	two := 2
	answers := []batchAnswer{
		{Results: []batchResult{}},
		{Results: []batchResult{
			{Status: http.StatusOK, Item: &workspace.MemoryItem{Namespace: workspace.Namespace{"users", "42"}, Key: "prefs", Version: 3, CreatedAt: at, UpdatedAt: at, Value: json.RawMessage(`{"theme":"dark"}`)}},
			{Status: http.StatusOK, Item: &workspace.MemoryItem{Namespace: workspace.Namespace{"<b>&</b>", "é\u2028"}, Key: "k\"\\\t\x01", Version: 1, CreatedAt: at, UpdatedAt: at.Add(time.Millisecond), ExpiresAt: &exp,
				Value: json.RawMessage(`{"html":"<script>&amp;</script>","js":"\u2028\u2029","esc":"\u00e9\n","n":[1,2.50,-0,1e+9],"o":{}}`)}},
			{Status: http.StatusPreconditionFailed, Problem: &Problem{Type: "about:blank", Title: "Precondition Failed", Status: 412, Detail: "put \"k\": version 1 <> 2", Kind: "conflict", Hint: "read it again", CurrentVersion: &two}},
		}},
	}
	for _, a := range answers {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeAnswer(a)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("answer\n got %s\nwant %s", got, want)
		}
	}
}
