package friction_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/friction"
	"github.com/workspaced/workspaced/workspace"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"only punctuation", " ...!? ", ""},
		{"lower case", "Missing Tests", "missing tests"},
		{"whitespace collapsed", "  missing \t\n tests  ", "missing tests"},
		{"trailing punctuation", "missing tests.", "missing tests"},
		{"surrounding quotes and brackets", `"(missing tests)"`, "missing tests"},
		{"inner punctuation kept", "don't use os.exit", "don't use os.exit"},
		{"digits to hash", "line 12 is wrong", "line # is wrong"},
		{"digit run is one hash", "step 2024 and 7", "step # and #"},
		{"digits inside words", "outputs/st_13.json missing", "outputs/st_#.json missing"},
		{"dash bullet", "- missing tests", "missing tests"},
		{"star bullet", "* Missing tests", "missing tests"},
		{"numbered list", "3. missing tests", "missing tests"},
		{"numbered list paren", "(2) missing tests", "missing tests"},
		{"numbered paren", "2) missing tests", "missing tests"},
		{"leading number not a marker", "12 tests fail", "# tests fail"},
		{"hash kept at the start", "#3: flaky", "##: flaky"},
		{"unicode", "  Ünïcode   PROBLEM… ", "ünïcode problem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := friction.Normalize(tc.in)
			if got != tc.want {
				t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := friction.Normalize(got); again != got {
				t.Errorf("Normalize is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func FuzzNormalizeIdempotent(f *testing.F) {
	for _, s := range []string{"", "- 1. a", "#3: x", "(2) y.", "Ünï 12 ??"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := friction.Normalize(s)
		if friction.Normalize(n) != n {
			t.Fatalf("Normalize(%q) = %q, but Normalize(%q) = %q", s, n, n, friction.Normalize(n))
		}
	})
}

// obs builds an observation from "key=value" attrs.
func obs(event, task string, args []string, kv ...string) friction.Observation {
	o := friction.Observation{At: time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC), TaskID: task, Event: event, Args: args, Attrs: map[string]string{}}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		o.Attrs[k] = v
	}
	return o
}

// want is the part of a Finding a detector table checks.
type want struct {
	typ, task, pattern string
	tasks              []string
	occ                int
}

func summarize(fs []friction.Finding) []want {
	var out []want
	for _, f := range fs {
		out = append(out, want{f.Type, f.TaskID, f.Pattern, f.Tasks, f.Occurrences})
	}
	return out
}

