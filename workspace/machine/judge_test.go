package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
)

// judgeLimits are small limits, so that oversized and deep input is cheap
// to build.
var judgeLimits = workspace.Settings{Limits: workspace.LimitSettings{MaxFileBytes: 2048, MaxDepth: 8}}

const (
	goodPlan   = `{"id":"plan_t1","task_id":"t1","version":1,"subtasks":[{"id":"st_1","description":"one"}]}`
	goodReview = `{"id":"r1","type":"plan_review","verdict":"approved"}`
	goodOutput = `{"subtask_id":"st_1","summary":"done"}`
)

// nested is a JSON array n levels deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// Every rule that takes or refuses a marker, with the reason worded as
// the stores' records and the docs word it, and whether waiting may cure
// it.
func TestJudgeMarker(t *testing.T) {
	unsafe := &workspace.Error{Kind: workspace.ErrUnsafe, Op: "product outputs/st_1.json", Msg: "is a symlink; agent files must be regular files"}
	type want struct {
		reason  string // the whole reason, or with a trailing "…" its start; "" taken
		soft    bool
		subtask string // the record's subtask_id
		plan    bool   // the record carries a plan
		review  bool
	}
	cases := []struct {
		name    string
		kind    string
		marker  string
		product *ProductRead // nil: the test fails if it is read
		want    want
	}{
		{name: "claim ok", kind: workspace.KindClaim, marker: `{"agent_id":"w1","subtask_id":"st_1"}`,
			want: want{subtask: "st_1"}},
		{name: "claim without subtask", kind: workspace.KindClaim, marker: `{"agent_id":"w1"}`,
			want: want{reason: "not a valid claim marker: …", soft: true}},
		{name: "claim not JSON", kind: workspace.KindClaim, marker: `{"agent_id":"w1",`,
			want: want{reason: "not a valid claim marker: …", soft: true}},
		{name: "claim empty", kind: workspace.KindClaim, marker: ``,
			want: want{reason: "not a valid claim marker: …", soft: true}},
		{name: "claim of a path", kind: workspace.KindClaim, marker: `{"agent_id":"w1","subtask_id":"../../etc/passwd"}`,
			want: want{reason: "not a valid claim marker: …", soft: true, subtask: "../../etc/passwd"}},
		{name: "claim with a key the schema does not see", kind: workspace.KindClaim, marker: `{"agent_id":"w1","subtask_id":"st_1","Subtask_ID":"../x"}`,
			want: want{reason: `not a valid claim marker: subtask_id "../x": …`, soft: true, subtask: "../x"}},
		{name: "marker oversized", kind: workspace.KindClaim, marker: `{"agent_id":"w1","subtask_id":"st_1","x":"` + strings.Repeat("a", 2100) + `"}`,
			want: want{reason: "marker is 2144 bytes, more than the limit of 2048"}},
		{name: "marker too deep", kind: workspace.KindDone, marker: `{"agent_id":"w1","x":` + nested(20) + `}`,
			want: want{reason: "marker nested deeper than 8 levels (at byte 28)"}},
		{name: "marker with NUL and invalid UTF-8", kind: workspace.KindDone, marker: "{\"agent_id\":\"w\x00\xff\",\"output_file\":\"plan.json\"}",
			want: want{reason: "not a valid done marker: …", soft: true}},
		{name: "done names no output", kind: workspace.KindDone, marker: `{"agent_id":"w1","subtask_id":"st_1"}`,
			want: want{reason: "done marker names no output_file", subtask: "st_1"}},
		{name: "cancelled without output", kind: workspace.KindDone, marker: `{"agent_id":"human","status":"cancelled"}`,
			want: want{}},
		{name: "done outside the task", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"../t2/outputs/st_1.json"}`,
			want: want{reason: `output_file "../t2/outputs/st_1.json" is not plan.json, reviews/<id>.json or outputs/<id>.json`}},
		{name: "done absolute output", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"/etc/passwd"}`,
			want: want{reason: `output_file "/etc/passwd" is not plan.json, reviews/<id>.json or outputs/<id>.json`}},
		{name: "done names another subtask", kind: workspace.KindDone, marker: `{"agent_id":"w1","subtask_id":"st_2","output_file":"outputs/st_1.json"}`,
			want: want{reason: "done marker names subtask st_2, but its output_file outputs/st_1.json is subtask st_1's", subtask: "st_2"}},
		{name: "done output ok", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Data: []byte(goodOutput)}, want: want{subtask: "st_1"}},
		{name: "done plan ok", kind: workspace.KindDone, marker: `{"agent_id":"planner","output_file":"plan.json"}`,
			product: &ProductRead{Data: []byte(goodPlan)}, want: want{plan: true}},
		{name: "done review ok", kind: workspace.KindDone, marker: `{"agent_id":"reviewer","output_file":"reviews/r1.json"}`,
			product: &ProductRead{Data: []byte(goodReview)}, want: want{review: true}},
		{name: "product missing", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Missing: true}, want: want{reason: "output outputs/st_1.json: output file outputs/st_1.json does not exist", soft: true}},
		{name: "product unsafe", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Err: unsafe}, want: want{reason: "output outputs/st_1.json: is a symlink; agent files must be regular files"}},
		{name: "product unreadable", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Err: errors.New("read st_1.json: input/output error")}, want: want{reason: "output outputs/st_1.json: read st_1.json: input/output error", soft: true}},
		{name: "product not JSON", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Data: []byte(`{"subtask_id":`)}, want: want{reason: "output outputs/st_1.json: does not match its schema: …", soft: true}},
		{name: "product of another subtask", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Data: []byte(`{"subtask_id":"st_2"}`)}, want: want{reason: `output outputs/st_1.json: holds subtask_id "st_2", not "st_1"`, soft: true}},
		{name: "product too deep", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Data: []byte(`{"subtask_id":"st_1","x":` + nested(20) + `}`)}, want: want{reason: "output outputs/st_1.json: nested deeper than 8 levels (at byte 32)"}},
		{name: "product oversized", kind: workspace.KindDone, marker: `{"agent_id":"w1","output_file":"outputs/st_1.json"}`,
			product: &ProductRead{Data: []byte(`{"subtask_id":"st_1","x":"` + strings.Repeat("a", 3000) + `"}`)}, want: want{reason: "output outputs/st_1.json: 3028 bytes, more than the limit of 2048"}},
		{name: "plan depending on an unknown subtask", kind: workspace.KindDone, marker: `{"agent_id":"planner","output_file":"plan.json"}`,
			product: &ProductRead{Data: []byte(`{"id":"p","task_id":"t1","version":1,"subtasks":[{"id":"st_1","description":"","dependencies":["st_9"]}]}`)},
			want:    want{reason: "output plan.json: subtask st_1 depends on unknown st_9", soft: true}},
		// The schema sees "verdict"; decoding, which matches keys without
		// regard to case, keeps the later "Verdict": the record carrying
		// the review would not match the journal's schema.
		{name: "review failing the journal schema", kind: workspace.KindDone, marker: `{"agent_id":"reviewer","output_file":"reviews/r1.json"}`,
			product: &ProductRead{Data: []byte(`{"id":"r1","type":"plan_review","verdict":"approved","Verdict":"maybe"}`)},
			want:    want{reason: "record does not match the journal schema: …"}},
		{name: "plan failing the journal schema", kind: workspace.KindDone, marker: `{"agent_id":"planner","output_file":"plan.json"}`,
			product: &ProductRead{Data: []byte(`{"id":"plan_t1","task_id":"t1","version":1,"Version":0,"subtasks":[]}`)},
			want:    want{reason: "record does not match the journal schema: …"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			read := func(f string) ProductRead {
				if c.product == nil {
					t.Fatalf("product %s read, want none read", f)
				}
				return *c.product
			}
			rec, soft := JudgeMarker(c.kind, ".x.w1", []byte(c.marker), judgeLimits, read, 7, t0)
			w := c.want
			if prefix, ok := strings.CutSuffix(w.reason, "…"); ok && strings.HasPrefix(rec.Rejected, prefix) && len(rec.Rejected) > len(prefix) {
				rec.Rejected = w.reason
			}
			if rec.Rejected != w.reason || soft != w.soft {
				t.Errorf("rejected %q (soft %v), want %q (soft %v)", rec.Rejected, soft, w.reason, w.soft)
			}
			if rec.Marker.SubtaskID != w.subtask || (rec.Plan != nil) != w.plan || (rec.Review != nil) != w.review {
				t.Errorf("record subtask %q, plan %v, review %v; want %q, %v, %v", rec.Marker.SubtaskID, rec.Plan != nil, rec.Review != nil, w.subtask, w.plan, w.review)
			}
			if rec.Seq != 7 || !rec.TakenAt.Equal(t0) || rec.File != ".x.w1" || rec.Kind != c.kind {
				t.Errorf("record %d %v %q %q, want seq 7 at %v of .x.w1, %s", rec.Seq, rec.TakenAt, rec.File, rec.Kind, t0, c.kind)
			}
			checkJournal(t, rec)
		})
	}
}

