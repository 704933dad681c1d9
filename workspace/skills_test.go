package workspace

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/schemas"
)

const gridsSkill = "---\ndescription: Reading ARC grids: rows, columns, colours 0-9\ntags: [grids, arc]\nmodes: [analysis]\n---\n# Grids\n\nRead row by row.\n"

func TestParseSkill(t *testing.T) {
	long := "---\ndescription: x\n" + strings.Repeat("tags: []\n", 0) + "modes: [" + strings.Repeat("m,", 3000) + "m]\n---\n"
	tests := []struct {
		name  string
		in    string
		want  Skill  // checked when wantErr is ""
		err   string // substring of the error
		ptr   string // the first schema problem's pointer, when the schema refuses
		isErr error
	}{
		{name: "plain", in: gridsSkill, want: Skill{Description: "Reading ARC grids: rows, columns, colours 0-9", Tags: []string{"grids", "arc"}, Modes: []string{"analysis"}, Body: "# Grids\n\nRead row by row.\n"}},
		{name: "description only", in: "---\ndescription: Core rules\n---\nBe brief.\n", want: Skill{Description: "Core rules", Tags: []string{}, Modes: []string{}, Body: "Be brief.\n"}},
		{name: "no body, no final newline", in: "---\ndescription: d\n---", want: Skill{Description: "d", Tags: []string{}, Modes: []string{}}},
		{name: "byte-order mark and CRLF", in: "\ufeff---\r\ndescription: d\r\ntags: [a]\r\n---\r\nbody\r\n", want: Skill{Description: "d", Tags: []string{"a"}, Modes: []string{}, Body: "body\r\n"}},
		{name: "blank lines and empty lists", in: "---\n\ndescription: d\ntags: []\nmodes: [ ]\n\n---\n", want: Skill{Description: "d", Tags: []string{}, Modes: []string{}}},
		{name: "quoted description", in: "---\ndescription: \"[WIP] grids: \\\"hard\\\"\"\n---\n", want: Skill{Description: `[WIP] grids: "hard"`, Tags: []string{}, Modes: []string{}}},
		{name: "dashes later in the body", in: "---\ndescription: d\n---\n---\nnot front matter\n---\n", want: Skill{Description: "d", Tags: []string{}, Modes: []string{}, Body: "---\nnot front matter\n---\n"}},
		{name: "unicode description", in: "---\ndescription: Grilles «α→β»\n---\n", want: Skill{Description: "Grilles «α→β»", Tags: []string{}, Modes: []string{}}},

		{name: "empty file", in: "", err: "line 1: the file is empty", isErr: ErrInvalid},
		{name: "no front matter", in: "# Grids\n", err: `line 1: "# Grids" is not "---"`, isErr: ErrInvalid},
		{name: "yaml document marker with text", in: "--- \ndescription: d\n---\n", err: "line 1:"},
		{name: "no closing line", in: "---\ndescription: d\n", err: `no closing "---" line`},
		{name: "no closing line, no newline", in: "---\ndescription: d", err: `no closing "---" line`},
		{name: "indented line", in: "---\ndescription: d\n  tags: [a]\n---\n", err: "line 3: \"  tags: [a]\" is indented"},
		{name: "not key value", in: "---\ndescription: d\njust words\n---\n", err: "line 3: \"just words\" is not a key: value line"},
		{name: "upper-case key", in: "---\nDescription: d\n---\n", err: "line 2:"},
		{name: "key with space", in: "---\nde scription: d\n---\n", err: "line 2:"},
		{name: "duplicate key", in: "---\ndescription: d\ndescription: e\n---\n", err: "line 3: description is given twice"},
		{name: "list not closed", in: "---\ndescription: d\ntags: [a, b\n---\n", err: "line 3: the list of tags does not end with \"]\""},
		{name: "empty list item", in: "---\ndescription: d\ntags: [a,,b]\n---\n", err: "line 3: the list of tags has an empty item"},
		{name: "bad quoted string", in: "---\ndescription: \"open\n---\n", err: "line 2: the quoted description is not one JSON string"},
		{name: "non-UTF-8 front matter", in: "---\ndescription: \xff\n---\n", err: "line 2: not UTF-8 text"},
		{name: "non-UTF-8 body", in: "---\ndescription: d\n---\n\xff\xfe", err: "the body is not UTF-8 text"},
		{name: "front matter too long", in: "---\ndescription: d\n" + strings.Repeat("\n", SkillFrontMatterMaxBytes) + "---\n", err: "within the first 4,096 bytes"},
		{name: "list too long for the front matter", in: long, err: "within the first 4,096 bytes"},
		{name: "file too large", in: "---\ndescription: d\n---\n" + strings.Repeat("x", SkillMaxBytes), err: "over the 262,144-byte limit"},

		{name: "missing description", in: "---\ntags: [a]\n---\n", err: "required", ptr: ""},
		{name: "empty description", in: "---\ndescription:\n---\n", err: "minLength", ptr: "/description"},
		{name: "control character in description", in: "---\ndescription: \"a\\u0007b\"\n---\n", err: "pattern", ptr: "/description"},
		{name: "unknown key", in: "---\ndescription: d\ntag: [grids]\n---\n", err: "additionalProperties", ptr: ""},
		{name: "tags not a list", in: "---\ndescription: d\ntags: grids\n---\n", err: "type", ptr: "/tags"},
		{name: "description a list", in: "---\ndescription: [a]\n---\n", err: "type", ptr: "/description"},
		{name: "tag with a space", in: "---\ndescription: d\ntags: [two words]\n---\n", err: "pattern", ptr: "/tags/0"},
		{name: "nested list", in: "---\ndescription: d\ntags: [[a]]\n---\n", err: "pattern", ptr: "/tags/0"},
		{name: "path-like tag", in: "---\ndescription: d\nmodes: [../../etc]\n---\n", err: "pattern", ptr: "/modes/0"},
		{name: "repeated tag", in: "---\ndescription: d\ntags: [a, a]\n---\n", err: "uniqueItems", ptr: "/tags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSkill([]byte(tc.in))
			if tc.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				tc.want.Size = int64(len(tc.in))
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %+v\nwant %+v", got, tc.want)
				}
				// What ComposeSkill writes reads back the same.
				again, err := ParseSkill(got.File())
				if err != nil || again.Description != got.Description || !reflect.DeepEqual(again.Tags, got.Tags) || !reflect.DeepEqual(again.Modes, got.Modes) || again.Body != got.Body {
					t.Fatalf("compose round trip: %+v, %v", again, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %q lacks %q", err, tc.err)
			}
			var se *schemas.Error
			if errors.As(err, &se) != (tc.ptr != "" || tc.err == "required" || tc.err == "additionalProperties") {
				t.Errorf("schema error %v: got %v", tc.ptr, err)
			} else if se != nil && se.Problems[0].Pointer != tc.ptr {
				t.Errorf("pointer %q, want %q", se.Problems[0].Pointer, tc.ptr)
			}
			if HintOf(err) == "" {
				t.Errorf("no hint on %v", err)
			}
		})
	}
}

