package friction_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/locking"
	"github.com/workspaced/workspaced/schemas"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Environment of the child processes of TestConcurrentAddFromProcesses:
// eight processes of twelve adds each, every add a read-modify-write of
// the whole log under its lock, so the later adds of the first processes
// meet the first adds of the last. More adds only grow the document each
// one rewrites.
const (
	envChildRoot = "FRICTION_TEST_CHILD_ROOT"
	envChildName = "FRICTION_TEST_CHILD_NAME"
	childAdds    = 12
	childProcs   = 8
)

func TestMain(m *testing.M) {
	if root := os.Getenv(envChildRoot); root != "" {
		os.Exit(runChild(root, os.Getenv(envChildName)))
	}
	os.Exit(m.Run())
}

// runChild is one process of the concurrency test: childAdds entries with
// descriptions of its own.
func runChild(dir, name string) int {
	ws, err := files.Open(dir, workspace.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ws.Close()
	l := friction.Open(ws, name)
	for i := range childAdds {
		_, isNew, err := l.Add(context.Background(), friction.Entry{
			Type: friction.TypeEscalation,
			// Digits would normalise away and merge the entries.
			Description:   fmt.Sprintf("escalation %s from %s", letters(i), name),
			Pattern:       fmt.Sprintf("%s/%s", name, letters(i)),
			AffectedTasks: []string{name},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if !isNew {
			fmt.Fprintf(os.Stderr, "entry %d of %s was merged\n", i, name)
			return 1
		}
	}
	return 0
}

// letters spells n with the letters a-j for its digits.
func letters(n int) string {
	return strings.Map(func(r rune) rune { return 'a' + r - '0' }, strconv.Itoa(n))
}

// clock returns a Now that starts at start and advances a second a call.
func clock(start time.Time) func() time.Time {
	t := start.Add(-time.Second)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

var t0 = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)

func newLog(t *testing.T) *friction.Log {
	t.Helper()
	return newBenchLog(t, t.TempDir())
}

// newBenchLog is the friction log of a new workspace at dir, on files,
// its clock at t0.
func newBenchLog(t testing.TB, dir string) *friction.Log {
	t.Helper()
	ws, err := files.Init(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	// The tests begin with no log at all, not the empty one Init writes.
	if err := os.Remove(filepath.Join(dir, friction.File)); err != nil {
		t.Fatal(err)
	}
	l := friction.Open(ws, "test")
	l.Now = clock(t0)
	return l
}

// rootOf is the workspace root a log of newBenchLog keeps its file under.
func rootOf(l *friction.Log) string {
	return filepath.Dir(filepath.Dir(l.Storage.Name()))
}

func readFile(t *testing.T, l *friction.Log) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rootOf(l), friction.File))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, l *friction.Log, data string) {
	t.Helper()
	p := filepath.Join(rootOf(l), friction.File)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustAdd(t *testing.T, l *friction.Log, e friction.Entry) (friction.Entry, bool) {
	t.Helper()
	got, isNew, err := l.Add(context.Background(), e)
	if err != nil {
		t.Fatalf("Add(%+v): %v", e, err)
	}
	return got, isNew
}

func TestMissingLogIsEmpty(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	es, err := l.List(t.Context(), friction.Filter{})
	if err != nil || len(es) != 0 {
		t.Fatalf("List = %v, %v; want empty", es, err)
	}
	if _, err := l.Get(t.Context(), "friction_001"); !errors.Is(err, friction.ErrNotFound) {
		t.Errorf("Get on a missing log = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(rootOf(l), friction.File)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reading created the file: %v", err)
	}
}

func TestAddAssignsAndValidates(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	e, isNew := mustAdd(t, l, friction.Entry{
		ID: "friction_777", Status: friction.StatusApplied, Occurrences: -3,
		Type: friction.TypeWorkerFailure, Description: "  sandbox has no network  ",
		AffectedTasks: []string{"t2", "t1", "t2"}, Pattern: "No network", SuggestedAction: "Give the sandbox a proxy.",
	})
	want := friction.Entry{
		ID: "friction_001", Timestamp: t0, Type: friction.TypeWorkerFailure, Description: "sandbox has no network",
		Occurrences: 1, AffectedTasks: []string{"t1", "t2"}, Pattern: "No network",
		SuggestedAction: "Give the sandbox a proxy.", Status: friction.StatusPending,
	}
	if !isNew || !equalEntry(e, want) {
		t.Fatalf("Add = %+v (new %v), want %+v", e, isNew, want)
	}
	got, err := l.Get(t.Context(), "friction_001")
	if err != nil || !equalEntry(got, want) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	if err := schemas.Validate(schemas.KindFriction, readFile(t, l)); err != nil {
		t.Errorf("written log does not validate: %v", err)
	}

	bad := []struct {
		name string
		e    friction.Entry
	}{
		{"unknown type", friction.Entry{Type: "grumble", Description: "x"}},
		{"no type", friction.Entry{Description: "x"}},
		{"empty description", friction.Entry{Type: friction.TypeTimeout, Description: " \n "}},
		{"bad task id", friction.Entry{Type: friction.TypeTimeout, Description: "x", AffectedTasks: []string{"../etc"}}},
		{"empty task id", friction.Entry{Type: friction.TypeTimeout, Description: "x", AffectedTasks: []string{""}}},
	}
	before := readFile(t, l)
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := l.Add(context.Background(), tc.e); !errors.Is(err, friction.ErrInvalid) {
				t.Errorf("Add = %v, want ErrInvalid", err)
			}
		})
	}
	if after := readFile(t, l); string(after) != string(before) {
		t.Errorf("a refused Add changed the file")
	}
}