// checkJournal fails t unless rec matches the journal schema.
func checkJournal(t testing.TB, rec workspace.JournalRecord) {
	t.Helper()
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.KindJournal, data); err != nil {
		t.Fatalf("record %s does not match the journal schema: %v", data, err)
	}
}

// In two steps, a store learns the product to read from the marker alone;
// a refusal it makes itself (the marker gone before it was taken) is
// hard, and a record never carries a product it refused.
func TestJudgeInSteps(t *testing.T) {
	m := ParseMarker(workspace.KindDone, ".done.w1", []byte(`{"agent_id":"w1","output_file":"plan.json"}`), workspace.Settings{})
	if m.Product() != "plan.json" {
		t.Fatalf("Product() = %q, want plan.json", m.Product())
	}
	j := m.Judge(ProductRead{Data: []byte(goodPlan)})
	if !j.Taken() || j.Soft() || j.Reason() != "" {
		t.Fatalf("judgement taken %v soft %v %q, want taken", j.Taken(), j.Soft(), j.Reason())
	}
	if rec := j.Record(1, t0); rec.Plan == nil || rec.Rejected != "" {
		t.Fatalf("record %+v, want the plan taken", rec)
	}
	gone := j.Reject("marker vanished before it was taken")
	rec := gone.Record(2, t0)
	if gone.Taken() || gone.Soft() || rec.Rejected != "marker vanished before it was taken" || rec.Plan != nil {
		t.Fatalf("rejected record %+v (soft %v), want a hard rejection without the plan", rec, gone.Soft())
	}
	checkJournal(t, rec)
	if r := Rejected(workspace.KindClaim, ".claim.w1", "").Record(3, t0); r.Rejected != "marker could not be read" || r.Kind != workspace.KindClaim {
		t.Fatalf("Rejected with no reason = %+v", r)
	}
	bad := ParseMarker(workspace.KindDone, ".done.w1", []byte(`{"agent_id":"w1","output_file":"plan.json"`), workspace.Settings{})
	if bad.Product() != "" {
		t.Fatalf("a refused marker asks for product %q", bad.Product())
	}
}

