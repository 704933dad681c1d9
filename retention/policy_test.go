package retention

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/workspaced/workspaced/vocab"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// policyNow is the fixed instant every policy case is decided at.
var policyNow = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// ago renders the instant d before policyNow as RFC 3339 with nanoseconds.
func ago(d time.Duration) string { return policyNow.Add(-d).Format(time.RFC3339Nano) }

func finished(id, status string, age time.Duration) TaskInfo {
	return TaskInfo{ID: id, Status: status, CompletedAt: ago(age)}
}

// goldenDecision is a Decision as stored in a golden file: the age is
// written as a Go duration so the files read well.
type goldenDecision struct {
	TaskID string `json:"task_id"`
	Action Action `json:"action"`
	Reason string `json:"reason"`
	Age    string `json:"age"`
}

func TestDecideGolden(t *testing.T) {
	t.Parallel()
	def := DefaultPolicy()
	cases := []struct {
		name   string
		policy Policy
		tasks  []TaskInfo
		// want is the actions in task order, checked besides the golden
		// so a careless -update cannot bless a wrong verdict.
		want []Action
	}{
		{
			name:   "full_boundary",
			policy: def,
			tasks: []TaskInfo{
				finished("a_just_under_7d", vocab.StatusCompleted, 7*Day-time.Nanosecond),
				finished("b_exactly_7d", vocab.StatusCompleted, 7*Day),
				finished("c_just_over_7d", vocab.StatusCompleted, 7*Day+time.Nanosecond),
			},
			want: []Action{Keep, Summarize, Summarize},
		},
		{
			name:   "summary_boundary",
			policy: def,
			tasks: []TaskInfo{
				finished("a_just_under_30d", vocab.StatusCompleted, 30*Day-time.Nanosecond),
				finished("b_exactly_30d", vocab.StatusCompleted, 30*Day),
				finished("c_just_over_30d", vocab.StatusCompleted, 30*Day+time.Nanosecond),
			},
			want: []Action{Summarize, Remove, Remove},
		},
		{
			name:   "active_any_age",
			policy: def,
			tasks: []TaskInfo{
				{ID: "a_planning_old", Status: vocab.StatusPlanning, CompletedAt: ago(400 * Day)},
				{ID: "b_executing_old", Status: vocab.StatusExecuting, CompletedAt: ago(40 * Day)},
				{ID: "c_executing_new", Status: vocab.StatusExecuting},
				{ID: "d_no_state", CompletedAt: ago(100 * Day)},
				{ID: "e_unknown_status", Status: "paused", CompletedAt: ago(100 * Day)},
			},
			want: []Action{Keep, Keep, Keep, Keep, Keep},
		},
		{
			name:   "failed_and_cancelled",
			policy: def,
			tasks: []TaskInfo{
				finished("a_failed_1d", vocab.StatusFailed, Day),
				finished("b_failed_10d", vocab.StatusFailed, 10*Day),
				finished("c_failed_31d", vocab.StatusFailed, 31*Day),
				finished("d_cancelled_1d", vocab.StatusCancelled, Day),
				finished("e_cancelled_10d", vocab.StatusCancelled, 10*Day),
				finished("f_cancelled_31d", vocab.StatusCancelled, 31*Day),
			},
			want: []Action{Keep, Summarize, Remove, Keep, Summarize, Remove},
		},
		{
			name:   "completed_at_missing_or_malformed",
			policy: def,
			tasks: []TaskInfo{
				{ID: "a_missing", Status: vocab.StatusCompleted},
				{ID: "b_blank", Status: vocab.StatusFailed, CompletedAt: "  "},
				{ID: "c_not_a_time", Status: vocab.StatusCompleted, CompletedAt: "yesterday"},
				{ID: "d_date_only", Status: vocab.StatusCancelled, CompletedAt: "2024-01-01"},
				{ID: "e_no_zone", Status: vocab.StatusCompleted, CompletedAt: "2024-01-01T10:00:00"},
				{ID: "f_state_unreadable", StateErr: "invalid character 'x' looking for beginning of value"},
			},
			want: []Action{Keep, Keep, Keep, Keep, Keep, Keep},
		},
		{
			name:   "clock_skew",
			policy: def,
			tasks: []TaskInfo{
				finished("a_future_1ns", vocab.StatusCompleted, -time.Nanosecond),
				finished("b_future_1y", vocab.StatusCompleted, -365*Day),
				finished("c_now", vocab.StatusCompleted, 0),
			},
			want: []Action{Keep, Keep, Keep},
		},
		{
			name:   "any_rfc3339_offset",
			policy: def,
			tasks: []TaskInfo{
				// 8 days before policyNow, written in +02:00 without fraction.
				{ID: "a_offset_8d", Status: vocab.StatusCompleted, CompletedAt: policyNow.Add(-8 * Day).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)},
				{ID: "b_lowercase_z", Status: vocab.StatusCompleted, CompletedAt: "2024-01-01t00:00:00z"},
			},
			want: []Action{Summarize, Remove},
		},
		{
			name:   "already_summarised",
			policy: def,
			tasks: []TaskInfo{
				{ID: "a_summarised_3d", Status: vocab.StatusCompleted, CompletedAt: ago(3 * Day), Summarized: true},
				{ID: "b_summarised_10d", Status: vocab.StatusCompleted, CompletedAt: ago(10 * Day), Summarized: true},
				{ID: "c_summarised_30d", Status: vocab.StatusCompleted, CompletedAt: ago(30 * Day), Summarized: true},
				{ID: "d_summarised_active", Status: vocab.StatusExecuting, Summarized: true},
			},
			want: []Action{Keep, Keep, Remove, Keep},
		},
		{
			name:   "no_summary_stage",
			policy: Policy{FullDays: 5, SummaryDays: 5},
			tasks: []TaskInfo{
				finished("a_4d", vocab.StatusCompleted, 4*Day),
				finished("b_5d", vocab.StatusCompleted, 5*Day),
			},
			want: []Action{Keep, Remove},
		},
		{
			name:   "summarise_at_once",
			policy: Policy{FullDays: 0, SummaryDays: 1},
			tasks: []TaskInfo{
				finished("a_0", vocab.StatusCompleted, 0),
				finished("b_1d", vocab.StatusCompleted, Day),
			},
			want: []Action{Summarize, Remove},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Validate(tc.policy); err != nil {
				t.Fatalf("policy %+v: %v", tc.policy, err)
			}
			// Apply sorts by id: feed the tasks reversed to check it.
			in := make([]TaskInfo, len(tc.tasks))
			for i, task := range tc.tasks {
				in[len(in)-1-i] = task
			}
			got := Apply(in, tc.policy, policyNow)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d decisions, want %d", len(got), len(tc.want))
			}
			gold := make([]goldenDecision, len(got))
			for i, d := range got {
				if d.TaskID != tc.tasks[i].ID {
					t.Errorf("decision %d is for %q, want %q (sorted by id)", i, d.TaskID, tc.tasks[i].ID)
				}
				if d.Action != tc.want[i] {
					t.Errorf("%s: action %s (%s), want %s", d.TaskID, d.Action, d.Reason, tc.want[i])
				}
				if d.Reason == "" {
					t.Errorf("%s: empty reason", d.TaskID)
				}
				if single := Decide(tc.tasks[i], tc.policy, policyNow); single != d {
					t.Errorf("%s: Decide %+v differs from Apply %+v", d.TaskID, single, d)
				}
				gold[i] = goldenDecision{TaskID: d.TaskID, Action: d.Action, Reason: d.Reason, Age: d.Age.String()}
			}
			checkGolden(t, filepath.Join("testdata", "policy", tc.name+".golden"), gold)
		})
	}
}