func equalEntry(a, b friction.Entry) bool {
	return a.ID == b.ID && a.Timestamp.Equal(b.Timestamp) && a.Type == b.Type && a.Description == b.Description &&
		a.Occurrences == b.Occurrences && slices.Equal(a.AffectedTasks, b.AffectedTasks) && a.Pattern == b.Pattern &&
		a.SuggestedAction == b.SuggestedAction && a.Status == b.Status
}

func TestAddDedup(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		first  friction.Entry
		second friction.Entry
		merged bool
	}{
		{"same pattern up to case and spacing", friction.Entry{Type: friction.TypeReviewerPattern, Description: "a", Pattern: "Missing tests."},
			friction.Entry{Type: friction.TypeReviewerPattern, Description: "b", Pattern: " missing   TESTS. "}, true},
		{"same description when no pattern", friction.Entry{Type: friction.TypeEscalation, Description: "Budget question 1"},
			friction.Entry{Type: friction.TypeEscalation, Description: "budget\tquestion  1"}, true},
		{"pattern digits count", friction.Entry{Type: friction.TypeWorkerFailure, Description: "a", Pattern: "probe-1"},
			friction.Entry{Type: friction.TypeWorkerFailure, Description: "a", Pattern: "probe-2"}, false},
		{"pattern punctuation counts", friction.Entry{Type: friction.TypeReviewerPattern, Description: "a", Pattern: "missing tests"},
			friction.Entry{Type: friction.TypeReviewerPattern, Description: "b", Pattern: "missing tests!"}, false},
		{"description digits count", friction.Entry{Type: friction.TypeEscalation, Description: "Budget question 1"},
			friction.Entry{Type: friction.TypeEscalation, Description: "budget question 2"}, false},
		{"pattern against description", friction.Entry{Type: friction.TypeEscalation, Description: "budget question"},
			friction.Entry{Type: friction.TypeEscalation, Description: "other words", Pattern: "Budget question"}, true},
		{"other type", friction.Entry{Type: friction.TypeReviewerPattern, Description: "a", Pattern: "missing tests"},
			friction.Entry{Type: friction.TypeWorkerFailure, Description: "a", Pattern: "missing tests"}, false},
		{"other pattern", friction.Entry{Type: friction.TypeReviewerPattern, Description: "a", Pattern: "missing tests"},
			friction.Entry{Type: friction.TypeReviewerPattern, Description: "a", Pattern: "missing docs"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t)
			tc.first.AffectedTasks = []string{"t2"}
			tc.second.AffectedTasks = []string{"t1", "t2"}
			mustAdd(t, l, tc.first)
			e, isNew := mustAdd(t, l, tc.second)
			es, _ := l.List(t.Context(), friction.Filter{})
			if tc.merged {
				if isNew || e.ID != "friction_001" || e.Occurrences != 2 || !slices.Equal(e.AffectedTasks, []string{"t1", "t2"}) || len(es) != 1 {
					t.Fatalf("merge gave %+v (new %v), %d entries", e, isNew, len(es))
				}
				if e.Description != strings.TrimSpace(tc.first.Description) {
					t.Errorf("merge replaced the description: %q", e.Description)
				}
			} else if !isNew || e.ID != "friction_002" || e.Occurrences != 1 || len(es) != 2 {
				t.Fatalf("second Add = %+v (new %v), %d entries; want a new entry", e, isNew, len(es))
			}
		})
	}
}

