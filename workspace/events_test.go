package workspace

import (
	"reflect"
	"testing"
	"time"
)

func TestEventFormatParse(t *testing.T) {
	at := time.Date(2024, 1, 15, 10, 0, 0, 123_000_000, time.UTC)
	cases := []struct {
		name string
		ev   Event
		line string
	}{
		{"bare", Event{Time: at, Name: "task_created", TaskID: "t1"}, "2024-01-15T10:00:00.123Z task_created t1"},
		{"args and attrs", Event{Time: at, Name: "work_assigned", TaskID: "t1", Args: []string{"st_1", "worker_1"}, Attrs: map[string]string{"key": "arc", "agent": "solver"}},
			"2024-01-15T10:00:00.123Z work_assigned t1 st_1 worker_1 agent=solver key=arc"},
		{"quoted values", Event{Time: at, Name: "output_rejected", TaskID: "t1", Attrs: map[string]string{"reason": `output file "x" is missing`}},
			`2024-01-15T10:00:00.123Z output_rejected t1 reason="output file \"x\" is missing"`},
		{"empty and equals", Event{Time: at, Name: "e", TaskID: "t1", Args: []string{"", "a=b"}, Attrs: map[string]string{"v": ""}},
			`2024-01-15T10:00:00.123Z e t1 "" "a=b" v=""`},
		{"newline", Event{Time: at, Name: "e", TaskID: "t1", Args: []string{"two\nlines"}}, `2024-01-15T10:00:00.123Z e t1 "two\nlines"`},
		{"odd attr key", Event{Time: at, Name: "e", TaskID: "t1", Attrs: map[string]string{"a b": "c", "=": "d"}},
			`2024-01-15T10:00:00.123Z e t1 "="=d "a b"=c`},
		{"invalid utf8", Event{Time: at, Name: "e", TaskID: "t1", Args: []string{"a\xffb"}}, `2024-01-15T10:00:00.123Z e t1 "a\xffb"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line := FormatEvent(tc.ev)
			if line != tc.line {
				t.Errorf("FormatEvent = %s\nwant          %s", line, tc.line)
			}
			back, err := ParseEvent(line)
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if !reflect.DeepEqual(back, tc.ev) {
				t.Errorf("round trip = %#v, want %#v", back, tc.ev)
			}
		})
	}
}

func TestParseEventHandWritten(t *testing.T) {
	e, err := ParseEvent("2024-01-15T10:00:00+02:00 note t1 x k=a=b")
	if err != nil {
		t.Fatal(err)
	}
	if e.Attrs["k"] != "a=b" || len(e.Args) != 1 || !e.Time.Equal(time.Date(2024, 1, 15, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("ParseEvent = %+v", e)
	}
}

func TestParseEventRefuses(t *testing.T) {
	for name, line := range map[string]string{
		"too few words":   "2024-01-15T10:00:00Z only",
		"bad time":        "yesterday e t1",
		"open quote":      `2024-01-15T10:00:00Z e t1 "abc`,
		"attr as name":    "2024-01-15T10:00:00Z k=v t1",
		"attr as task id": "2024-01-15T10:00:00Z e k=v",
	} {
		t.Run(name, func(t *testing.T) {
			if e, err := ParseEvent(line); err == nil {
				t.Errorf("ParseEvent(%q) = %+v, want an error", line, e)
			}
		})
	}
}

// TestFormatEventAround: the line around an attribute's value is the
// line of every bare value put there, whatever the other words hold
// (quoted ones that contain the attribute's own name and '=' among
// them), and the line without the attribute has nothing around it.
func TestFormatEventAround(t *testing.T) {
	at := time.Date(2026, 11, 29, 21, 0, 0, 123e6, time.UTC)
	events := []Event{
		MemoryEvent("stored", Namespace{"users", "42"}, "prefs", "planner", 1, at),
		MemoryEvent("stored", Namespace{"a version=1", "ü"}, "key with \"quotes\"", "x=y", 1, at),
		{Time: at, Name: "memory_stored", TaskID: "t1", Args: []string{"version=1"}, Attrs: map[string]string{"version": "1", "zz": "version=1", "a": " version=1"}},
	}
	for _, e := range events {
		head, tail := FormatEventAround(e, "version")
		for _, v := range []string{"1", "2", "9", "10", "123456789"} {
			e.Attrs["version"] = v
			if got, want := head+v+tail, FormatEvent(e); got != want {
				t.Errorf("around version %s:\n got %q\nwant %q", v, got, want)
			}
		}
	}
	e := MemoryEvent("deleted", Namespace{"n"}, "k", "a", 0, at)
	if head, tail := FormatEventAround(e, "version"); head != "" || tail != FormatEvent(e) {
		t.Errorf("no version attribute: head %q tail %q, want \"\" and the line", head, tail)
	}
}