func TestDetect(t *testing.T) {
	t.Parallel()
	cfg := friction.DefaultConfig()
	issues := func(task, review string, problems ...string) friction.Observation {
		kv := []string{"problems=" + strings.Join(problems, "\n"), "type=plan_review", "reviewer=critic"}
		if review != "" {
			kv = append(kv, "review="+review)
		}
		return obs(friction.EventReviewIssues, task, nil, kv...)
	}
	type step struct {
		obs  friction.Observation
		want []want // findings expected after this observation
	}
	cases := []struct {
		name  string
		cfg   friction.Config
		steps []step
	}{
		{
			name: "revision below the limit is quiet",
			steps: []step{
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=1", "plan_id=p1"), nil},
			},
		},
		{
			name: "revision at the limit is found once per task",
			steps: []step{
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=1"), nil},
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=2"), []want{{friction.TypeRepeatedRevision, "t1", "plan sent back for revision 2+ times", nil, 0}}},
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=3"), nil},
				{obs(friction.EventPlanRevisionNeeded, "t2", nil, "revision_count=5"), []want{{friction.TypeRepeatedRevision, "t2", "plan sent back for revision 2+ times", nil, 0}}},
			},
		},
		{
			name: "revision without a count is counted from the events",
			steps: []step{
				{obs(friction.EventPlanRevisionNeeded, "t1", nil), nil},
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=oops"), []want{{friction.TypeRepeatedRevision, "t1", "plan sent back for revision 2+ times", nil, 0}}},
			},
		},
		{
			name: "checkpoint revisions are their own pattern",
			steps: []step{
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=2"), []want{{friction.TypeRepeatedRevision, "t1", "plan sent back for revision 2+ times", nil, 0}}},
				{obs(friction.EventCheckpointRevisionNeeded, "t1", nil, "revision_count=2"), []want{{friction.TypeRepeatedRevision, "t1", "checkpoint sent back for revision 2+ times", nil, 0}}},
			},
		},
		{
			name: "revision limit from the config",
			cfg:  friction.Config{RevisionLimit: 4},
			steps: []step{
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=3"), nil},
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=4"), []want{{friction.TypeRepeatedRevision, "t1", "plan sent back for revision 4+ times", nil, 0}}},
			},
		},
		{
			name: "reviewer pattern at N-1 is quiet, at N names every task, later adds one",
			steps: []step{
				{issues("t1", "", "Missing tests."), nil},
				{issues("t2", "", "- missing   TESTS"), nil},
				{issues("t3", "", "missing tests"), []want{{friction.TypeReviewerPattern, "t3", "missing tests", []string{"t1", "t2", "t3"}, 3}}},
				{issues("t4", "", "Missing tests!"), []want{{friction.TypeReviewerPattern, "t4", "missing tests", nil, 1}}},
			},
		},
		{
			name: "reviewer pattern counts reviews, not tasks",
			steps: []step{
				{issues("t1", "", "no error handling"), nil},
				{issues("t1", "", "No error handling"), nil},
				{issues("t1", "", "no error handling."), []want{{friction.TypeReviewerPattern, "t1", "no error handling", []string{"t1"}, 3}}},
			},
		},
		{
			name: "one review repeating a problem counts once",
			steps: []step{
				{issues("t1", "", "missing tests", "Missing tests."), nil},
				{issues("t2", "", "missing tests"), nil},
				{issues("t3", "", "missing tests"), []want{{friction.TypeReviewerPattern, "t3", "missing tests", []string{"t1", "t2", "t3"}, 3}}},
			},
		},
		{
			name: "a review seen twice under its id counts once",
			steps: []step{
				{issues("t1", "r1", "missing tests"), nil},
				{issues("t1", "r1", "missing tests"), nil},
				{issues("t2", "r1", "missing tests"), nil},
				{issues("t3", "r1", "missing tests"), []want{{friction.TypeReviewerPattern, "t3", "missing tests", []string{"t1", "t2", "t3"}, 3}}},
			},
		},
		{
			name: "digits do not split a problem",
			steps: []step{
				{issues("t1", "", "Line 12 is too long"), nil},
				{issues("t2", "", "line 7 is too long"), nil},
				{issues("t3", "", "line 300 is too long."), []want{{friction.TypeReviewerPattern, "t3", "line # is too long", []string{"t1", "t2", "t3"}, 3}}},
			},
		},
		{
			name: "different problems are counted apart",
			steps: []step{
				{issues("t1", "", "missing tests", "vague plan"), nil},
				{issues("t2", "", "missing tests", "vague plan"), nil},
				{issues("t3", "", "vague plan", "", "  "), []want{{friction.TypeReviewerPattern, "t3", "vague plan", []string{"t1", "t2", "t3"}, 3}}},
				{issues("t4", "", "missing tests"), []want{{friction.TypeReviewerPattern, "t4", "missing tests", []string{"t1", "t2", "t4"}, 3}}},
			},
		},
		{
			name: "revision events do not count as reviews",
			steps: []step{
				{obs(friction.EventPlanRevisionNeeded, "t1", nil, "revision_count=1", "issues=missing tests"), nil},
				{obs(friction.EventCheckpointRevisionNeeded, "t2", nil, "revision_count=1", "issues=missing tests"), nil},
				{issues("t3", "", "missing tests"), nil},
			},
		},
		{
			name: "worker failures at N-1 are quiet, at N name every task",
			steps: []step{
				{obs(friction.EventWorkFailed, "t1", []string{"st_1", "w1"}, "error=API key missing for service 3"), nil},
				{obs(friction.EventOutputRejected, "t2", nil, "reason=api key missing for service 4.", "agent=w2"), []want{{friction.TypeWorkerFailure, "t2", "api key missing for service #", []string{"t1", "t2"}, 2}}},
				{obs(friction.EventWorkFailed, "t3", []string{"st_9", "w1"}, "error=API key missing for service 5"), []want{{friction.TypeWorkerFailure, "t3", "api key missing for service #", nil, 1}}},
			},
		},
		{
			name: "different failure causes are counted apart",
			steps: []step{
				{obs(friction.EventWorkFailed, "t1", []string{"st_1", "w1"}, "error=timeout talking to the sandbox"), nil},
				{obs(friction.EventWorkFailed, "t1", []string{"st_2", "w1"}, "error=disk full"), nil},
			},
		},
		{
			name: "failures without a cause share one",
			steps: []step{
				{obs(friction.EventWorkFailed, "t1", []string{"st_1"}), nil},
				{obs(friction.EventOutputRejected, "t2", nil, "reason= "), []want{{friction.TypeWorkerFailure, "t2", "no cause given", []string{"t1", "t2"}, 2}}},
			},
		},
		{
			name: "failure repeats from the config",
			cfg:  friction.Config{FailureRepeats: 3},
			steps: []step{
				{obs(friction.EventWorkFailed, "t1", nil, "error=boom"), nil},
				{obs(friction.EventWorkFailed, "t1", nil, "error=boom"), nil},
				{obs(friction.EventWorkFailed, "t2", nil, "error=Boom!"), []want{{friction.TypeWorkerFailure, "t2", "boom", []string{"t1", "t2"}, 3}}},
			},
		},
		{
			name: "every escalation is found",
			steps: []step{
				{obs(friction.EventEscalated, "t1", nil, "reason=Needs a human decision on budget", "agent=po"), []want{{friction.TypeEscalation, "t1", "needs a human decision on budget", nil, 0}}},
				{obs(friction.EventEscalated, "t2", nil, "agent=po"), []want{{friction.TypeEscalation, "t2", "no reason given", nil, 0}}},
			},
		},
		{
			name: "other events and a missing task are ignored",
			steps: []step{
				{obs("work_completed", "t1", []string{"st_1"}, "error=boom"), nil},
				{obs(friction.EventEscalated, "", nil, "reason=x"), nil},
				{obs(friction.EventWorkFailed, "", nil, "error=boom"), nil},
				{obs(friction.EventWorkFailed, "t1", nil, "error=boom"), nil},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.cfg != (friction.Config{}) {
				c = tc.cfg
			}
			var tally friction.Tally
			for i, s := range tc.steps {
				before, _ := json.Marshal(tally)
				next, fs := friction.Detect(tally, s.obs, c)
				after, _ := json.Marshal(tally)
				if string(before) != string(after) {
					t.Fatalf("step %d: Detect modified its input tally:\n%s\n%s", i, before, after)
				}
				if got := summarize(fs); !reflect.DeepEqual(got, s.want) {
					t.Fatalf("step %d (%s %s): findings\n got  %+v\n want %+v", i, s.obs.Event, s.obs.TaskID, got, s.want)
				}
				for _, f := range fs {
					if f.Description == "" || f.SuggestedAction == "" {
						t.Errorf("step %d: finding without description or action: %+v", i, f)
					}
					// Patterns taken from free text are stored normalised;
					// the fixed revision pattern keeps its digits.
					if f.Type != friction.TypeRepeatedRevision && friction.Normalize(f.Pattern) != f.Pattern {
						t.Errorf("step %d: pattern %q is not normalised", i, f.Pattern)
					}
				}
				tally = next
			}
		})
	}
}

