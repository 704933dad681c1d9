package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/vocab"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

func TestSchemasCompile(t *testing.T) {
	t.Parallel()
	all, err := compileAll()
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	for _, k := range Kinds() {
		if all[k] == nil {
			t.Errorf("%s: no compiled schema", k)
		}
	}
}

// TestSchemaHeaders checks what a developer in another language relies on:
// each schema names its draft, its $id, a title and a description, and
// carries the one id pattern.
func TestSchemaHeaders(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		t.Run(string(k), func(t *testing.T) {
			var doc struct {
				Schema      string `json:"$schema"`
				ID          string `json:"$id"`
				Title       string `json:"title"`
				Description string `json:"description"`
				Defs        map[string]struct {
					Pattern string `json:"pattern"`
				} `json:"$defs"`
			}
			if err := json.Unmarshal(Source(k), &doc); err != nil {
				t.Fatalf("parse schema: %v", err)
			}
			if doc.Schema != "https://json-schema.org/draft/2020-12/schema" {
				t.Errorf("$schema = %q", doc.Schema)
			}
			if want := "https://workspaced.dev/schemas/" + string(k) + ".schema.json"; doc.ID != want || k.URL() != want {
				t.Errorf("$id = %q, URL() = %q, want %q", doc.ID, k.URL(), want)
			}
			if len(doc.Title) < 10 || len(doc.Description) < 40 {
				t.Errorf("title %q / description %q too short to help anyone", doc.Title, doc.Description)
			}
			if id, ok := doc.Defs["id"]; ok && id.Pattern != vocab.IDPattern {
				t.Errorf("$defs/id pattern = %q, want %q", id.Pattern, vocab.IDPattern)
			}
		})
	}
}

func TestFilesHoldsEveryKind(t *testing.T) {
	t.Parallel()
	names, err := fs.Glob(Files(), "*")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range Kinds() {
		want = append(want, k.FileName())
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("Files() = %v, want %v", names, want)
	}
	if Source("nope") != nil {
		t.Error("Source of an unknown kind is not nil")
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		got, err := ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	if _, err := ParseKind("tasks"); !errors.Is(err, ErrUnknownKind) || !strings.Contains(err.Error(), "known: workspace, agents") {
		t.Errorf("ParseKind(tasks) error = %v", err)
	}
	if err := Validate("tasks", []byte(`{}`)); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("Validate(unknown kind) = %v, want ErrUnknownKind", err)
	}
}

func readValid(t *testing.T, k Kind) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "valid", string(k)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidDocuments(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		t.Run(string(k), func(t *testing.T) {
			if err := Validate(k, readValid(t, k)); err != nil {
				t.Errorf("valid %s refused:\n%v", k, err)
			}
		})
	}
}

// TestSeedExamples validates hand-written example documents of each kind
// (testdata/seed004: a REST-auth task, its plan, an output, a review and a
// friction log), kept as first written, so that the schemas accept what a
// person writes by hand and not only what this code writes.
func TestSeedExamples(t *testing.T) {
	t.Parallel()
	for _, k := range []Kind{KindTask, KindPlan, KindOutput, KindReview, KindFriction} {
		t.Run(string(k), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "seed004", string(k)+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(k, b); err != nil {
				t.Errorf("seed example refused:\n%v", err)
			}
		})
	}
}

