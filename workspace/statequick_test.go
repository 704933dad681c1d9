package workspace

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// quickStates are states as the daemon writes them, each field of the
// model filled somewhere, strings that need escapes among them.
func quickStates(t testing.TB) map[string]State {
	t.Helper()
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	full := State{
		TaskID: "t1", PlanID: "plan_t1", PlanVersion: 3, PlanStatus: "approved", Status: "executing",
		Phase: "work_in_progress", StartedAt: at("2024-01-01T00:00:00.123456789Z"),
		LastUpdated: *at("2024-01-01T02:00:00+02:00"), CompletedAt: at("2024-01-02T00:00:00Z"),
		Subtasks: map[string]*SubtaskState{
			"st_1": {Status: "completed", Worker: "w1", Attempts: 2, StartedAt: at("2024-01-01T00:00:01Z"),
				CompletedAt: at("2024-01-01T00:00:02.5-07:00"), Output: "outputs/st_1.json"},
			"st_2": {Status: "blocked", BlockedBy: []string{"st_1", "st_3"}},
			"st_3": {Status: "failed", Worker: "wörker <&>", Attempts: 3, Error: "line one\nline \"two\"\t\x01 \u2028 é 😀"},
			"st_4": {Status: "in_progress", Worker: "w1", BlockedBy: []string{}},
			"st_5": {Status: "pending"},
		},
		Checkpoints: map[string]*CheckpointState{"cp_1": {Status: "approved", ReachedAt: at("2024-01-01T01:00:00Z"), Review: "ok"}},
		Workers:     map[string]*WorkerState{"w1": {Status: "busy", CurrentTask: "st_4"}, "w2": {Status: "available"}},
		Amendment: &AmendmentState{Version: 4, ProposedBy: "coordinator", ProposedAt: *at("2024-01-01T01:30:00Z"),
			Added: []string{"st_6"}, Changed: []string{}, Withdrawn: []string{"st_2"}},
		RevisionCount: 1,
		Errors: []StateError{{At: *at("2024-01-01T00:30:00Z"), Seq: 7, Agent: "w2", SubtaskID: "st_4", Message: "claimed", Kind: ErrorClaimRefused},
			{At: *at("2024-01-01T00:31:00Z"), Message: "boom"}},
		JournalSeq: 42,
	}
	big := State{TaskID: "t1", Status: "executing", Subtasks: map[string]*SubtaskState{}, Checkpoints: map[string]*CheckpointState{},
		Workers: map[string]*WorkerState{}, Errors: []StateError{}, LastUpdated: *at("2024-01-01T00:15:00Z"), JournalSeq: 10003}
	for i := 1; i <= 10000; i++ {
		s := &SubtaskState{Status: "pending"}
		if i <= 5000 {
			s = &SubtaskState{Status: "completed", Worker: fmt.Sprintf("worker_%d", i%3+1), Attempts: 1,
				StartedAt: at("2024-01-01T00:00:00.269946009Z"), CompletedAt: at("2024-01-01T00:00:00.359928012Z"),
				Output: fmt.Sprintf("outputs/st_%d.json", i)}
		}
		big.Subtasks[fmt.Sprintf("st_%d", i)] = s
	}
	return map[string]State{
		"new":           {TaskID: "t1", Status: "planning", LastUpdated: *at("2024-01-01T00:00:00Z")},
		"every field":   full,
		"10000 subtask": big,
	}
}

// quickDocs are the states' documents as the daemon writes them, as
// encoding/json writes them compact, and with their keys in another
// order (PostgreSQL's jsonb, an agent's JSON library).
func quickDocs(t testing.TB) map[string][]byte {
	t.Helper()
	quickDocsOnce.Do(func() { quickDocsMade = makeQuickDocs(t) })
	if quickDocsMade == nil {
		t.Fatal("the documents of quickStates could not be made")
	}
	return quickDocsMade
}

// quickDocs's documents are made once for the package's tests: at
// 10,000 subtasks each is a few hundred milliseconds under -race.
var (
	quickDocsOnce sync.Once
	quickDocsMade map[string][]byte
)