// TestGivenPatternsAreMatchedAsGiven: patterns a person gives differ by
// their digits; patterns the detectors derive from free text do not.
func TestGivenPatternsAreMatchedAsGiven(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	for i := 1; i <= 8; i++ {
		e, isNew := mustAdd(t, l, friction.Entry{Type: friction.TypeWorkerFailure, Description: "probe failed", Pattern: fmt.Sprintf("probe-%d", i)})
		if !isNew || e.Occurrences != 1 {
			t.Fatalf("probe-%d: %+v (new %v), want a new entry", i, e, isNew)
		}
	}
	if es, _ := l.List(ctx, friction.Filter{}); len(es) != 8 {
		t.Fatalf("%d entries after probe-1…probe-8, want 8", len(es))
	}

	// The same failures seen by the detector: the causes it derives its
	// pattern from differ only in digits, so they are one friction.
	cfg := friction.DefaultConfig()
	var tally friction.Tally
	for i, task := range []string{"t1", "t2", "t3", "t4"} {
		var fs []friction.Finding
		tally, fs = friction.Detect(tally, obs(friction.EventWorkFailed, task, nil, fmt.Sprintf("error=Probe %d timed out", i+1)), cfg)
		if _, err := l.Record(ctx, fs); err != nil {
			t.Fatal(err)
		}
	}
	es, err := l.List(ctx, friction.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 9 {
		t.Fatalf("%d entries, want the 8 given and one derived: %+v", len(es), es)
	}
	if d := es[8]; d.Pattern != "probe # timed out" || d.Occurrences != 4 || !slices.Equal(d.AffectedTasks, []string{"t1", "t2", "t3", "t4"}) {
		t.Fatalf("derived entry = %+v, want pattern %q over 4 occurrences in t1…t4", d, "probe # timed out")
	}
}

func TestResolvedEntriesAreNotMergedInto(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	mustAdd(t, l, friction.Entry{Type: friction.TypeEscalation, Description: "budget"})
	if _, err := l.Resolve(context.Background(), "friction_001", friction.StatusDismissed); err != nil {
		t.Fatal(err)
	}
	e, isNew := mustAdd(t, l, friction.Entry{Type: friction.TypeEscalation, Description: "Budget"})
	if !isNew || e.ID != "friction_002" {
		t.Fatalf("Add after dismissal = %+v (new %v), want friction_002", e, isNew)
	}
	e, isNew = mustAdd(t, l, friction.Entry{Type: friction.TypeEscalation, Description: "budget", SuggestedAction: "Set a budget."})
	if isNew || e.ID != "friction_002" || e.Occurrences != 2 || e.SuggestedAction != "Set a budget." {
		t.Fatalf("third Add = %+v (new %v), want friction_002 with 2 occurrences and the action filled in", e, isNew)
	}
}

func TestListFilterResolve(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	for i, typ := range []string{friction.TypeTimeout, friction.TypeEscalation, friction.TypeTimeout, friction.TypeWorkerFailure} {
		mustAdd(t, l, friction.Entry{Type: typ, Description: fmt.Sprintf("entry %c", 'a'+i)})
	}
	if e, err := l.Resolve(ctx, "friction_003", friction.StatusApplied); err != nil || e.Status != friction.StatusApplied {
		t.Fatalf("Resolve = %+v, %v", e, err)
	}
	if _, err := l.Resolve(ctx, "friction_004", friction.StatusDismissed); err != nil {
		t.Fatal(err)
	}
	ids := func(es []friction.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    friction.Filter
		want []string
	}{
		{"all", friction.Filter{}, []string{"friction_001", "friction_002", "friction_003", "friction_004"}},
		{"pending", friction.Filter{Status: friction.StatusPending}, []string{"friction_001", "friction_002"}},
		{"applied", friction.Filter{Status: friction.StatusApplied}, []string{"friction_003"}},
		{"timeouts", friction.Filter{Type: friction.TypeTimeout}, []string{"friction_001", "friction_003"}},
		{"pending timeouts", friction.Filter{Type: friction.TypeTimeout, Status: friction.StatusPending}, []string{"friction_001"}},
		{"none", friction.Filter{Type: friction.TypeReviewerPattern}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			es, err := l.List(ctx, tc.f)
			if err != nil || !slices.Equal(ids(es), tc.want) {
				t.Errorf("List(%+v) = %v, %v; want %v", tc.f, ids(es), err, tc.want)
			}
		})
	}
	for _, f := range []friction.Filter{{Status: "open"}, {Type: "grumble"}} {
		if _, err := l.List(ctx, f); !errors.Is(err, friction.ErrInvalid) {
			t.Errorf("List(%+v) = %v, want ErrInvalid", f, err)
		}
	}
	if _, err := l.Resolve(ctx, "friction_002", friction.StatusPending); !errors.Is(err, friction.ErrInvalid) {
		t.Errorf("Resolve to pending = %v, want ErrInvalid", err)
	}
	if _, err := l.Resolve(ctx, "friction_002", "done"); !errors.Is(err, friction.ErrInvalid) {
		t.Errorf("Resolve to done = %v, want ErrInvalid", err)
	}
	if _, err := l.Resolve(ctx, "friction_999", friction.StatusApplied); !errors.Is(err, friction.ErrNotFound) {
		t.Errorf("Resolve of a missing id = %v, want ErrNotFound", err)
	}
	if _, err := l.Get(ctx, "friction_999"); !errors.Is(err, friction.ErrNotFound) {
		t.Errorf("Get of a missing id = %v, want ErrNotFound", err)
	}
}