// edit returns the valid document of kind k with the value at pointer ptr
// replaced by v (added if missing), or removed when v is the remove marker.
func edit(t *testing.T, k Kind, ptr string, v any) []byte {
	t.Helper()
	var doc any
	dec := json.NewDecoder(bytes.NewReader(readValid(t, k)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	segs := strings.Split(ptr, "/")[1:]
	parent := doc
	for _, s := range segs[:len(segs)-1] {
		switch p := parent.(type) {
		case map[string]any:
			parent = p[s]
		case []any:
			i, _ := strconv.Atoi(s)
			parent = p[i]
		}
	}
	last := segs[len(segs)-1]
	switch p := parent.(type) {
	case map[string]any:
		if v == remove {
			delete(p, last)
		} else {
			p[last] = v
		}
	case []any:
		i, _ := strconv.Atoi(last)
		p[i] = v
	default:
		t.Fatalf("edit %s %s: parent is %T", k, ptr, parent)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type removeMarker struct{}

var remove = removeMarker{}

func TestValidateEdits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kind    Kind
		ptr     string // what to change in testdata/valid/<kind>.json
		value   any    // the new value, or remove
		wantPtr string // the first problem's pointer; "-" means valid
		rule    string
	}{
		// workspace
		{"workspace duration number", KindWorkspace, "/lock_timeout", 45, "-", ""},
		{"workspace duration fraction", KindWorkspace, "/lock_timeout", 0.5, "-", ""},
		{"workspace duration compound", KindWorkspace, "/daemon/grace", "1m30.5s", "-", ""},
		{"workspace duration zero", KindWorkspace, "/daemon/grace", "0", "-", ""},
		{"workspace bad duration unit", KindWorkspace, "/lock_timeout", "30x", "/lock_timeout", "pattern"},
		{"workspace negative duration", KindWorkspace, "/lock_timeout", "-5s", "/lock_timeout", "pattern"},
		{"workspace negative seconds", KindWorkspace, "/daemon/rescan", -1, "/daemon/rescan", "minimum"},
		{"workspace duration wrong type", KindWorkspace, "/friction/timeout_low", true, "/friction/timeout_low", "type"},
		{"workspace mode enum", KindWorkspace, "/mode", "public", "/mode", "enum"},
		{"workspace limit wrong type", KindWorkspace, "/limits/max_depth", "64", "/limits/max_depth", "type"},
		{"workspace limit fractional", KindWorkspace, "/backups/keep", 2.5, "/backups/keep", "type"},
		{"workspace extra field", KindWorkspace, "/comment", "hi", "-", ""},
		// agents
		{"agents missing list", KindAgents, "/agents", remove, "", "required"},
		{"agents card missing name", KindAgents, "/agents/1/name", remove, "/agents/1", "required"},
		{"agents bad name", KindAgents, "/agents/0/name", "co ordinator", "/agents/0/name", "pattern"},
		{"agents detail enum", KindAgents, "/agents/0/preamble_detail", "loud", "/agents/0/preamble_detail", "enum"},
		{"agents delegation type", KindAgents, "/agents/0/delegation_context", "yes", "/agents/0/delegation_context", "type"},
		// task
		{"task missing id", KindTask, "/id", remove, "", "required"},
		{"task missing description", KindTask, "/description", remove, "", "required"},
		{"task empty description", KindTask, "/description", "", "/description", "minLength"},
		{"task id with slash", KindTask, "/id", "a/b", "/id", "pattern"},
		{"task id dot-dot", KindTask, "/id", "..", "/id", "pattern"},
		{"task id too long", KindTask, "/id", strings.Repeat("a", 129), "/id", "pattern"},
		{"task id max length", KindTask, "/id", strings.Repeat("a", 128), "-", ""},
		{"task date without zone", KindTask, "/created_at", "2024-01-15T10:00:00", "/created_at", "format"},
		{"task date with space", KindTask, "/created_at", "2024-01-15 10:00:00Z", "/created_at", "format"},
		{"task date with offset", KindTask, "/created_at", "2024-01-15T10:00:00.5-05:00", "-", ""},
		{"task date lower-case t", KindTask, "/created_at", "2024-01-15t10:00:00Z", "/created_at", "format"},
		{"task date lower-case z", KindTask, "/created_at", "2024-01-15T10:00:00z", "/created_at", "format"},
		{"task date leap second", KindTask, "/created_at", "2024-01-15T23:59:60Z", "/created_at", "format"},
		{"task date hour 24", KindTask, "/created_at", "2024-01-15T24:00:00Z", "/created_at", "format"},
		{"task date nanoseconds", KindTask, "/created_at", "2024-01-15T10:00:00.123456789Z", "-", ""},
		{"task date wrong type", KindTask, "/created_at", 1705312800, "/created_at", "type"},
		{"task constraints wrong type", KindTask, "/constraints", "one", "/constraints", "type"},
		// plan
		{"plan missing subtasks", KindPlan, "/subtasks", remove, "", "required"},
		{"plan version zero", KindPlan, "/version", 0, "/version", "minimum"},
		{"plan version string", KindPlan, "/version", "2", "/version", "type"},
		{"plan status enum", KindPlan, "/status", "done", "/status", "enum"},
		{"plan subtask bad id", KindPlan, "/subtasks/0/id", "st 1", "/subtasks/0/id", "pattern"},
		{"plan subtask missing description", KindPlan, "/subtasks/1/description", remove, "/subtasks/1", "required"},
		{"plan complexity enum", KindPlan, "/subtasks/1/estimated_complexity", "huge", "/subtasks/1/estimated_complexity", "enum"},
		{"plan bad dependency", KindPlan, "/subtasks/1/dependencies", []any{"../x"}, "/subtasks/1/dependencies/0", "pattern"},
		{"plan checkpoint missing subtasks", KindPlan, "/checkpoints/0/subtasks", remove, "/checkpoints/0", "required"},
		{"plan negative retries", KindPlan, "/subtasks/1/max_retries", -1, "/subtasks/1/max_retries", "minimum"},
		// state
		{"state missing journal_seq", KindState, "/journal_seq", remove, "", "required"},
		{"state status enum", KindState, "/status", "running", "/status", "enum"},
		{"state null errors", KindState, "/errors", nil, "/errors", "type"},
		{"state subtask status enum", KindState, "/subtasks/st_2/status", "working", "/subtasks/st_2/status", "enum"},
		{"state bad subtask key", KindState, "/subtasks/a b", map[string]any{"status": "pending"}, "/subtasks/a b", "pattern"},
		{"state worker status enum", KindState, "/workers/worker_1/status", "idle", "/workers/worker_1/status", "enum"},
		{"state checkpoint status enum", KindState, "/checkpoints/checkpoint_1/status", "done", "/checkpoints/checkpoint_1/status", "enum"},
		{"state plan_status enum", KindState, "/plan_status", "draft", "/plan_status", "enum"},
		{"state bad last_updated", KindState, "/last_updated", "yesterday", "/last_updated", "format"},
		{"state error missing message", KindState, "/errors/0/message", remove, "/errors/0", "required"},
		// output
		{"output missing subtask_id", KindOutput, "/subtask_id", remove, "", "required"},
		{"output status enum", KindOutput, "/status", "done", "/status", "enum"},
		{"output code value type", KindOutput, "/code/main.go", 42, "/code/main.go", "type"},
		{"output bad worker", KindOutput, "/worker_id", "", "/worker_id", "pattern"},
		// review
		{"review missing verdict", KindReview, "/verdict", remove, "", "required"},
		{"review type enum", KindReview, "/type", "code_review", "/type", "enum"},
		{"review verdict enum", KindReview, "/verdict", "ok", "/verdict", "enum"},
		{"review issue missing problem", KindReview, "/issues/0/problem", remove, "/issues/0", "required"},
		{"review bad date", KindReview, "/reviewed_at", "2024-13-01T00:00:00Z", "/reviewed_at", "format"},
		// entry
		{"entry missing value", KindEntry, "/value", remove, "", "required"},
		{"entry null value", KindEntry, "/value", nil, "-", ""},
		{"entry empty key", KindEntry, "/key", "", "/key", "minLength"},
		{"entry long key", KindEntry, "/key", strings.Repeat("k", 201), "/key", "maxLength"},
		{"entry odd key", KindEntry, "/key", "../../etc/passwd", "-", ""},
		{"entry control key", KindEntry, "/key", "a\tb", "/key", "pattern"},
		{"entry version zero", KindEntry, "/version", 0, "/version", "minimum"},
		{"entry bad updated_at", KindEntry, "/updated_at", "now", "/updated_at", "format"},
		// thread
		{"thread missing from", KindThread, "/from", remove, "", "required"},
		{"thread status enum", KindThread, "/status", "closed", "/status", "enum"},
		{"thread bad parent", KindThread, "/parent_id", "-x", "/parent_id", "pattern"},
		{"thread buffers type", KindThread, "/buffers", []any{1}, "/buffers/0", "type"},
		{"thread primary mode", KindThread, "/primary_mode", "analysis", "-", ""},
		{"thread primary mode type", KindThread, "/primary_mode", []any{"a"}, "/primary_mode", "type"},
		{"thread activated_at", KindThread, "/activated_at", "yesterday", "/activated_at", "format"},
		// skill front matter
		{"skill missing description", KindSkill, "/description", remove, "", "required"},
		{"skill empty description", KindSkill, "/description", "", "/description", "minLength"},
		{"skill two-line description", KindSkill, "/description", "a\nb", "/description", "pattern"},
		{"skill unknown key", KindSkill, "/tag", []any{"grids"}, "", "additionalProperties"},
		{"skill tag with space", KindSkill, "/tags/0", "two words", "/tags/0", "pattern"},
		{"skill tag c++", KindSkill, "/tags/0", "c++-mode", "-", ""},
		{"skill repeated mode", KindSkill, "/modes", []any{"a", "a"}, "/modes", "uniqueItems"},
		{"skill modes not a list", KindSkill, "/modes", "analysis", "/modes", "type"},
		// agent cards
		{"card skills", KindAgents, "/agents/1/skills", []any{"core", "grids"}, "-", ""},
		{"card bad skill name", KindAgents, "/agents/1/skills", []any{"../x"}, "/agents/1/skills/0", "pattern"},
		{"card memory opt-out", KindAgents, "/agents/1/memory_in_context", false, "-", ""},
		{"card memory type", KindAgents, "/agents/1/memory_in_context", "no", "/agents/1/memory_in_context", "type"},
		// claim
		{"claim missing subtask", KindClaim, "/subtask_id", remove, "", "required"},
		{"claim bad agent", KindClaim, "/agent_id", "worker 1", "/agent_id", "pattern"},
		{"claim bad claimed_at", KindClaim, "/claimed_at", "2024-01-15T10:20:00.123456", "/claimed_at", "format"},
		// done
		{"done missing agent", KindDone, "/agent_id", remove, "", "required"},
		{"done status enum", KindDone, "/status", "ok", "/status", "enum"},
		{"done cancelled", KindDone, "/status", "cancelled", "-", ""},
		{"done output type", KindDone, "/output_file", 3, "/output_file", "type"},
		// friction
		{"friction missing entries", KindFriction, "/entries", remove, "", "required"},
		{"friction bad id", KindFriction, "/entries/0/id", "friction_01", "/entries/0/id", "pattern"},
		{"friction long id", KindFriction, "/entries/0/id", "friction_1234", "-", ""},
		{"friction type enum", KindFriction, "/entries/0/type", "slowness", "/entries/0/type", "enum"},
		{"friction status enum", KindFriction, "/entries/0/status", "open", "/entries/0/status", "enum"},
		{"friction missing timestamp", KindFriction, "/entries/0/timestamp", remove, "/entries/0", "required"},
		{"friction occurrences zero", KindFriction, "/entries/0/occurrences", 0, "/entries/0/occurrences", "minimum"},
		// journal
		{"journal missing marker", KindJournal, "/marker", remove, "", "required"},
		{"journal kind enum", KindJournal, "/kind", "other", "/kind", "enum"},
		{"journal seq zero", KindJournal, "/seq", 0, "/seq", "minimum"},
		{"journal done marker checked", KindJournal, "/marker/status", "ok", "/marker/status", "enum"},
		{"journal claim marker checked", KindJournal, "/kind", "claim", "/marker", "required"},
		{"journal rejected marker free", KindJournal, "/rejected", "output missing", "-", ""},
		{"journal review snapshot checked", KindJournal, "/review/verdict", "fine", "/review/verdict", "enum"},
		{"journal plan snapshot checked", KindJournal, "/plan", map[string]any{"id": "p"}, "/plan", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := edit(t, tt.kind, tt.ptr, tt.value)
			err := Validate(tt.kind, doc)
			if tt.wantPtr == "-" {
				if err != nil {
					t.Fatalf("refused:\n%v\n%s", err, doc)
				}
				return
			}
			var ve *Error
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want *Error\n%s", err, doc)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Error("*Error does not match ErrInvalid")
			}
			if ve.Kind != tt.kind {
				t.Errorf("Kind = %q, want %q", ve.Kind, tt.kind)
			}
			got := ve.Problems[0]
			if got.Pointer != tt.wantPtr || got.Rule != tt.rule {
				t.Errorf("first problem = %q %q (%s), want %q %q\nall:\n%v", got.Pointer, got.Rule, got.Message, tt.wantPtr, tt.rule, err)
			}
			if got.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

// TestProblemsSortedAndStable: the validator walks properties in map order;
// the problems must still come out the same, in document order, every time.
func TestProblemsSortedAndStable(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"id":"p","task_id":"t t","version":0,"created_at":"x","status":"?",
		"subtasks":[{"id":"ok","description":"a"},{"id":"b b"},{"id":"c","description":"c","estimated_complexity":"x"}],
		"subtasks_extra":1}`)
	want := []Problem{
		{"/created_at", "format", "'x' is not valid 'date-time'"},
		{"/status", "enum", `value must be one of "draft", "proposed", "approved", "revision_needed"`},
		{"/subtasks/1", "required", "missing properties: 'description'"},
		{"/subtasks/1/id", "pattern", "does not match pattern '" + vocab.IDPattern + "'"},
		{"/subtasks/2/estimated_complexity", "enum", `value must be one of "low", "medium", "high"`},
		{"/task_id", "pattern", "does not match pattern '" + vocab.IDPattern + "'"},
		{"/version", "minimum", "must be >= 1 but found 0"},
	}
	for i := range 30 {
		var ve *Error
		if err := Validate(KindPlan, doc); !errors.As(err, &ve) {
			t.Fatalf("Validate = %v, want *Error", err)
		}
		if !reflect.DeepEqual(ve.Problems, want) {
			t.Fatalf("run %d: problems =\n%#v\nwant\n%#v", i, ve.Problems, want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		kind Kind
		doc  string
	}{
		{"plan_bad_subtasks", KindPlan, `{"id":"p","task_id":"t","version":1,"subtasks":[{"id":"bad id","description":"x"},{"description":"y"}]}`},
		{"task_root_required", KindTask, `{"created_at":"2024-01-15T10:00:00Z"}`},
		{"task_not_object", KindTask, `[]`},
		{"state_escaped_keys", KindState, `{"task_id":"t","status":"executing","phase":"p","last_updated":"2024-01-15T10:00:00Z","subtasks":{"a/b c~":{"status":"pending"}},"checkpoints":{},"workers":{},"revision_count":0,"errors":[],"journal_seq":0}`},
		{"task_syntax", KindTask, "{\n  \"id\": \"t\",\n  \"x\": tru\n}"},
	}
	var got bytes.Buffer
	for _, c := range cases {
		got.WriteString("== " + c.name + "\n")
		got.WriteString(Validate(c.kind, []byte(c.doc)).Error())
		got.WriteString("\n")
	}
	golden := filepath.Join("testdata", "golden", "errors.txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("error text differs from %s (run with -update after checking):\ngot:\n%s\nwant:\n%s", golden, got.Bytes(), want)
	}
}

func TestErrorTextIsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"agents":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"bad name"}`)
	}
	b.WriteString(`]}`)
	var ve *Error
	if err := Validate(KindAgents, []byte(b.String())); !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want *Error", err)
	}
	if len(ve.Problems) != 100 {
		t.Errorf("%d problems, want 100", len(ve.Problems))
	}
	lines := strings.Split(ve.Error(), "\n")
	if len(lines) != maxErrorLines+1 || lines[maxErrorLines] != "agents: ... and 80 more problems" {
		t.Errorf("Error() has %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	if ve.Problems[10].Pointer != "/agents/10/name" {
		t.Errorf("problem 10 at %q: indexes not sorted as numbers", ve.Problems[10].Pointer)
	}
}

func TestSyntaxErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		doc          string
		offset       int64
		line, column int
		msg          string
	}{
		{"empty", "", 0, 1, 1, "unexpected end"},
		{"only space", " \n ", 3, 2, 2, "unexpected end"},
		{"truncated", `{"id": `, 7, 1, 8, "unexpected end"},
		{"bad literal", "{\n  \"id\": \"t\",\n  \"x\": tru\n}", 25, 3, 11, "invalid character"},
		{"trailing comma", "{\"id\": 1,}", 9, 1, 10, "invalid character '}'"},
		{"trailing data", `{"id": "t"} x`, 12, 1, 13, "unexpected data after"},
		{"two values", `{} {}`, 3, 1, 4, "unexpected data after"},
		{"invalid utf-8", "{\"id\": \"t\xff\"}", 9, 1, 10, "invalid UTF-8"},
		{"invalid utf-8 line 2", "{\n\"\xc3\x28\": 1}", 3, 2, 2, "invalid UTF-8"},
		{"not json", "id: t", 0, 1, 1, "invalid character 'i'"},
		{"control char in string", "{\"id\": \"a\x01\"}", 9, 1, 10, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(KindTask, []byte(tt.doc))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Validate = %v, want *SyntaxError", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Error("*SyntaxError does not match ErrInvalid")
			}
			if se.Offset != tt.offset || se.Line != tt.line || se.Column != tt.column {
				t.Errorf("at byte %d line %d column %d, want %d %d %d (%v)", se.Offset, se.Line, se.Column, tt.offset, tt.line, tt.column, err)
			}
			if !strings.Contains(se.Msg, tt.msg) || !strings.HasPrefix(err.Error(), "task: invalid JSON at line ") {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
		})
	}
}

