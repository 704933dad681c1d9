package sqlite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

// TestStandbyTakesOverAfterSIGKILL: `serve --standby` waits while the
// leader serves, and when the leader is SIGKILLed it leads (status names
// its pid) and gives the verdicts of the claims dropped after. Three rounds, the standby of each round the leader of the
// next.
func TestStandbyTakesOverAfterSIGKILL(t *testing.T) {
	t.Parallel()
	w, _ := clitest.NewSQLite(t)
	w.Task("t1")
	leader := w.Serve()
	for round := range 3 {
		standby := w.Start("--standby")
		// The standby waits: the leader still answers every claim.
		clitest.Eventually(t, "the standby waiting", func() (bool, string) {
			out := w.Ok("status")
			return standby.Running() && strings.Contains(out, fmt.Sprintf("pid %d", leader.Pid())), out
		})
		if r := claim(w, fmt.Sprintf("before_%d", round)); r != int64(2*round+1) {
			t.Fatalf("round %d, claim served by the leader: journal seq %d, want %d", round, r, 2*round+1)
		}
		leader.Kill()
		// The standby leads (status names it) and serves the claims.
		clitest.Eventually(t, "the standby leading", func() (bool, string) {
			out := w.Ok("status")
			return strings.Contains(out, fmt.Sprintf("pid %d", standby.Pid())), out + "\nstandby log: " + standby.Log.String()
		})
		if r := claim(w, fmt.Sprintf("after_%d", round)); r != int64(2*round+2) {
			t.Fatalf("round %d, claim after the leader died: journal seq %d, want %d\nstandby log: %s", round, r, 2*round+2, standby.Log)
		}
		leader = standby
	}
	// Six claims, each journaled once, in order.
	var st struct {
		JournalSeq int64 `json:"journal_seq"`
	}
	clitest.Decode(t, w.Ok("state", "show", "--task", "t1", "--json"), &st)
	if st.JournalSeq != 6 {
		t.Fatalf("journal_seq %d after six claims, want 6", st.JournalSeq)
	}
}

// claim drops a claim of s1 (lost: t1 has no plan) and waits for its
// verdict; it returns the verdict's journal seq.
func claim(w *clitest.WS, agent string) int64 {
	w.T.Helper()
	r := w.Run("claim", "--task", "t1", "--agent", agent, "--subtask", "s1", "--wait", "60s", "--json")
	var v struct {
		Verdict string `json:"verdict"`
		Seq     int64  `json:"seq"`
	}
	if r.Code != 4 {
		w.T.Fatalf("claim by %s: %v", agent, r)
	}
	clitest.Decode(w.T, r.Stdout, &v)
	if v.Verdict != "lost" {
		w.T.Fatalf("claim by %s: %v", agent, r)
	}
	return v.Seq
}
