package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/workspaced/workspaced/schemas"
)

// SkillsDir holds the skills, one Markdown file skills/<name>.md each.
const SkillsDir = "skills"

// BufferMaxBytes caps what one buffer may hydrate: a file or an entry
// value larger than this is refused (listed in Omitted) rather than read
// into a context, whatever the budget.
const BufferMaxBytes = 256 << 10

// SkillMaxBytes caps a skill file: a larger one is refused, never read.
const SkillMaxBytes = BufferMaxBytes

// SkillFrontMatterMaxBytes bounds the front matter: its closing "---"
// line must end within the first 4 KiB of the file.
const SkillFrontMatterMaxBytes = 4 << 10

// SkillFormatHint says how a skill file begins, for errors about one.
const SkillFormatHint = `a skill begins with a front matter: a line "---", then "description: one line", ` +
	`"tags: [a, b]" and "modes: [m]" lines, then a line "---"; the Markdown body follows`

// Skill is one skill: its name (the file name without .md), its front
// matter, its size in bytes and, when read whole, its Markdown body.
type Skill struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Modes       []string `json:"modes"`
	Size        int64    `json:"size"`
	Body        string   `json:"body,omitempty"`
}

// RefusedSkill is a file of skills/ that is not a usable skill, and why.
type RefusedSkill struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// SkillMeta is a skill's front matter.
type SkillMeta struct {
	Description string   `json:"description"`
	Tags        []string `json:"tags,omitempty"`
	Modes       []string `json:"modes,omitempty"`
}

// SkillFile is the path of a skill, relative to the root.
func SkillFile(name string) string { return path.Join(SkillsDir, name+".md") }

// ParseSkill reads a whole skill file: its front matter, checked against
// the skill schema, and its body, which must be UTF-8 text. The file is at
// most SkillMaxBytes. The front matter is strict:
//
//	---
//	description: Reading ARC grids: rows, columns, colours 0-9
//	tags: [grids, arc]
//	modes: [analysis]
//	---
//
// Each line between the two "---" lines is blank or "key: value" with the
// key at the start of the line; a value in [brackets] is a list of
// comma-separated words, a value in "double quotes" is a JSON string, any
// other value is the text up to the end of the line. description is
// required; tags and modes are optional; no other key is allowed, and no
// key twice. A byte-order mark and CRLF line ends are accepted. A refused
// file is an error of kind ErrInvalid whose message names the line, or
// which wraps the *schemas.Error listing every problem. A NUL byte is
// refused anywhere in the file: a database keeps a skill in a text column,
// which cannot hold one, so every store refuses it alike.
func ParseSkill(data []byte) (Skill, error) {
	if len(data) > SkillMaxBytes {
		return Skill{}, &Error{Kind: ErrInvalid, Op: "skill", Msg: fmt.Sprintf("is %s bytes, over the %s-byte limit", GroupDigits(len(data)), GroupDigits(SkillMaxBytes)),
			Hint: "split it into smaller skills"}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return Skill{}, &Error{Kind: ErrInvalid, Op: "skill", Msg: fmt.Sprintf("holds a NUL character at byte %d", i),
			Hint: "skills are Markdown text: remove the NUL"}
	}
	meta, start, err := parseFrontMatter(data, true)
	if err != nil {
		return Skill{}, err
	}
	body := data[start:]
	if !utf8.Valid(body) {
		return Skill{}, &Error{Kind: ErrInvalid, Op: "skill", Msg: "the body is not UTF-8 text", Hint: "save the skill as UTF-8 text"}
	}
	return Skill{Description: meta.Description, Tags: nonNil(meta.Tags), Modes: nonNil(meta.Modes), Size: int64(len(data)), Body: string(body)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// frontMatterErr is a front matter refused at a line (0: the whole).
func frontMatterErr(line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg = fmt.Sprintf("line %d: %s", line, msg)
	}
	return &Error{Kind: ErrInvalid, Op: "skill front matter", Msg: msg, Hint: SkillFormatHint}
}

// parseFrontMatter reads the front matter at the start of data and returns
// it with the offset of the body. complete says data is the whole file;
// when it is only the head, the closing line must end inside it.
func parseFrontMatter(data []byte, complete bool) (SkillMeta, int, error) {
	pos := 0
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		pos = 3
	}
	limit := pos + SkillFrontMatterMaxBytes
	tooLong := frontMatterErr(0, "no closing \"---\" line within the first %s bytes", GroupDigits(SkillFrontMatterMaxBytes))
	fields := map[string]any{}
	for line := 1; ; line++ {
		if pos >= len(data) {
			switch {
			case !complete:
				return SkillMeta{}, 0, tooLong
			case line == 1:
				return SkillMeta{}, 0, frontMatterErr(1, "the file is empty")
			}
			return SkillMeta{}, 0, frontMatterErr(0, "no closing \"---\" line")
		}
		raw, next := data[pos:], len(data)
		if end := bytes.IndexByte(raw, '\n'); end >= 0 {
			raw, next = raw[:end], pos+end+1
		} else if !complete {
			return SkillMeta{}, 0, tooLong
		}
		if next > limit {
			return SkillMeta{}, 0, tooLong
		}
		raw = bytes.TrimSuffix(raw, []byte("\r"))
		if !utf8.Valid(raw) {
			return SkillMeta{}, 0, frontMatterErr(line, "not UTF-8 text")
		}
		text := string(raw)
		switch {
		case line == 1 && text != "---":
			return SkillMeta{}, 0, frontMatterErr(1, "%s is not \"---\": a skill begins with its front matter", quoteShort(text))
		case line == 1:
		case text == "---":
			meta, err := checkFrontMatter(fields)
			return meta, next, err
		default:
			if err := frontMatterLine(fields, line, text); err != nil {
				return SkillMeta{}, 0, err
			}
		}
		pos = next
	}
}