func nested(depth int, inner string) []byte {
	return []byte(`{"key":"k","short_description":"d","version":1,"value":` +
		strings.Repeat("[", depth-1) + inner + strings.Repeat("]", depth-1) + `}`)
}

func TestLimits(t *testing.T) {
	t.Parallel()
	t.Run("depth at the limit", func(t *testing.T) {
		if err := Validate(KindEntry, nested(MaxDepth, "1")); err != nil {
			t.Errorf("depth %d refused: %v", MaxDepth, err)
		}
	})
	t.Run("depth over the limit", func(t *testing.T) {
		err := Validate(KindEntry, nested(MaxDepth+1, "1"))
		if !errors.Is(err, ErrTooDeep) || !strings.HasPrefix(err.Error(), "entry: ") {
			t.Errorf("depth %d: %v, want ErrTooDeep", MaxDepth+1, err)
		}
	})
	t.Run("brackets in strings do not count", func(t *testing.T) {
		s := `"` + strings.Repeat(`[{\"`, 100) + `"`
		if err := Validate(KindEntry, nested(2, s)); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("depth bomb", func(t *testing.T) {
		bomb := bytes.Repeat([]byte("["), MaxBytes)
		if err := Validate(KindEntry, bomb); !errors.Is(err, ErrTooDeep) {
			t.Errorf("bomb: %v, want ErrTooDeep", err)
		}
	})
	t.Run("size at the limit", func(t *testing.T) {
		pad := len(nested(1, `""`))
		doc := nested(1, `"`+strings.Repeat("x", MaxBytes-pad)+`"`)
		if len(doc) != MaxBytes {
			t.Fatalf("built %d bytes", len(doc))
		}
		if err := Validate(KindEntry, doc); err != nil {
			t.Errorf("%d bytes refused: %v", len(doc), err)
		}
	})
	t.Run("size over the limit", func(t *testing.T) {
		doc := make([]byte, MaxBytes+1)
		if err := Validate(KindEntry, doc); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%d bytes: %v, want ErrTooLarge", len(doc), err)
		}
	})
	t.Run("custom limits", func(t *testing.T) {
		if err := ValidateLimits(KindEntry, readValid(t, KindEntry), 100, 0); !errors.Is(err, ErrTooLarge) {
			t.Errorf("100-byte limit: %v, want ErrTooLarge", err)
		}
		// testdata/valid/entry.json nests 4 deep: object, value, grid, row.
		if err := ValidateLimits(KindEntry, readValid(t, KindEntry), 0, 3); !errors.Is(err, ErrTooDeep) {
			t.Errorf("depth limit 3: %v, want ErrTooDeep", err)
		}
		if err := ValidateLimits(KindEntry, readValid(t, KindEntry), 0, 4); err != nil {
			t.Errorf("depth limit 4: %v", err)
		}
	})
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want Kind // "" means not a schema'd file
	}{
		{"workspace.json", KindWorkspace},
		{"config/agents.json", KindAgents},
		{"friction/friction.json", KindFriction},
		{"memory/global/arc_task.json", KindEntry},
		{"memory/global/arc%2Ftask.json", KindEntry},
		{"memory/global/%2Ehidden.json", KindEntry},
		{"memory/agents/solver/notes.json", KindEntry},
		{"tasks/t1/task.json", KindTask},
		{"tasks/t1/plan.json", KindPlan},
		{"tasks/t1/plans/plan_v1.json", KindPlan},
		{"tasks/t1/plans/plan_v12.json", KindPlan},
		{"tasks/t1/state.json", KindState},
		{"tasks/t1/backups/state_20240115T100000.000000001Z.json", KindState},
		{"tasks/t1/outputs/st_1.json", KindOutput},
		{"tasks/t1/reviews/plan_v1.json", KindReview},
		{"tasks/t1/outputs/history/st_1.v1.json", KindOutput},
		{"tasks/t1/reviews/history/plan_v1.v2.json", KindReview},
		{"tasks/t1/env/arc_task.json", KindEntry},
		{"tasks/t1/sessions/th_2/scratch.json", KindEntry},
		{"tasks/t1/threads/th_2.json", KindThread},
		{"tasks/t1/journal/00000000000000000001.json", KindJournal},
		{"tasks/t1/.claim.worker_1", KindClaim},
		{"tasks/t1/.claim.worker.1.a7", KindClaim},
		{"tasks/t1/.done.worker_1", KindDone},
		{"tasks/t1/.done.worker_1.st_3", KindDone},
		{"skills/core.md", KindSkill},
		{"skills/grids.v2.md", KindSkill},

		{"", ""},
		{"workspace", ""},
		{"/workspace.json", ""},
		{"./workspace.json", ""},
		{"tasks/t1/../t2/task.json", ""},
		{"tasks/t1//task.json", ""},
		{"tasks/t1/events.log", ""},
		{"tasks/t1/.locks/task.lock", ""},
		{"tasks/t1/env/.locks/arc_task.json.lock", ""},
		{"tasks/t1/env/.arc_task.json123456", ""},
		{"skills/.grids.md123456", ""},
		{"skills/.md", ""},
		{"skills/notes.txt", ""},
		{"skills/sub/grids.md", ""},
		{"tasks/t1/env/.tmp-42", ""},
		{"tasks/t1/env/arc_task.txt", ""},
		{"tasks/t1/env/.json", ""},
		{"tasks/t1/env/sub/x.json", ""},
		{"tasks/t1/..claim.w1123", ""},
		{"tasks/t1/.claim.", ""},
		{"tasks/t1/.done.", ""},
		{"tasks/t1/.claim.w1/x", ""},
		{"tasks/t1/.doneworker", ""},
		{"tasks/t1/plans/plan_vx.json", ""},
		{"tasks/t1/plans/plan_v.json", ""},
		{"tasks/t1/plans/other.json", ""},
		{"tasks/t1/backups/events.json", ""},
		{"tasks/t1/sessions/th_2.json", ""},
		{"tasks/task.json", ""},
		{"tasks/.t1/task.json", ""},
		{"task.json", ""},
		{"config/other.json", ""},
		{"memory/global/sub/x.json", ""},
		{"memory/agents/solver.json", ""},
		{"other/t1/task.json", ""},
		{".claim.w1", ""},
		{"tasks/t1/outputs/st_1.json.tmp", ""},
		{"tasks/t1/outputs/history/.st_1.v1.json123", ""},
		{"tasks/t1/outputs/history/st_1.v1.txt", ""},
		{"tasks/t1/outputs/other/st_1.v1.json", ""},
		{"tasks/t1/reviews/history/sub/r.v1.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, ok := KindOf(tt.path)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("KindOf(%q) = %q, %v; want %q", tt.path, got, ok, tt.want)
			}
		})
	}
}

