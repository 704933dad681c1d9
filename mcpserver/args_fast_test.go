package mcpserver

import (
	"reflect"
	"strings"
	"testing"
)

// sameDecoding is one tool's check that decodeArgs, which decodes the
// arguments as sent, gives what decoding the checked document gives.
func sameDecoding[In any](tool string) func(t *testing.T, raw []byte) {
	c := newArgChecker(tool, inputSchema[In]())
	return func(t *testing.T, raw []byte) {
		doc, err := c.check(raw)
		if err != nil {
			return
		}
		got, gerr := decodeArgs[In](c, parseArgs(raw), raw)
		want, werr := fromDoc[In](c, doc)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%s %q: error %v, from the checked document %v", tool, raw, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %q: decoded %#v, from the checked document %#v", tool, raw, got, want)
		}
	}
}

// FuzzArgumentsDecodedAsSent: arguments the schema admits decode the same
// from the bytes as sent as from the checked document, integers written
// 2.0 or 2e0 included.
func FuzzArgumentsDecodedAsSent(f *testing.F) {
	checks := []func(*testing.T, []byte){
		sameDecoding[putItemInput](ToolPutMemoryItem),
		sameDecoding[itemKeyInput](ToolGetMemoryItem),
		sameDecoding[deleteItemInput](ToolDeleteMemoryItem),
		sameDecoding[writePlanInput](ToolWritePlan),
		sameDecoding[amendPlanInput](ToolAmendPlan),
		sameDecoding[doneInput](ToolSignalDone),
		sameDecoding[storeMemoryInput](ToolStoreMemory),
		sameDecoding[searchInput](ToolSearchMemory),
	}
	for _, seed := range []string{
		``, `null`, ` null `, `{}`, `{"namespace":["a"],"key":"k","value":{"x":[1,2.0,3e0,-0,1e400]}}`,
		`{"namespace":["a"],"key":"k","value":1,"ttl_seconds":2.0,"if_version":1e0}`,
		`{"namespace":["a"],"key":"k","value":9007199254740993,"if_absent":true}`,
		`{"namespace":["a"],"key":"k","key":"l","value":null}`, `{"namespace":["a"],"key":"k","if_version":20e-1}`,
		`{"subtasks":[{"id":"st_1","description":"d","max_retries":2.0}],"worker_count":3}`,
		`{"subtask_id":"st_1","output":{"a":[1,2,{"b":null}]},"status":"failed","error":"e"}`,
		"{\"namespace\":[\"a\"],\"key\":\"\\u00e9\\ud800\",\"value\":\"<&>\"}",
		`{"namespace_prefix":["a"],"filter":{"x":{"$gt":2.0}},"limit":10.0}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, check := range checks {
			check(t, raw)
		}
	})
}

// TestArgumentsDecodedAsSent: an integer written 2.0 still decodes as 2
// (the value is read as sent, by valueArg).
func TestArgumentsDecodedAsSent(t *testing.T) {
	c := newArgChecker(ToolPutMemoryItem, inputSchema[putItemInput]())
	raw := []byte(`{"namespace":["a"],"key":"k","value":{"n":2.5},"ttl_seconds":2.0,"if_version":3e0}`)
	in, err := decodeArgs[putItemInput](c, parseArgs(raw), raw)
	if err != nil {
		t.Fatal(err)
	}
	if in.TTLSeconds != 2 || in.IfVersion != 3 || strings.Join(in.Namespace, "/") != "a" || in.Key != "k" {
		t.Fatalf("decoded %#v", in)
	}
}

// BenchmarkPutArguments: a put's arguments (a value of 1,000 characters)
// checked and decoded as sent, and decoded again from the checked
// document.
func BenchmarkPutArguments(b *testing.B) {
	c := newArgChecker(ToolPutMemoryItem, inputSchema[putItemInput]())
	raw := []byte(`{"namespace":["bench"],"key":"p","value":{"text":"` + strings.Repeat("x", 1000) + `"}}`)
	b.Run("as-sent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeArgs[putItemInput](c, parseArgs(raw), raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from-doc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			doc, err := c.check(raw)
			if err == nil {
				_, err = fromDoc[putItemInput](c, doc)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.check(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
