package storetest

import (
	"context"
	"encoding/json"
	"path"
	"reflect"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/workspace"
)

// testVerdicts: the store's verdict reader (what `claim --wait`, MCP and
// the HTTP API wait on) gives on every kind of marker the verdict a whole
// reading of the state gives (machine.Judge): a claim won, one lost, one
// of a subtask the plan lacks, a done applied; and a claim dropped while
// no daemon serves, between a daemon's stop and the next one's start, is
// heard from the state's journal_seq read before the stop: the verdict
// read depends on no daemon's memory.
func testVerdicts(t *testing.T, s workspace.Store, h Hooks) {
	src, isSource := workspace.As[workspace.VerdictSource](s)
	if !isSource {
		t.Fatal("the store reads no verdicts (workspace.VerdictSource)")
	}
	approved(t, s, h, "t1", "s1", "s2", "s3")
	won, err := s.WriteClaim(bg, "t1", "worker_1", "s1")
	ok(t, err, "claim s1")
	lost, err := s.WriteClaim(bg, "t1", "worker_2", "s1")
	ok(t, err, "claim s1 again")
	missing, err := s.WriteClaim(bg, "t1", "worker_2", "s9")
	ok(t, err, "claim a subtask the plan lacks")
	h.Apply(t, s)
	out, _ := json.Marshal(map[string]any{"status": "completed", "summary": "done"})
	rel, err := s.WriteOutput(bg, "t1", "s1", "worker_1", out)
	ok(t, err, "write output")
	applied, err := s.WriteDone(bg, workspace.DoneRequest{TaskID: "t1", Agent: "worker_1", OutputFile: rel})
	ok(t, err, "done s1")
	h.Apply(t, s)
	want := map[string]string{won: workspace.VerdictWon, lost: workspace.VerdictLost, missing: workspace.VerdictNotFound, applied: workspace.VerdictApplied}
	for m, verdict := range want {
		if v := sameVerdict(t, s, src, m); v.Verdict != verdict {
			t.Errorf("%s: %+v, want %s", m, v, verdict)
		}
	}

	c := s.(*counted)
	st, err := s.ReadState(bg, "t1")
	ok(t, err, "read state")
	c.daemon.Stop()
	m, err := s.WriteClaim(bg, "t1", "worker_3", "s3")
	ok(t, err, "claim s3, no daemon serving")
	c.daemon = servetest.StartWith(t, c.Served, c.opt)
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	v, err := workspace.Wait(ctx, src, "t1", path.Base(m), st.JournalSeq)
	ok(t, err, "wait for a claim dropped before the daemon's restart")
	if v.Verdict != workspace.VerdictWon || v.Worker != "worker_3" {
		t.Fatalf("claim across a restart: %+v, want won by worker_3", v)
	}
	sameVerdict(t, s, src, m)
}

// sameVerdict checks that src's verdict on the marker m (decided) is the
// one machine.Judge gives from the whole state, and returns it.
func sameVerdict(t *testing.T, s workspace.Store, src workspace.VerdictSource, m string) workspace.Verdict {
	t.Helper()
	v, where, err := src.ReadVerdict("t1", path.Base(m), 0)
	ok(t, err, "read the verdict on "+m)
	if where != workspace.MarkerDecided {
		t.Fatalf("%s stands %s, want decided", m, where)
	}
	if whole := verdictOf(t, s, "t1", m); !reflect.DeepEqual(v, whole) {
		t.Fatalf("%s: the verdict reader says %+v; the whole state says %+v", m, v, whole)
	}
	return v
}