// TestConcurrentValidate exercises the one-time compilation from many
// goroutines at once (meaningful under -race).
func TestConcurrentValidate(t *testing.T) {
	t.Parallel()
	done := make(chan error)
	for _, k := range Kinds() {
		go func() {
			done <- Validate(k, readValidNoT(k))
		}()
	}
	for range Kinds() {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func readValidNoT(k Kind) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "valid", string(k)+".json"))
	if err != nil {
		return []byte(err.Error())
	}
	return b
}

func BenchmarkValidatePlan(b *testing.B) {
	doc := readValidNoT(KindPlan)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := Validate(KindPlan, doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckLimits16MiB(b *testing.B) {
	doc := nested(1, `"`+strings.Repeat("x", MaxBytes-100)+`"`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := CheckLimits(doc, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckLimitsDepth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		doc   string
		depth int // the deepest nesting; the doc must pass at this limit and fail below it
	}{
		{"scalar", `1`, 0},
		{"object", `{"a":1}`, 1},
		{"escaped backslash before quote", `{"a":"\\","b":[1]}`, 2},
		{"escaped quote keeps string open", `{"a":"\"[[[","b":1}`, 1},
		{"brackets in keys", `{"[[[":{"{{":2}}`, 2},
		{"unicode escapes", `[["\u005b\u005b"]]`, 2},
		{"unterminated string", `[["abc`, 2},
		{"unbalanced closers", `]]]]{}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckLimits([]byte(tt.doc), 0, max(tt.depth, 1)); err != nil {
				t.Errorf("limit %d: %v", tt.depth, err)
			}
			if tt.depth > 1 {
				if err := CheckLimits([]byte(tt.doc), 0, tt.depth-1); !errors.Is(err, ErrTooDeep) {
					t.Errorf("limit %d: %v, want ErrTooDeep", tt.depth-1, err)
				}
			}
		})
	}
}

// TestJournalBatch: a journal file may hold the records of one chunk,
// {"records": [...]}, each checked as a record.
func TestJournalBatch(t *testing.T) {
	t.Parallel()
	rec := string(readValid(t, KindJournal))
	tests := []struct {
		name    string
		doc     string
		wantPtr string // "-": valid
		rule    string
	}{
		{"one record", `{"records":[` + rec + `]}`, "-", ""},
		{"two records", `{"records":[` + rec + `,` + rec + `]}`, "-", ""},
		{"no records", `{"records":[]}`, "/records", "minItems"},
		{"records not an array", `{"records":{}}`, "/records", "type"},
		{"bad record checked", `{"records":[` + rec + `,{"seq":2}]}`, "/records/1", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(KindJournal, []byte(tt.doc))
			if tt.wantPtr == "-" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ve *Error
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want *Error", err)
			}
			if got := ve.Problems[0]; got.Pointer != tt.wantPtr || got.Rule != tt.rule {
				t.Errorf("first problem = %q %q (%s), want %q %q", got.Pointer, got.Rule, got.Message, tt.wantPtr, tt.rule)
			}
		})
	}
}