func TestDetectSurvivesATallyRoundTrip(t *testing.T) {
	t.Parallel()
	// The tally is stored in friction.json between daemon runs: a
	// threshold crossed across a restart must still be found.
	var tally friction.Tally
	cfg := friction.DefaultConfig()
	for _, task := range []string{"t1", "t2"} {
		tally, _ = friction.Detect(tally, obs(friction.EventReviewIssues, task, nil, "problems=missing tests"), cfg)
		data, err := json.Marshal(tally)
		if err != nil {
			t.Fatal(err)
		}
		tally = friction.Tally{}
		if err := json.Unmarshal(data, &tally); err != nil {
			t.Fatal(err)
		}
	}
	_, fs := friction.Detect(tally, obs(friction.EventReviewIssues, "t3", nil, "problems=Missing tests."), cfg)
	if len(fs) != 1 || fs[0].Occurrences != 3 || !slices.Equal(fs[0].Tasks, []string{"t1", "t2", "t3"}) {
		t.Fatalf("findings after restart = %+v, want one of 3 occurrences over t1..t3", fs)
	}
}

func TestDetectTimeouts(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 1, 15, 20, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	ip := func(task, sub, complexity string, at time.Time) workspace.InProgress {
		return workspace.InProgress{TaskID: task, SubtaskID: sub, Complexity: complexity, StartedAt: at}
	}
	cases := []struct {
		name  string
		cfg   friction.Config
		item  workspace.InProgress
		want  string // pattern, "" for no finding
		check string // a substring of the description
	}{
		{"low within", friction.Config{}, ip("t1", "st_1", "low", ago(30*time.Minute)), "", ""},
		{"low over", friction.Config{}, ip("t1", "st_1", "low", ago(30*time.Minute+time.Second)), "subtask of low complexity in progress over 30m0s", "st_1"},
		{"medium within", friction.Config{}, ip("t1", "st_2", "medium", ago(2*time.Hour)), "", ""},
		{"medium over", friction.Config{}, ip("t1", "st_2", "medium", ago(2*time.Hour+time.Nanosecond)), "subtask of medium complexity in progress over 2h0m0s", "over the 2h allowed"},
		{"high within", friction.Config{}, ip("t1", "st_3", "high", ago(8*time.Hour)), "", ""},
		{"high over", friction.Config{}, ip("t1", "st_3", "high", ago(9*time.Hour+12*time.Minute)), "subtask of high complexity in progress over 8h0m0s", "for 9h12m, over the 8h allowed"},
		{"unknown complexity counts as medium", friction.Config{}, ip("t1", "st_4", "epic", ago(3*time.Hour)), "subtask of medium complexity in progress over 2h0m0s", "medium"},
		{"empty complexity counts as medium", friction.Config{}, ip("t1", "st_4", "", ago(90*time.Minute)), "", ""},
		{"complexity case-insensitive", friction.Config{}, ip("t1", "st_5", " HIGH ", ago(3*time.Hour)), "", ""},
		{"configured low", friction.Config{TimeoutLow: 10 * time.Minute}, ip("t1", "st_6", "low", ago(11*time.Minute)), "subtask of low complexity in progress over 10m0s", ""},
		{"zero start skipped", friction.Config{}, ip("t1", "st_7", "low", time.Time{}), "", ""},
		{"no task skipped", friction.Config{}, ip("", "st_7", "low", ago(24*time.Hour)), "", ""},
		{"start in the future", friction.Config{}, ip("t1", "st_8", "low", now.Add(time.Hour)), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := friction.DetectTimeouts([]workspace.InProgress{tc.item}, now, tc.cfg)
			if tc.want == "" {
				if len(fs) != 0 {
					t.Fatalf("got %+v, want no finding", fs)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("got %d findings, want 1", len(fs))
			}
			f := fs[0]
			if f.Type != friction.TypeTimeout || f.TaskID != tc.item.TaskID || f.Pattern != tc.want {
				t.Errorf("got %s/%s/%q, want timeout/%s/%q", f.Type, f.TaskID, f.Pattern, tc.item.TaskID, tc.want)
			}
			if !strings.Contains(f.Description, tc.check) || f.SuggestedAction == "" {
				t.Errorf("description %q lacks %q (action %q)", f.Description, tc.check, f.SuggestedAction)
			}
			if wantOnce := fmt.Sprintf("timeout:%s@%s", tc.item.SubtaskID, tc.item.StartedAt.UTC().Format(time.RFC3339Nano)); f.Once != wantOnce {
				t.Errorf("Once = %q, want %q", f.Once, wantOnce)
			}
		})
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	if got := (friction.Config{}).WithDefaults(); got != friction.DefaultConfig() {
		t.Errorf("zero config = %+v, want %+v", got, friction.DefaultConfig())
	}
	c := friction.Config{RevisionLimit: 5, ReviewerRepeats: -1, TimeoutHigh: time.Hour}
	got := c.WithDefaults()
	want := friction.DefaultConfig()
	want.RevisionLimit, want.TimeoutHigh = 5, time.Hour
	if got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
}