// frontMatterLine adds one "key: value" line to fields.
func frontMatterLine(fields map[string]any, line int, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if text[0] == ' ' || text[0] == '\t' {
		return frontMatterErr(line, "%s is indented: the front matter is flat key: value lines", quoteShort(text))
	}
	key, value, ok := strings.Cut(text, ":")
	if !ok || !isFrontMatterKey(key) {
		return frontMatterErr(line, "%s is not a key: value line", quoteShort(text))
	}
	if _, dup := fields[key]; dup {
		return frontMatterErr(line, "%s is given twice", key)
	}
	value = strings.TrimSpace(value)
	switch {
	case strings.HasPrefix(value, "["):
		if !strings.HasSuffix(value, "]") {
			return frontMatterErr(line, "the list of %s does not end with \"]\"", key)
		}
		inner := strings.TrimSpace(value[1 : len(value)-1])
		items := []any{}
		if inner != "" {
			for _, it := range strings.Split(inner, ",") {
				it = strings.TrimSpace(it)
				if it == "" {
					return frontMatterErr(line, "the list of %s has an empty item", key)
				}
				items = append(items, it)
			}
		}
		fields[key] = items
	case strings.HasPrefix(value, `"`):
		var s string
		if err := json.Unmarshal([]byte(value), &s); err != nil {
			return frontMatterErr(line, "the quoted %s is not one JSON string", key)
		}
		fields[key] = s
	default:
		fields[key] = value
	}
	return nil
}

func isFrontMatterKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checkFrontMatter validates the fields against the skill schema.
func checkFrontMatter(fields map[string]any) (SkillMeta, error) {
	doc, err := json.Marshal(fields)
	if err != nil {
		return SkillMeta{}, frontMatterErr(0, "%v", err)
	}
	if err := schemas.Validate(schemas.KindSkill, doc); err != nil {
		var se *schemas.Error
		if errors.As(err, &se) {
			msg := se.Problems[0].String()
			if n := len(se.Problems) - 1; n > 0 {
				msg += fmt.Sprintf(" (and %d more)", n)
			}
			err = &schemaProblems{msg: msg, err: se}
		}
		return SkillMeta{}, &Error{Kind: ErrInvalid, Op: "skill front matter", Err: err, Hint: SkillFormatHint}
	}
	var m SkillMeta
	if err := json.Unmarshal(doc, &m); err != nil {
		return SkillMeta{}, frontMatterErr(0, "%v", err)
	}
	return m, nil
}

// schemaProblems is a front matter the schema refused: it reads as its
// first problem, and unwraps to the *schemas.Error listing them all.
type schemaProblems struct {
	msg string
	err *schemas.Error
}

func (p *schemaProblems) Error() string { return p.msg }

func (p *schemaProblems) Unwrap() error { return p.err }

// ErrorMsg is the part of a workspace error worth a one-line reason.
func ErrorMsg(err error) string {
	var e *Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Op == "skill front matter" {
		return "front matter: " + msg
	}
	if msg == "" {
		return err.Error()
	}
	return msg
}

// quoteShort quotes s for a message, cut to 40 bytes.
func quoteShort(s string) string {
	return fmt.Sprintf("%q", CutText(s, 40))
}

// File renders the skill as its file is written: front matter, then body.
func (s Skill) File() []byte {
	return ComposeSkill(SkillMeta{Description: s.Description, Tags: s.Tags, Modes: s.Modes}, s.Body)
}

// ComposeSkill renders a skill file from its front matter and body; the
// result parses back to the same meta and body. A description that would
// not read back as itself bare is written as a JSON string.
func ComposeSkill(meta SkillMeta, body string) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	d := meta.Description
	if d == "" || d != strings.TrimSpace(d) || strings.HasPrefix(d, "[") || strings.HasPrefix(d, `"`) || strings.ContainsAny(d, "\r\n") {
		var q bytes.Buffer
		enc := json.NewEncoder(&q)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(d)
		d = strings.TrimSuffix(q.String(), "\n")
	}
	fmt.Fprintf(&b, "description: %s\n", d)
	if len(meta.Tags) > 0 {
		fmt.Fprintf(&b, "tags: [%s]\n", strings.Join(meta.Tags, ", "))
	}
	if len(meta.Modes) > 0 {
		fmt.Fprintf(&b, "modes: [%s]\n", strings.Join(meta.Modes, ", "))
	}
	b.WriteString("---\n")
	b.WriteString(body)
	return b.Bytes()
}

// AddSkillRequest is what AddSkill takes.
type AddSkillRequest struct {
	Name string
	// Data is the whole skill file, front matter first.
	Data []byte
	// Replace allows overwriting an existing skill.
	Replace bool
	// Agent is recorded as the lock holder.
	Agent string
}

// CutText cuts s to at most max bytes at a UTF-8 boundary and appends "…"
// when it cut anything.
func CutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

// GroupDigits writes n with thousands separators: 2500 → "2,500".
func GroupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