// checkGolden compares v, as JSON, structurally with the golden file, or
// rewrites the file under -update.
func checkGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	var gv, wv any
	if err := json.Unmarshal(got, &gv); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wv); err != nil {
		t.Fatalf("golden %s: %v", path, err)
	}
	if !reflect.DeepEqual(gv, wv) {
		t.Errorf("%s differs from golden (run with -update if intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestPolicyValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		p    Policy
		ok   bool
	}{
		{"default", DefaultPolicy(), true},
		{"zero_policy", Policy{}, false},
		{"negative_full", Policy{FullDays: -1, SummaryDays: 30}, false},
		{"summary_below_full", Policy{FullDays: 10, SummaryDays: 9}, false},
		{"equal", Policy{FullDays: 9, SummaryDays: 9}, true},
		{"full_zero", Policy{FullDays: 0, SummaryDays: 1}, true},
		{"summary_zero", Policy{FullDays: 0, SummaryDays: 0}, false},
		{"max", Policy{FullDays: MaxDays, SummaryDays: MaxDays}, true},
		{"over_max", Policy{FullDays: 1, SummaryDays: MaxDays + 1}, false},
		{"history_keep_one", Policy{FullDays: 7, SummaryDays: 30, HistoryKeep: 1}, true},
		{"history_keep_zero_is_default", Policy{FullDays: 7, SummaryDays: 30}, true},
		{"negative_history_keep", Policy{FullDays: 7, SummaryDays: 30, HistoryKeep: -1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.p)
			if tc.ok && err != nil {
				t.Fatalf("Validate(%+v) = %v, want nil", tc.p, err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Validate(%+v) = %v, want ErrInvalidPolicy", tc.p, err)
			}
		})
	}
}

// TestFormatAge: ages read as people write them, truncated so that an age
// shown below a limit is below it.
func TestFormatAge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		age  time.Duration
		want string
	}{
		{2*time.Minute + 24*time.Second + 601583968, "2m24s"},
		{999 * time.Millisecond, "0s"},
		{5*time.Hour + 3*time.Minute + 10*time.Second + 900*time.Millisecond, "5h3m10s"},
		{3 * time.Hour, "3h"},
		{7 * Day, "7d0h"},
		{7*Day - time.Nanosecond, "6d23h59m"},
		{30*Day + 5*time.Hour + 20*time.Second, "30d5h"},
	} {
		if got := formatAge(c.age); got != c.want {
			t.Errorf("formatAge(%v) = %q, want %q", c.age, got, c.want)
		}
	}
}
