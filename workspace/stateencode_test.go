package workspace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// encodeStateJSON is what AppendStateIndent must write: st by a
// json.Encoder as the tree writes its files, at prefix.
func encodeStateJSON(st *State, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	err := enc.Encode(st)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), err
}

// agreeOnEncoding fails unless AppendStateIndent writes st as
// encoding/json does, or fails where it fails.
func agreeOnEncoding(t *testing.T, st *State) {
	t.Helper()
	for _, prefix := range []string{"", "  ", "\t> "} {
		want, wantErr := encodeStateJSON(st, prefix)
		got, err := AppendStateIndent([]byte("head "), st, prefix)
		switch {
		case (err != nil) != (wantErr != nil):
			t.Fatalf("prefix %q: AppendStateIndent's error %v, encoding/json's %v", prefix, err, wantErr)
		case err == nil && !bytes.Equal(got, append([]byte("head "), want...)):
			t.Fatalf("prefix %q: AppendStateIndent wrote\n%.2000s\nencoding/json\n%.2000s", prefix, got, want)
		}
	}
}

func TestAppendStateIndentWritesWhatEncodingJSONWrites(t *testing.T) {
	states := quickStates(t)
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	odd := State{TaskID: "t\"1\\", Status: "<&>", Subtasks: map[string]*SubtaskState{
		"b": nil, "a": {}, "a\u2028": {Status: "x\x7f\xff", BlockedBy: []string{"", "\n"}, Error: "\u2029"},
	}, Checkpoints: map[string]*CheckpointState{}, Errors: []StateError{}}
	states["odd strings, a nil subtask"] = odd
	states["a time beyond 9999"] = State{TaskID: "t1", LastUpdated: far}
	states["a subtask's time beyond 9999"] = State{TaskID: "t1", Subtasks: map[string]*SubtaskState{"a": {StartedAt: &far}}}
	states["zero"] = State{}
	for name, st := range states {
		t.Run(name, func(t *testing.T) { agreeOnEncoding(t, &st) })
	}
}

// TestAppendStateIndentOnMutations: every state encoding/json decodes of
// the daemon's documents mutated is written as encoding/json writes it.
func TestAppendStateIndentOnMutations(t *testing.T) {
	decoded := 0
	eachMutation(t, 300, func(m []byte) {
		var st State
		if json.Unmarshal(m, &st) == nil {
			decoded++
			agreeOnEncoding(t, &st)
		}
	})
	if decoded == 0 {
		t.Fatal("no mutated document decoded: the test checks nothing")
	}
}

// FuzzAppendStateIndent: any state encoding/json decodes is written by
// AppendStateIndent as encoding/json writes it.
func FuzzAppendStateIndent(f *testing.F) {
	for _, data := range quickDocs(f) {
		if len(data) < 1<<14 {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"subtasks":{"a":null,"b":{"blocked_by":[],"status":"\u00e9\ud800"}},"errors":[{"at":"0001-01-01T00:00:00-23:59"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st State
		if json.Unmarshal(data, &st) != nil || strings.Count(string(data), "{") > 200 {
			return
		}
		agreeOnEncoding(t, &st)
	})
}

// BenchmarkAppendStateIndent10000 writes a state of 10,000 subtasks with
// AppendStateIndent, and BenchmarkEncodeStateJSON10000 with encoding/json.
func BenchmarkAppendStateIndent10000(b *testing.B) {
	st := quickStates(b)["10000 subtask"]
	for b.Loop() {
		if _, err := AppendStateIndent(nil, &st, "  "); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeStateJSON10000: see BenchmarkAppendStateIndent10000.
func BenchmarkEncodeStateJSON10000(b *testing.B) {
	st := quickStates(b)["10000 subtask"]
	for b.Loop() {
		if _, err := encodeStateJSON(&st, "  "); err != nil {
			b.Fatal(err)
		}
	}
}