func TestIDsGrowPastThreeDigits(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	writeFile(t, l, `{"entries":[
 {"id":"friction_998","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"a","status":"pending"},
 {"id":"friction_007","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"b","status":"pending"}]}`)
	for i, want := range []string{"friction_999", "friction_1000", "friction_1001"} {
		e, _ := mustAdd(t, l, friction.Entry{Type: friction.TypeEscalation, Description: "entry " + letters(i)})
		if e.ID != want {
			t.Fatalf("id = %s, want %s", e.ID, want)
		}
	}
	// The hand-written entries without occurrences or tasks came back
	// whole: an empty task list, written as [], and the schema minimum.
	e, err := l.Get(t.Context(), "friction_007")
	if err != nil || e.AffectedTasks == nil || e.Description != "b" {
		t.Fatalf("Get = %+v, %v", e, err)
	}
}

func TestInvalidLogIsRefusedAndKept(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, data, mention string
	}{
		{"not json", `{"entries": [`, "friction.json"},
		{"entries missing", `{"items": []}`, "entries"},
		{"unknown type", `{"entries":[{"id":"friction_001","timestamp":"2024-01-15T10:00:00Z","type":"grumble","description":"a","status":"pending"}]}`, "type"},
		{"unknown status", `{"entries":[{"id":"friction_001","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"a","status":"open"}]}`, "status"},
		{"bad id", `{"entries":[{"id":"f1","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"a","status":"pending"}]}`, "id"},
		{"zero occurrences", `{"entries":[{"id":"friction_001","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"a","occurrences":0,"status":"pending"}]}`, "occurrences"},
		{"duplicate ids", `{"entries":[
 {"id":"friction_001","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"a","status":"pending"},
 {"id":"friction_001","timestamp":"2024-01-15T10:00:00Z","type":"timeout","description":"b","status":"pending"}]}`, "duplicate id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t)
			writeFile(t, l, tc.data)
			_, _, err := l.Add(context.Background(), friction.Entry{Type: friction.TypeTimeout, Description: "x"})
			if !errors.Is(err, friction.ErrCorrupt) {
				t.Fatalf("Add = %v, want ErrCorrupt", err)
			}
			for _, s := range []string{filepath.Join(rootOf(l), friction.File), tc.mention} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if _, err := l.List(t.Context(), friction.Filter{}); !errors.Is(err, friction.ErrCorrupt) {
				t.Errorf("List = %v, want ErrCorrupt", err)
			}
			if _, err := l.AnonymizeTasks(context.Background(), []string{"t1"}); !errors.Is(err, friction.ErrCorrupt) {
				t.Errorf("AnonymizeTasks = %v, want ErrCorrupt", err)
			}
			if got := string(readFile(t, l)); got != tc.data {
				t.Errorf("the invalid file was overwritten:\n%s", got)
			}
		})
	}
}

