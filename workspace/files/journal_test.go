package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
)

func TestParseJournalName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ok    bool
		seq   int64
		last  int64
		taken string
	}{
		{"000000000007.json", true, 7, 7, ""},
		{"000000000008-000000000012.json", true, 8, 12, ""},
		{"000000000013.taken.done.worker_1.x1", true, 13, 13, ".done.worker_1.x1"},
		{"000000000008-000000000008.json", false, 0, 0, ""},
		{"000000000009-000000000008.json", false, 0, 0, ""},
		{"000000000008-12.json", false, 0, 0, ""},
		{"000000000008-000000000012.jsonx", false, 0, 0, ""},
		{"000000000000.json", false, 0, 0, ""},
		{".tmp-000000000007.json", false, 0, 0, ""},
		{"notes.txt", false, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := parseJournalName(tt.name)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && (e.seq != tt.seq || e.last != tt.last || e.marker != tt.taken) {
				t.Errorf("parsed %+v, want seq %d last %d marker %q", e, tt.seq, tt.last, tt.taken)
			}
		})
	}
	if got := BatchName(8, 12); got != "000000000008-000000000012.json" {
		t.Errorf("BatchName(8, 12) = %q", got)
	}
}

// TestRecoversChunk: a daemon stopped after taking a chunk of markers and
// writing its batch file, before settling it, leaves taken markers beside
// the batch. On start the batch is kept when it reads back whole, and
// written again from the taken markers when a power loss tore it; either
// way every marker is applied once and the journal is contiguous.
func TestRecoversChunk(t *testing.T) { eachWake(t, testRecoversChunk) }

func testRecoversChunk(t *testing.T, wake workspace.WakeOptions) {
	for _, tt := range []struct {
		name string
		torn bool
	}{{"batch whole", false}, {"batch torn", true}} {
		t.Run(tt.name, func(t *testing.T) {
			dir, ws := newWorkspace(t)
			prepare(t, ws, "t1", 3)
			h := startDaemon(t, dir, daemon.Config{Wake: wake})
			approve(t, ws, "t1")
			h.stop()
			st, err := ws.ReadState(t.Context(), "t1")
			if err != nil {
				t.Fatal(err)
			}
			base := st.JournalSeq
			td := filepath.Join(dir, "tasks", "t1")
			var recs []workspace.JournalRecord
			for i := 1; i <= 3; i++ {
				sub := fmt.Sprintf("st_%d", i)
				completeSubtask(t, ws, "t1", sub, "w"+sub[3:])
				names, _ := filepath.Glob(filepath.Join(td, ".done.w"+sub[3:]+"*"))
				if len(names) != 1 {
					t.Fatalf("markers of %s: %v", sub, names)
				}
				data, err := os.ReadFile(names[0])
				if err != nil {
					t.Fatal(err)
				}
				var m workspace.Marker
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				seq := base + int64(i)
				name := filepath.Base(names[0])
				if err := os.Rename(names[0], filepath.Join(td, JournalDir, takenName(seq, name))); err != nil {
					t.Fatal(err)
				}
				recs = append(recs, workspace.JournalRecord{Seq: seq, TakenAt: time.Now().UTC(), File: name, Kind: workspace.KindDone, Marker: m})
			}
			data, err := atomicfile.Marshal(JournalBatch{Records: recs})
			if err != nil {
				t.Fatal(err)
			}
			if tt.torn {
				data = data[:len(data)/2]
			}
			batch := filepath.Join(td, JournalDir, BatchName(base+1, base+3))
			if err := os.WriteFile(batch, data, 0o644); err != nil {
				t.Fatal(err)
			}

			h = startDaemon(t, dir, daemon.Config{Wake: wake})
			st = awaitState(t, ws, "t1", func(st workspace.State) bool { return st.Status == "completed" })
			h.stop()
			if st.JournalSeq != base+3 {
				t.Errorf("journal_seq = %d, want %d", st.JournalSeq, base+3)
			}
			if _, err := os.Stat(batch); (err == nil) == tt.torn {
				t.Errorf("batch file kept = %v, want %v", err == nil, !tt.torn)
			}
			got := readJournal(t, ws, "t1")
			if len(got) != int(base+3) {
				t.Fatalf("%d records, want %d", len(got), base+3)
			}
			for _, r := range got {
				if r.Rejected != "" {
					t.Errorf("record %d rejected: %q", r.Seq, r.Rejected)
				}
			}
			checkSettled(t, ws, "t1", st)
		})
	}
}

// A journal record past state.json that cannot be read holds its task
// back: the records after it are not applied (that would skip a marker
// for good) until it can be read, and then every one is applied in order.
func TestUnreadableRecordHoldsTask(t *testing.T) {
	t.Parallel()
	dir, ws, d := executingTask(t, 3)
	completeSubtask(t, ws, "t1", "st_1", "w1")
	process(t, d, "t1")
	settleAll(t, d)
	before, err := ws.ReadState(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	jdir := filepath.Join(dir, "tasks", "t1", JournalDir)
	claim := func(seq int64, sub string) []byte {
		data, err := atomicfile.Marshal(workspace.JournalRecord{Seq: seq, TakenAt: time.Now().UTC(), File: ".claim.w2." + sub,
			Kind: workspace.KindClaim, Marker: workspace.Marker{AgentID: "w2", SubtaskID: sub}})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	seq := before.JournalSeq
	if err := os.WriteFile(filepath.Join(jdir, RecordName(seq+1)), []byte(`{"seq":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jdir, RecordName(seq+2)), claim(seq+2, "st_3"), 0o644); err != nil {
		t.Fatal(err)
	}
	tk := d.taskOf("t1")
	if err := tk.load(context.Background(), true); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("journal record %d", seq+1)) {
		t.Fatalf("load over an unreadable record: %v, want an error naming record %d", err, seq+1)
	}
	if st, err := ws.ReadState(t.Context(), "t1"); err != nil || st.JournalSeq != seq {
		t.Fatalf("after the failed load: journal_seq %d (%v), want %d: a record past the unreadable one was applied", st.JournalSeq, err, seq)
	}
	if err := os.WriteFile(filepath.Join(jdir, RecordName(seq+1)), claim(seq+1, "st_2"), 0o644); err != nil {
		t.Fatal(err)
	}
	process(t, d, "t1")
	if err := tk.load(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	st, err := ws.ReadState(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st.JournalSeq != seq+2 || st.Subtasks["st_2"].Status != "in_progress" || st.Subtasks["st_3"].Status != "in_progress" {
		t.Errorf("after the record was mended: journal_seq %d, st_2 %s, st_3 %s; want %d and both in progress",
			st.JournalSeq, st.Subtasks["st_2"].Status, st.Subtasks["st_3"].Status, seq+2)
	}
}
