package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// TestMarkerNames: DropNamedMarker refuses, with ErrInvalid and nothing
// written, a name no file could have; a name that only looks hostile is
// kept as given and journaled under it, once.
func TestMarkerNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	m := workspace.Marker{AgentID: "w1", SubtaskID: "s1"}
	for name, bad := range map[string]string{
		"empty":        "",
		"prefix only":  ".claim.",
		"other kind":   ".done.w1.1",
		"no prefix":    "claim.w1.1",
		"slash":        ".claim.w1/../../x",
		"backslash":    `.claim.w1\x`,
		"nul":          ".claim.w1\x00x",
		"newline":      ".claim.w1\nx",
		"invalid utf8": ".claim.w1\xffx",
		"251 bytes":    ".claim." + strings.Repeat("x", 244),
		"1 MB":         ".claim." + strings.Repeat("x", 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			before := dump(t, s)
			err := s.DropNamedMarker(ctx, "t1", workspace.KindClaim, bad, m)
			if !errors.Is(err, workspace.ErrInvalid) || !strings.Contains(err.Error(), "drop marker") {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
			if dump(t, s) != before {
				t.Error("a refused marker changed the store")
			}
		})
	}
	odd := []string{
		".claim.'); DROP TABLE tasks; --",
		`.claim.x' OR '1'='1`,
		".claim.ключ 🔑",
		".claim." + strings.Repeat("x", 243),
	}
	for _, name := range odd {
		if err := s.DropNamedMarker(ctx, "t1", workspace.KindClaim, name, m); err != nil {
			t.Fatalf("drop %q: %v", name, err)
		}
	}
	if err := s.DropNamedMarker(ctx, "t1", workspace.KindClaim, odd[0], m); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("a name dropped twice: %v, want ErrConflict", err)
	}
	if _, err := s.Committer("t1").Commit(ctx, workspace.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	recs, err := s.ReadJournal(ctx, "t1")
	if err != nil || len(recs) != len(odd) {
		t.Fatalf("journal: %d records, %v; want %d", len(recs), err, len(odd))
	}
	for i, r := range recs {
		if r.File != odd[i] {
			t.Errorf("record %d journaled as %q, want %q", r.Seq, r.File, odd[i])
		}
	}
	if err := s.DropNamedMarker(ctx, "t1", workspace.KindClaim, odd[1], m); !errors.Is(err, workspace.ErrConflict) {
		t.Errorf("a journaled name dropped again: %v, want ErrConflict", err)
	}
	for _, name := range odd {
		if v, where, err := s.ReadVerdict("t1", name, 0); err != nil || where != workspace.MarkerDecided || v.Verdict == "" || v.Marker != name {
			t.Errorf("verdict on %q: %+v %s %v", name, v, where, err)
		}
	}
}

// TestProductsBadInput: an output that is not one JSON object of UTF-8
// within the limits is refused (ErrInvalid; ErrUnsafe when nested too
// deep) and nothing written; one
// holding SQL, NUL escapes and any script is kept and read back whole.
func TestProductsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	if _, err := s.CreateTask(ctx, workspace.NewTaskRequest{ID: "t1", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	lim := s.Settings().Limits
	for name, data := range map[string]string{
		"not json":       `{summary: 1}`,
		"two documents":  `{"summary":"a"} {"summary":"b"}`,
		"raw nul":        "{\"summary\":\"a\x00b\"}",
		"invalid utf8":   "{\"summary\":\"a\xffb\"}",
		"too deep":       `{"summary":"s","x":` + strings.Repeat("[", lim.MaxDepth+1) + strings.Repeat("]", lim.MaxDepth+1) + `}`,
		"over the limit": `{"summary":"` + strings.Repeat("x", lim.MaxFileBytes) + `"}`,
		"sql":            `'); DROP TABLE products; --`,
		"empty":          ``,
	} {
		t.Run(name, func(t *testing.T) {
			before := dump(t, s)
			_, err := s.WriteOutput(ctx, "t1", "s1", "w1", []byte(data))
			// Too deep is ErrUnsafe, as for a file the tree reads.
			if !errors.Is(err, workspace.ErrInvalid) && !errors.Is(err, workspace.ErrUnsafe) || err.Error() == "" {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
			if dump(t, s) != before {
				t.Error("a refused output changed the store")
			}
		})
	}
	summary := "'); DROP TABLE tasks; -- \u0000 ключ 🔑 e\u0301"
	data, _ := json.Marshal(map[string]any{"summary": summary, "details": map[string]any{"q": "x' OR '1'='1"}})
	rel, err := s.WriteOutput(ctx, "t1", "s1", "w1", data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.ReadProduct(ctx, "t1", rel)
	if err != nil || p.Output == nil || p.Output.Summary != summary {
		t.Fatalf("read back %+v, %v", p, err)
	}
	doc, err := s.ReadTaskDoc(ctx, "t1", rel)
	var back struct {
		Summary string         `json:"summary"`
		Details map[string]any `json:"details"`
	}
	if err != nil || json.Unmarshal(doc, &back) != nil || back.Summary != summary || back.Details["q"] != "x' OR '1'='1" {
		t.Errorf("read back %s, %v", doc, err)
	}
	for _, name := range []string{"../t2/task.json", "/etc/passwd", "outputs/'); DROP TABLE products; --", "outputs/a\x00b.json"} {
		if _, err := s.ReadTaskFile(ctx, "t1", name, -1); !errors.Is(err, workspace.ErrInvalid) && !errors.Is(err, workspace.ErrNotFound) {
			t.Errorf("read %q: %v, want ErrInvalid or ErrNotFound", name, err)
		}
	}
}