func makeQuickDocs(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, st := range quickStates(t) {
		canon, err := marshalCanonical(st)
		if err != nil {
			t.Fatal(err)
		}
		compact, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var generic map[string]any
		if err := json.Unmarshal(compact, &generic); err != nil {
			t.Fatal(err)
		}
		sorted, err := json.MarshalIndent(generic, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		out[name+", canonical"], out[name+", compact"], out[name+", keys sorted"] = canon, compact, sorted
	}
	return out
}

// agreeOnState fails unless QuickState, when it takes data, decodes it
// as json.Unmarshal does and, under a depth bound, as DecodeStrict does.
func agreeOnState(t *testing.T, data []byte, maxDepth int) bool {
	t.Helper()
	quick, ok := QuickState(data, maxDepth)
	if !ok {
		return false
	}
	if maxDepth > 0 {
		var strict State
		if err := DecodeStrict("state.json", data, maxDepth, &strict); err != nil {
			t.Fatalf("QuickState took a document DecodeStrict refuses (%v): %.200q", err, data)
		}
		if !reflect.DeepEqual(quick, strict) {
			t.Fatalf("QuickState and DecodeStrict differ:\n%+v\n%+v", quick, strict)
		}
	}
	var plain State
	if err := json.Unmarshal(data, &plain); err != nil || !reflect.DeepEqual(quick, plain) {
		t.Fatalf("QuickState and json.Unmarshal differ (%v)", err)
	}
	return true
}

func TestQuickStateDecodesWhatTheDaemonWrites(t *testing.T) {
	for name, data := range quickDocs(t) {
		t.Run(name, func(t *testing.T) {
			if !agreeOnState(t, data, DefaultMaxDepth) {
				t.Fatalf("QuickState left a daemon's document to encoding/json")
			}
			// With no bound the walk is the same but for the depth's
			// count: the large documents are decoded with the bound only
			// (each decoding of 10,000 subtasks is a second under -race).
			if len(data) <= 1<<14 && !agreeOnState(t, data, 0) {
				t.Fatalf("QuickState with no depth bound left a daemon's document to encoding/json")
			}
		})
	}
}

func TestQuickStateLeavesTheRestToEncodingJSON(t *testing.T) {
	const head = `"task_id":"t1","status":"executing","journal_seq":1`
	doc := func(subtask string) string { return `{` + head + `,"subtasks":{"st_1":` + subtask + `}}` }
	for _, c := range []struct {
		name, doc string
		maxDepth  int
		takes     bool
	}{
		{"plain", doc(`{"status":"pending","attempts":-0}`), 64, true},
		{"the depth bound just met", doc(`{"status":"pending","blocked_by":["st_2"]}`), 4, true},
		{"an output beyond ASCII", doc(`{"status":"pending","output":"caf\u00e9 ` + "é \xff\x7f" + `"}`), 64, true},
		{"a subtask id beyond ASCII", `{` + head + `,"subtasks":{"é":{}}}`, 64, false},
		{"empty", ``, 64, false},
		{"null", `null`, 64, false},
		{"an array", `[]`, 64, false},
		{"a byte-order mark", "\ufeff{" + head + `}`, 64, false},
		{"cut short", doc(`{"status":"pending"`)[:40], 64, false},
		{"cut inside a subtask", `{` + head + `,"subtasks":{"st_1":{"status":"pend`, 64, false},
		{"trailing data", doc(`{}`) + ` {}`, 64, false},
		{"a trailing brace", doc(`{}`) + `}`, 64, false},
		{"a trailing comma", doc(`{"status":"pending",}`), 64, false},
		{"an unknown key", `{` + head + `,"owner":"x"}`, 64, false},
		{"a key in capitals", `{` + head + `,"Phase":"x"}`, 64, false},
		{"a key escaped", `{` + head + `,"ph\u0061se":"x"}`, 64, false},
		{"a key twice", `{` + head + `,"status":"completed"}`, 64, false},
		{"a subtask twice", `{` + head + `,"subtasks":{"st_1":{},"st_1":{"status":"failed"}}}`, 64, false},
		{"a subtask id escaped", `{` + head + `,"subtasks":{"st\u005f1":{}}}`, 64, false},
		{"a subtask field twice", doc(`{"status":"pending","status":"failed"}`), 64, false},
		{"an unknown subtask field", doc(`{"status":"pending","owner":"x"}`), 64, false},
		{"a subtask field in capitals", doc(`{"Status":"pending"}`), 64, false},
		{"a subtask null", doc(`null`), 64, false},
		{"a subtask a string", doc(`"pending"`), 64, false},
		{"subtasks an array", `{` + head + `,"subtasks":[]}`, 64, false},
		{"a status null", doc(`{"status":null}`), 64, false},
		{"a status a number", doc(`{"status":1}`), 64, false},
		{"a control byte in a string", doc("{\"status\":\"pen\x01ding\"}"), 64, false},
		{"a bad escape", doc(`{"status":"pen\qding"}`), 64, false},
		{"attempts a fraction", doc(`{"attempts":1.0}`), 64, false},
		{"attempts an exponent", doc(`{"attempts":1e2}`), 64, false},
		{"attempts a string", doc(`{"attempts":"1"}`), 64, false},
		{"attempts with a leading zero", doc(`{"attempts":01}`), 64, false},
		{"attempts beyond int64", doc(`{"attempts":9223372036854775808}`), 64, false},
		{"attempts a word", doc(`{"attempts":true}`), 64, false},
		{"attempts a minus alone", doc(`{"attempts":-}`), 64, false},
		{"a time not RFC 3339", doc(`{"started_at":"2024-01-01 00:00:00"}`), 64, false},
		{"a time null", doc(`{"started_at":null}`), 64, false},
		{"a time escaped", doc(`{"started_at":"2024-01-01T00:00:00\u005a"}`), 64, false},
		{"blocked_by a string", doc(`{"blocked_by":"st_2"}`), 64, false},
		{"blocked_by holding a number", doc(`{"blocked_by":[2]}`), 64, false},
		{"deeper than the bound", doc(`{"blocked_by":["st_2"]}`), 3, false},
		{"an error deeper than the bound", `{` + head + `,"errors":[{"message":"x"}]}`, 2, false},
		{"a head field of the wrong type", `{"task_id":1,"status":"executing","journal_seq":1}`, 64, false},
		{"journal_seq a fraction", `{"task_id":"t1","status":"executing","journal_seq":1.5}`, 64, false},
		{"a misspelt word in a skipped value", `{` + head + `,"amendment":nul}`, 64, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := agreeOnState(t, []byte(c.doc), c.maxDepth); got != c.takes {
				t.Fatalf("QuickState took it: %v, want %v", got, c.takes)
			}
		})
	}
}