func FuzzParseSkill(f *testing.F) {
	for _, s := range []string{gridsSkill, "", "---\n---\n", "---\ndescription: \"\\u00e9\"\ntags: []\n---\n", "\ufeff---\r\ndescription: d\r\n---\r\n", "---\ndescription: d\ntags: [a,,]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSkill(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || HintOf(err) == "" && !strings.Contains(err.Error(), "limit") && !strings.Contains(err.Error(), "body") {
				t.Fatalf("error without kind or hint: %v", err)
			}
			return
		}
		if s.Description == "" || s.Tags == nil || s.Modes == nil || s.Size != int64(len(data)) {
			t.Fatalf("accepted a skill without its fields: %+v", s)
		}
		// The head alone (what a context reads to choose) agrees.
		head := data
		if len(head) > SkillFrontMatterMaxBytes+3 {
			head = head[:SkillFrontMatterMaxBytes+3]
		}
		meta, _, err := parseFrontMatter(head, len(head) == len(data))
		if err != nil || meta.Description != s.Description {
			t.Fatalf("head parse disagrees: %+v %v", meta, err)
		}
		again, err := ParseSkill(s.File())
		if err != nil || again.Description != s.Description || again.Body != s.Body {
			t.Fatalf("compose round trip: %+v %v", again, err)
		}
	})
}

// The model's own cutText and groupDigits (its skill messages use them) are
// held to the same table as the context's.
func TestCutText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii", "abcdef", 3, "abc…"},
		{"inside a rune", "aé", 2, "a…"},
		{"after a rune", "aéb", 3, "aé…"},
		{"trailing space trimmed", "ab cd", 3, "ab…"},
		{"three-byte rune", "x→y", 3, "x…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CutText(tc.in, tc.max); got != tc.want {
				t.Errorf("CutText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2500: "2,500", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := GroupDigits(in); got != want {
			t.Errorf("GroupDigits(%d) = %q, want %q", in, got, want)
		}
	}
}