// FuzzJudge feeds the judge any marker and product bytes: it never
// panics, and the record it returns matches the journal schema.
func FuzzJudge(f *testing.F) {
	for _, s := range []struct{ marker, product string }{
		{`{"agent_id":"w1","subtask_id":"st_1"}`, ``},
		{`{"agent_id":"w1","output_file":"outputs/st_1.json"}`, goodOutput},
		{`{"agent_id":"w1","output_file":"plan.json","claimed_at":"2024-01-15T10:00:00Z"}`, goodPlan},
		{`{"agent_id":"w1","output_file":"reviews/r1.json","status":"failed"}`, goodReview},
		{`{"agent_id":"w1","output_file":"reviews/r1.json"}`, `{"id":"r1","type":"plan_review","verdict":"approved","Verdict":"maybe"}`},
		{`{"agent_id":"h","status":"cancelled","Agent_ID":"../x"}`, ``},
		{`{"agent_id":"w1","output_file":"outputs/st_1.json"}`, nested(100)},
		{"{\"agent_id\":\"\xff\"}", "\x00"},
	} {
		f.Add(false, []byte(s.marker), []byte(s.product))
		f.Add(true, []byte(s.marker), []byte(s.product))
	}
	f.Fuzz(func(t *testing.T, claim bool, marker, product []byte) {
		kind := workspace.KindDone
		if claim {
			kind = workspace.KindClaim
		}
		read := func(string) ProductRead {
			switch len(product) {
			case 0:
				return ProductRead{Missing: true}
			case 1:
				return ProductRead{Err: fmt.Errorf("%w: odd", workspace.ErrUnsafe)}
			}
			return ProductRead{Data: product}
		}
		rec, soft := JudgeMarker(kind, "."+kind+".w1", marker, judgeLimits, read, 1, t0)
		if soft && rec.Rejected == "" {
			t.Fatalf("a taken record is soft: %+v", rec)
		}
		checkJournal(t, rec)
	})
}