// FuzzQuickState: whatever QuickState takes, encoding/json decodes to the
// same State, with and without a depth bound.
func FuzzQuickState(f *testing.F) {
	for _, data := range quickDocs(f) {
		if len(data) < 1<<14 {
			f.Add(data, uint8(64))
		}
	}
	f.Add([]byte(`{"subtasks":{"a":{"blocked_by":[]}}}`), uint8(3))
	f.Add([]byte(`{"subtasks":{"a":{"attempts":-0,"error":"\u00e9"}}}`), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, maxDepth uint8) {
		agreeOnState(t, data, int(maxDepth))
		if strings.Contains(string(data), "\x00") {
			return
		}
		agreeOnState(t, data, 0)
	})
}

// TestQuickStateAgreesOnMutations: whatever QuickState takes of the
// daemon's documents mutated (eachMutation), encoding/json decodes the
// same.
func TestQuickStateAgreesOnMutations(t *testing.T) {
	taken := 0
	eachMutation(t, 300, func(m []byte) {
		if agreeOnState(t, m, DefaultMaxDepth) {
			taken++
		}
		agreeOnState(t, m, 0)
	})
	if taken == 0 {
		t.Fatal("QuickState took no mutated document: the test checks nothing")
	}
}

// eachMutation calls f with n mutations of each small document of
// quickDocs: a byte changed, dropped, or a span repeated, seeded so that
// a failure repeats.
func eachMutation(t *testing.T, n int, f func([]byte)) {
	rng := rand.New(rand.NewPCG(1, 2))
	const bytes = "\"{}[],:-.0123456789eEtrufalsn\\ \t\x00\xff"
	for _, data := range quickDocs(t) {
		if len(data) > 1<<14 {
			continue
		}
		for range n {
			m := append([]byte(nil), data...)
			i := rng.IntN(len(m))
			switch rng.IntN(3) {
			case 0:
				m[i] = bytes[rng.IntN(len(bytes))]
			case 1:
				m = append(m[:i], m[i+1:]...)
			default:
				j := i + rng.IntN(min(40, len(m)-i))
				m = append(m[:j], append(append([]byte(nil), m[i:j]...), m[j:]...)...)
			}
			f(m)
		}
	}
}

// BenchmarkQuickState10000 decodes the daemon's document of a state of
// 10,000 subtasks with QuickState, and BenchmarkDecodeStrictState10000
// with encoding/json (what a state read cost before).
func BenchmarkQuickState10000(b *testing.B) {
	data := quickDocs(b)["10000 subtask, canonical"]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if st, ok := QuickState(data, DefaultMaxDepth); !ok || len(st.Subtasks) != 10000 {
			b.Fatal("QuickState left the daemon's document to encoding/json")
		}
	}
}

// BenchmarkDecodeStrictState10000: see BenchmarkQuickState10000.
func BenchmarkDecodeStrictState10000(b *testing.B) {
	data := quickDocs(b)["10000 subtask, canonical"]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var st State
		if err := DecodeStrict("state.json", data, DefaultMaxDepth, &st); err != nil || len(st.Subtasks) != 10000 {
			b.Fatal(err)
		}
	}
}