func TestLockTimeoutNamesTheHolder(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	lockPath := filepath.Join(rootOf(l), locking.LockPathFor(friction.File))
	if want := filepath.Join(rootOf(l), "friction", ".locks", "friction.json.lock"); lockPath != want {
		t.Fatalf("lock path %s, want %s", lockPath, want)
	}
	held, err := locking.Acquire(context.Background(), lockPath, locking.Options{Agent: "holder-agent"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	l.Timeout = 20 * time.Millisecond
	_, _, err = l.Add(context.Background(), friction.Entry{Type: friction.TypeTimeout, Description: "x"})
	if !errors.Is(err, locking.ErrLocked) || !strings.Contains(err.Error(), "holder-agent") {
		t.Fatalf("Add under a held lock = %v, want ErrLocked naming holder-agent", err)
	}
	if _, err := os.Stat(filepath.Join(rootOf(l), friction.File)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Add wrote the log: %v", err)
	}
}

func TestRecordDedupsIntoOccurrences(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	cfg := friction.DefaultConfig()
	var tally friction.Tally
	var touched [][]friction.Entry
	// The same review problem in four tasks, then another in one.
	for _, o := range []friction.Observation{
		obs(friction.EventReviewIssues, "t1", nil, "problems=Missing tests."),
		obs(friction.EventReviewIssues, "t2", nil, "problems=missing tests"),
		obs(friction.EventReviewIssues, "t3", nil, "problems=- Missing tests"),
		obs(friction.EventReviewIssues, "t4", nil, "problems=missing tests!\nvague plan"),
	} {
		var fs []friction.Finding
		tally, fs = friction.Detect(tally, o, cfg)
		es, err := l.Record(ctx, fs)
		if err != nil {
			t.Fatal(err)
		}
		touched = append(touched, es)
	}
	if len(touched[0]) != 0 || len(touched[1]) != 0 {
		t.Fatalf("entries before the threshold: %+v", touched[:2])
	}
	if len(touched[2]) != 1 || !touched[2][0].Timestamp.Equal(t0) || touched[2][0].Occurrences != 3 {
		t.Fatalf("at the threshold: %+v, want one entry of 3 occurrences", touched[2])
	}
	es, err := l.List(ctx, friction.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("%d entries, want 1: %+v", len(es), es)
	}
	e := es[0]
	if e.Type != friction.TypeReviewerPattern || e.Pattern != "missing tests" || e.Occurrences != 4 ||
		!slices.Equal(e.AffectedTasks, []string{"t1", "t2", "t3", "t4"}) || e.Status != friction.StatusPending {
		t.Fatalf("entry = %+v", e)
	}

	// Escalations whose reasons normalise alike merge; the entry list
	// comes back once.
	var fs []friction.Finding
	for _, o := range []friction.Observation{
		obs(friction.EventEscalated, "t5", nil, "reason=Budget over 1000."),
		obs(friction.EventEscalated, "t6", nil, "reason=budget over 20"),
	} {
		var f []friction.Finding
		tally, f = friction.Detect(tally, o, cfg)
		fs = append(fs, f...)
	}
	got, err := l.Record(ctx, fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "friction_002" || got[0].Occurrences != 2 || !slices.Equal(got[0].AffectedTasks, []string{"t5", "t6"}) {
		t.Fatalf("Record = %+v", got)
	}

	// A bad finding refuses the whole batch.
	before := readFile(t, l)
	_, err = l.Record(ctx, []friction.Finding{{Type: friction.TypeEscalation, TaskID: "t7", Description: "z"}, {Type: "nope", Description: "z"}})
	if !errors.Is(err, friction.ErrInvalid) {
		t.Fatalf("Record with a bad type = %v, want ErrInvalid", err)
	}
	if string(readFile(t, l)) != string(before) {
		t.Errorf("a refused Record changed the file")
	}
}

func TestRecordOnceReportsATimeoutOnce(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	started := t0
	items := []workspace.InProgress{{TaskID: "t1", SubtaskID: "st_1", Complexity: "low", StartedAt: started}}
	var counts []int
	for _, now := range []time.Time{started.Add(31 * time.Minute), started.Add(45 * time.Minute), started.Add(5 * time.Hour)} {
		es, err := l.Record(ctx, friction.DetectTimeouts(items, now, friction.Config{}))
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(es))
	}
	if !slices.Equal(counts, []int{1, 0, 0}) {
		t.Fatalf("entries touched per scan = %v, want [1 0 0]", counts)
	}
	// The retry starts again and overruns again: one more occurrence.
	items[0].StartedAt = started.Add(6 * time.Hour)
	es, err := l.Record(ctx, friction.DetectTimeouts(items, started.Add(7*time.Hour), friction.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].ID != "friction_001" || es[0].Occurrences != 2 {
		t.Fatalf("after the retry: %+v", es)
	}
}

func TestObservePersistsTheTally(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	cfg := friction.DefaultConfig()
	// Each call is a fresh Log on the same root, as after a restart.
	observe := func(o friction.Observation) []friction.Entry {
		t.Helper()
		fresh := &friction.Log{Storage: l.Storage, Now: l.Now}
		es, err := fresh.Observe(ctx, []friction.Observation{o}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	if es := observe(obs(friction.EventWorkFailed, "t1", []string{"st_1", "w1"}, "error=disk full on /dev/sda1")); len(es) != 0 {
		t.Fatalf("first failure recorded %+v", es)
	}
	tally, err := l.Tally(ctx)
	if err != nil || tally.Failures["disk full on /dev/sda#"].Count != 1 {
		t.Fatalf("stored tally = %+v, %v", tally, err)
	}
	es := observe(obs(friction.EventOutputRejected, "t2", nil, "reason=Disk full on /dev/sda2.", "agent=w2"))
	if len(es) != 1 || es[0].Type != friction.TypeWorkerFailure || es[0].Occurrences != 2 || !slices.Equal(es[0].AffectedTasks, []string{"t1", "t2"}) {
		t.Fatalf("second failure recorded %+v", es)
	}
	// Several observations in one call, one write.
	es, err = l.Observe(ctx, []friction.Observation{
		obs(friction.EventPlanRevisionNeeded, "t3", nil, "revision_count=1"),
		obs(friction.EventPlanRevisionNeeded, "t3", nil, "revision_count=2"),
		obs(friction.EventEscalated, "t3", nil, "reason=needs approval", "agent=po"),
		obs("task_created", "t3", nil),
	}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range es {
		types = append(types, e.Type)
	}
	if !slices.Equal(types, []string{friction.TypeRepeatedRevision, friction.TypeEscalation}) {
		t.Fatalf("touched types = %v", types)
	}
	// The revision was reported once for t3: a third revision adds nothing.
	if es := observe(obs(friction.EventPlanRevisionNeeded, "t3", nil, "revision_count=3")); len(es) != 0 {
		t.Fatalf("third revision recorded %+v", es)
	}
	// Events that change nothing do not rewrite the file.
	before, _ := os.Stat(filepath.Join(rootOf(l), friction.File))
	beforeData := readFile(t, l)
	if es := observe(obs("task_created", "t9", nil)); len(es) != 0 {
		t.Fatal(es)
	}
	after, _ := os.Stat(filepath.Join(rootOf(l), friction.File))
	if !os.SameFile(before, after) || string(beforeData) != string(readFile(t, l)) {
		t.Errorf("an observation without findings or tally change rewrote the file")
	}
}

func TestAnonymizeTasks(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	cfg := friction.DefaultConfig()
	for _, o := range []friction.Observation{
		obs(friction.EventReviewIssues, "task-a", nil, "problems=missing tests", "review=r1"),
		obs(friction.EventReviewIssues, "task-b", nil, "problems=missing tests", "review=r1"),
		obs(friction.EventReviewIssues, "task-a", nil, "problems=missing tests", "review=r2"),
		obs(friction.EventPlanRevisionNeeded, "task-a", nil, "revision_count=2"),
	} {
		if _, err := l.Observe(ctx, []friction.Observation{o}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(t, l, friction.Entry{Type: friction.TypeEscalation, Description: "task-a. needs task-ab and xtask-a", AffectedTasks: []string{"task-ab"}})
	anonA := friction.AnonymizeID("task-a")
	if !strings.HasPrefix(anonA, "anon_") || len(anonA) != len("anon_")+12 || friction.AnonymizeID("task-a") != anonA || friction.AnonymizeID("task-b") == anonA {
		t.Fatalf("AnonymizeID(task-a) = %q", anonA)
	}

	n, err := l.AnonymizeTasks(ctx, []string{"task-a", "gone"})
	if err != nil || n != 3 {
		t.Fatalf("AnonymizeTasks = %d, %v; want 3 entries changed", n, err)
	}
	data := string(readFile(t, l))
	for _, s := range []string{`"task-a"`, "task-a/", "task-a "} {
		if strings.Contains(data, s) {
			t.Errorf("the log still holds %q:\n%s", s, data)
		}
	}
	es, _ := l.List(ctx, friction.Filter{})
	if got := es[0].AffectedTasks; !slices.Equal(got, slices.Sorted(slices.Values([]string{anonA, "task-b"}))) {
		t.Errorf("reviewer entry tasks = %v", got)
	}
	if got := es[1].Description; !strings.Contains(got, anonA) {
		t.Errorf("revision description = %q, want %s in it", got, anonA)
	}
	if got, want := es[2].Description, anonA+". needs task-ab and xtask-a"; got != want {
		t.Errorf("escalation description = %q, want %q", got, want)
	}
	tally, _ := l.Tally(ctx)
	c := tally.Problems["missing tests"]
	if !slices.Equal(c.Tasks, slices.Sorted(slices.Values([]string{anonA, "task-b"}))) || !slices.Equal(c.Reviews, slices.Sorted(slices.Values([]string{anonA + "/r1", anonA + "/r2", "task-b/r1"}))) {
		t.Errorf("tally count = %+v", c)
	}
	if _, ok := tally.Tasks["task-a"]; ok || !slices.Contains(tally.Tasks[anonA].Reported, "revision:plan") {
		t.Errorf("tally tasks = %+v", tally.Tasks)
	}

	// Idempotent: again, or with the anonymised ids, changes nothing.
	before := readFile(t, l)
	for _, ids := range [][]string{{"task-a"}, {anonA}, nil} {
		if n, err := l.AnonymizeTasks(ctx, ids); err != nil || n != 0 {
			t.Errorf("AnonymizeTasks(%v) again = %d, %v", ids, n, err)
		}
	}
	if string(readFile(t, l)) != string(before) {
		t.Errorf("a repeated AnonymizeTasks changed the file")
	}
	// A missing log stays missing.
	if n, err := newLog(t).AnonymizeTasks(ctx, []string{"x"}); err != nil || n != 0 {
		t.Errorf("AnonymizeTasks on a missing log = %d, %v", n, err)
	}
}

func TestGoldenFile(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	ctx := context.Background()
	cfg := friction.DefaultConfig()
	mustAdd(t, l, friction.Entry{
		Type: friction.TypeEscalation, Description: "Budget <over> & above: a \"human\" call.",
		AffectedTasks: []string{"t2", "t1"}, SuggestedAction: "Set a budget rule in the coordinator's prompt.",
	})
	for _, o := range []friction.Observation{
		obs(friction.EventReviewIssues, "t1", nil, "problems=Missing tests.\nplan is vague", "review=plan_v1"),
		obs(friction.EventReviewIssues, "t2", nil, "problems=missing tests", "review=plan_v1"),
		obs(friction.EventReviewIssues, "t3", nil, "problems=- missing tests", "review=plan_v2"),
		obs(friction.EventPlanRevisionNeeded, "t3", nil, "revision_count=2", "plan_id=p3", "reviewer=critic"),
		obs(friction.EventWorkFailed, "t3", []string{"st_1", "w1"}, "error=exit status 137"),
	} {
		if _, err := l.Observe(ctx, []friction.Observation{o}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Record(ctx, friction.DetectTimeouts([]workspace.InProgress{{TaskID: "t3", SubtaskID: "st_2", Complexity: "high", StartedAt: t0}}, t0.Add(9*time.Hour), cfg)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resolve(ctx, "friction_001", friction.StatusApplied); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, l)
	golden := filepath.Join("testdata", "friction.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	// Canonical means byte-for-byte: the file is meant to be diffed.
	if string(got) != string(want) {
		t.Errorf("friction.json differs from %s (go test -update rewrites it):\n%s", golden, got)
	}
	if err := schemas.Validate(schemas.KindFriction, got); err != nil {
		t.Errorf("golden log does not validate: %v", err)
	}
}

func TestConcurrentAddFromProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	l := newLog(t)
	cmds := make([]*exec.Cmd, childProcs)
	outs := make([]*strings.Builder, childProcs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChildRoot+"="+rootOf(l), envChildName+"=proc-"+letters(i))
		outs[i] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	es, err := l.List(t.Context(), friction.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != childProcs*childAdds {
		t.Fatalf("%d entries, want %d", len(es), childProcs*childAdds)
	}
	ids := map[string]bool{}
	descs := map[string]bool{}
	for i, e := range es {
		if want := fmt.Sprintf("friction_%03d", i+1); e.ID != want {
			t.Errorf("entry %d has id %s, want %s", i, e.ID, want)
		}
		ids[e.ID] = true
		descs[e.Description] = true
	}
	if len(ids) != len(es) || len(descs) != len(es) {
		t.Errorf("%d unique ids and %d unique descriptions in %d entries", len(ids), len(descs), len(es))
	}
}

func TestLogRefusesSpecialFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"symlink", func(t *testing.T, path string) {
			other := filepath.Join(filepath.Dir(path), "other.json")
			if err := os.WriteFile(other, []byte(`{"entries":[]}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("other.json", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skip(err)
			}
		}},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLog(t)
			path := filepath.Join(rootOf(l), friction.File)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.make(t, path)
			if _, err := l.List(t.Context(), friction.Filter{}); !errors.Is(err, friction.ErrCorrupt) {
				t.Errorf("List = %v, want ErrCorrupt", err)
			}
			if _, _, err := l.Add(context.Background(), friction.Entry{Type: friction.TypeTimeout, Description: "x"}); !errors.Is(err, friction.ErrCorrupt) {
				t.Errorf("Add = %v, want ErrCorrupt", err)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode().IsRegular() {
				t.Errorf("the special file was replaced: %v, %v", fi, err)
			}
		})
	}
}

func TestAChangeByAnotherWriterIsValidatedAgain(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	mustAdd(t, l, friction.Entry{Type: friction.TypeTimeout, Description: "x"})
	if _, err := l.List(t.Context(), friction.Filter{}); err != nil {
		t.Fatal(err)
	}
	// Another writer (an agent in another language) breaks the file.
	writeFile(t, l, strings.Replace(string(readFile(t, l)), `"timeout"`, `"slowness"`, 1))
	if _, err := l.List(t.Context(), friction.Filter{}); !errors.Is(err, friction.ErrCorrupt) || !strings.Contains(err.Error(), "type") {
		t.Fatalf("List after a bad external write = %v, want ErrCorrupt about the type", err)
	}
}

func TestConcurrentAddFromGoroutines(t *testing.T) {
	t.Parallel()
	l := newLog(t)
	l.Now = nil
	const workers, adds = 4, 10
	errs := make(chan error, workers*adds)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range adds {
				_, _, err := l.Add(context.Background(), friction.Entry{Type: friction.TypeTimeout, Description: "g" + letters(w) + " " + letters(i)})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if es, err := l.List(t.Context(), friction.Filter{}); err != nil || len(es) != workers*adds {
		t.Fatalf("List = %d entries, %v; want %d", len(es), err, workers*adds)
	}
}

func TestDetectResultSharesNoMemory(t *testing.T) {
	t.Parallel()
	in, _ := friction.Detect(friction.Tally{}, obs(friction.EventReviewIssues, "t1", nil, "problems=missing tests", "review=r1"), friction.DefaultConfig())
	in, _ = friction.Detect(in, obs(friction.EventPlanRevisionNeeded, "t1", nil), friction.DefaultConfig())
	out, _ := friction.Detect(in, obs(friction.EventReviewIssues, "t2", nil, "problems=missing tests", "review=r1"), friction.DefaultConfig())
	c := out.Problems["missing tests"]
	c.Tasks[0] = "changed"
	out.Tasks["t1"].Revisions["plan"] = 99
	if in.Problems["missing tests"].Tasks[0] != "t1" || in.Tasks["t1"].Revisions["plan"] != 1 {
		t.Fatalf("changing Detect's result changed its input: %+v", in)
	}
}
