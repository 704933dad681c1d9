package vocab

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

var idRE = regexp.MustCompile(IDPattern)

func TestValidID(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"one letter", "a", true},
		{"one digit", "7", true},
		{"all classes", "Task_1.b-2", true},
		{"128 bytes", strings.Repeat("a", 128), true},
		{"129 bytes", strings.Repeat("a", 129), false},
		{"empty", "", false},
		{"leading dot", ".a", false},
		{"leading dash", "-a", false},
		{"leading underscore", "_a", false},
		{"slash", "a/b", false},
		{"space", "a b", false},
		{"control byte", "a\x01b", false},
		{"non-ASCII letter", "é", false},
		{"invalid UTF-8", "a\xffb", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidID(tc.id); got != tc.want {
				t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
			}
			if got := idRE.MatchString(tc.id); got != tc.want {
				t.Errorf("IDPattern matches %q = %v, want %v", tc.id, got, tc.want)
			}
			err := ValidateID("task id", tc.id)
			if (err == nil) != tc.want {
				t.Errorf("ValidateID(%q) = %v, want valid %v", tc.id, err, tc.want)
			}
			if err != nil && !errors.Is(err, ErrInvalidID) {
				t.Errorf("ValidateID(%q) = %v, does not match ErrInvalidID", tc.id, err)
			}
		})
	}
}

func TestValidateIDMessage(t *testing.T) {
	err := ValidateID("task id", "a b")
	if got, want := err.Error(), `task id "a b": not a valid id`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	err = ValidateID("agent id", strings.Repeat("x", 41)+"/")
	if got, want := err.Error(), `agent id "`+strings.Repeat("x", 40)+`…": not a valid id`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

// FuzzValidID checks the hand-written ValidID against IDPattern itself.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", ".a", strings.Repeat("z", 128), strings.Repeat("z", 129), "a\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidID(id), idRE.MatchString(id); got != want {
			t.Errorf("ValidID(%q) = %v, IDPattern says %v", id, got, want)
		}
	})
}

func TestStatuses(t *testing.T) {
	tests := []struct {
		status           string
		finished, active bool
	}{
		{StatusPlanning, false, true},
		{StatusExecuting, false, true},
		{StatusCompleted, true, false},
		{StatusFailed, true, false},
		{StatusCancelled, true, false},
		{"", false, false},
		{"in_progress", false, false},
		{"Completed", false, false},
	}
	for _, tc := range tests {
		if got := Finished(tc.status); got != tc.finished {
			t.Errorf("Finished(%q) = %v, want %v", tc.status, got, tc.finished)
		}
		if got := Active(tc.status); got != tc.active {
			t.Errorf("Active(%q) = %v, want %v", tc.status, got, tc.active)
		}
	}
}

func TestDuration(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{250 * time.Millisecond, "250ms"},
		{1500*time.Millisecond + 3*time.Microsecond, "1.5s"},
		{30 * time.Second, "30s"},
		{time.Minute, "1m"},
		{107*time.Second + 400*time.Millisecond, "1m47s"},
		{2*time.Hour + 30*time.Minute, "2h30m"},
		{24 * time.Hour, "24h"},
		{time.Hour + 5*time.Second, "1h0m5s"},
		{-90 * time.Second, "-1m30s"},
		{800 * time.Microsecond, "800µs"},
	}
	for _, c := range cases {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(c.d), got, c.want)
		}
	}
}
