package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// FuzzDecodeItem: a single put's body taken in one pass is the put
// decodeStrict makes of it.
func FuzzDecodeItem(f *testing.F) {
	for _, s := range []string{
		`{"value": {"x": [1, 2.5, "é"]}}`, `{"value": {}, "ttl_seconds": 60}`, `{"value": {"a":1,"a":2}}`,
		`{"Value": {}}`, `{"VALUE": {}, "value": {"b": 1}}`, `{"value": {}, "ttl_seconds": 1e2}`, `{"value": {}, "ttl_seconds": 1.0}`,
		`{"value": null}`, `{"value": [1]}`, `{"value": "s"}`, `{"value": {}, "value": {"b": 2}}`, `{"ttl_seconds": null, "value": {}}`,
		`{"value": {}} {}`, "{\"value\": {\"k\": \"\xff\"}}", `{"value": {"s": "\ud800"}}`, `{"value": {}, "if_version": 1}`,
		`{"value": {}, "ttl_seconds": 99999999999999999999}`, `{"value": {"a": {"b": {"c": {"d": {}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, strict itemWrite
		if !decodeItemAtOnce(data, 4, &fast) {
			return
		}
		if err := decodeStrict("the item", data, 4, &strict); err != nil {
			t.Fatalf("%q: taken at once, refused by decodeStrict: %v", data, err)
		}
		if !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%q: at once %+v, decodeStrict %+v", data, fast, strict)
		}
	})
}

// TestItemAnswerBytes: a single item's answer is json.Marshal's bytes,
// written by hand or not, and anything else is json.Marshal's.
func TestItemAnswerBytes(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 15, 0, 123456789, time.UTC)
	exp := at.Add(time.Hour)
	for _, v := range []any{
		workspace.MemoryItem{Namespace: workspace.Namespace{"users", "42"}, Key: "prefs", Version: 3, CreatedAt: at, UpdatedAt: at, Value: json.RawMessage(`{"theme":"dark"}`)},
		workspace.MemoryItem{Key: "k2", Version: 1, CreatedAt: at, UpdatedAt: at, ExpiresAt: &exp, Value: json.RawMessage(`{}`)},
		workspace.MemoryItem{Namespace: workspace.Namespace{"<b>&</b>", "é\u2028"}, Key: "k\"\\\t\x01", Version: 1, CreatedAt: at, UpdatedAt: at, Value: json.RawMessage(`{"html":"<i>"}`)},
		workspace.MemoryItem{Namespace: workspace.Namespace{"a"}, Key: "k", Version: 2, CreatedAt: at, UpdatedAt: at, Value: json.RawMessage(`{ "spaced" : 1 }`)},
		map[string]any{"items": []int{1}},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := itemBytes(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("itemBytes\n got %s\nwant %s", got, want)
		}
	}
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
		{},
		{Results: []batchResult{{Status: http.StatusOK, Item: &workspace.MemoryItem{Namespace: workspace.Namespace{"bench", "w1"}, Key: "k1", Version: 12, CreatedAt: at, UpdatedAt: at.Add(time.Second), ExpiresAt: &exp,
			Value: json.RawMessage(`{"text":"a b\\\"c","n":[1,{"x":null}]}`)}}, {Status: http.StatusOK, Item: &workspace.MemoryItem{Key: "k2", Version: 1, CreatedAt: at, UpdatedAt: at, Value: json.RawMessage(`{}`)}}}},
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
		for name, encode := range map[string]func(any) ([]byte, error){"encodeAnswer": encodeAnswer, "answerBytes": answerBytes} {
			got, err := encode(a)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s\n got %s\nwant %s", name, got, want)
			}
		}
	}
}

// FuzzBatchAnswer: an answer of one item, written by hand or not, is
// json.Marshal's bytes.
func FuzzBatchAnswer(f *testing.F) {
	f.Add("users/42", "prefs", `{"theme":"dark mode","n":[1,2]}`, 3, int64(1764468900123456789), int64(0))
	f.Add("a", "k", `{ "a" : 1 }`, 1, int64(0), int64(60))
	f.Add("<b>", "k\u2028", `{"s":"<\u2028>"}`, 1, int64(-62167219200000000), int64(-1))
	f.Add("é", "k", `{"s":"\\\"","t":"\t"}`, 1, int64(253402300800000000), int64(1))
	f.Fuzz(func(t *testing.T, ns, key, value string, version int, at, ttl int64) {
		// A store takes names in UTF-8 only (workspace.ValidateNamespace,
		// ValidateKey); of other text encodeAnswer writes U+FFFD as it is
		// where json.Marshal escapes it.
		if !json.Valid([]byte(value)) || !utf8.ValidString(ns) || !utf8.ValidString(key) {
			return
		}
		created := time.Unix(0, at).UTC()
		it := workspace.MemoryItem{Namespace: workspace.Namespace(strings.Split(ns, "/")), Key: key, Version: version, CreatedAt: created, UpdatedAt: created.Add(time.Duration(ttl)), Value: json.RawMessage(value)}
		if ttl > 0 {
			exp := created.Add(time.Duration(ttl) * time.Second)
			it.ExpiresAt = &exp
		}
		a := batchAnswer{Results: []batchResult{{Status: http.StatusOK, Item: &it}}}
		want, err := json.Marshal(a)
		got, gerr := answerBytes(a)
		if (err == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("answer\n got %s (%v)\nwant %s (%v)", got, gerr, want, err)
		}
	})
}

// BenchmarkBatchAnswer: a batch's answer of 16 items of 1 KiB, written
// by hand (answerBytes) and by the encoder (encodeAnswer).
func BenchmarkBatchAnswer(b *testing.B) {
	at := time.Now().UTC()
	value := json.RawMessage(`{"text":"` + strings.Repeat("x", 1000) + `"}`)
	a := batchAnswer{Results: make([]batchResult, 16)}
	for i := range a.Results {
		a.Results[i] = batchResult{Status: http.StatusOK, Item: &workspace.MemoryItem{Namespace: workspace.Namespace{"bench", "w1"}, Key: "k" + strconv.Itoa(i), Version: 7, CreatedAt: at, UpdatedAt: at, Value: value}}
	}
	for name, encode := range map[string]func(any) ([]byte, error){"hand": answerBytes, "encoder": encodeAnswer} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
