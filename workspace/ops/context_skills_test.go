package ops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files"
)

const gridsSkill = "---\ndescription: Reading ARC grids: rows, columns, colours 0-9\ntags: [grids, arc]\nmodes: [analysis]\n---\n# Grids\n\nRead row by row.\n"

// skillFixture is provFixture with a skills/ directory: core, grids (tags
// grids, arc; mode analysis), colours (tag colours), review (mode review),
// planning (mode planning, tag grids).
func skillFixture(t testing.TB) *files.Store {
	t.Helper()
	w := provFixture(t)
	for name, text := range map[string]string{
		"core":     "---\ndescription: Rules for every agent\n---\nSay what you did and what you did not do.\n",
		"grids":    gridsSkill,
		"colours":  "---\ndescription: The ten ARC colours\ntags: [Colours]\n---\n0 black, 1 blue, 2 red.\n",
		"review":   "---\ndescription: How to review\nmodes: [review]\n---\nRead everything twice.\n",
		"planning": "---\ndescription: How to plan a grid task\ntags: [grids]\nmodes: [planning]\n---\nList the cells first.\n",
	} {
		writeSkill(t, w, name, text)
	}
	return w
}

func writeSkill(t testing.TB, w *files.Store, name, text string) {
	t.Helper()
	dir := filepath.Join(w.Dir(), workspace.SkillsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPickSkills(t *testing.T) {
	t.Parallel()
	avail := []workspace.Skill{
		{Name: "colours", Tags: []string{"Colours"}},
		{Name: "core"},
		{Name: "grids", Tags: []string{"grids", "arc"}, Modes: []string{"analysis"}},
		{Name: "planning", Tags: []string{"grids"}, Modes: []string{"planning"}},
		{Name: "review", Modes: []string{"review"}},
	}
	tests := []struct {
		name    string
		avail   []workspace.Skill
		refused map[string]string
		thread  workspace.Thread
		card    []string
		want    []string // name: why | reason
	}{
		{name: "core only", avail: avail, thread: workspace.Thread{To: "observer"}, want: []string{"core: every thread"}},
		{name: "no skills at all", thread: workspace.Thread{To: "observer", SkillTags: []string{"grids"}, PrimaryMode: "analysis"}, want: nil},
		{name: "by mode", avail: avail, thread: workspace.Thread{To: "observer", PrimaryMode: "review"}, want: []string{"core: every thread", "review: mode review"}},
		{name: "by tag, case aside", avail: avail, thread: workspace.Thread{To: "observer", SkillTags: []string{"COLOURS"}}, want: []string{"core: every thread", "colours: tag Colours"}},
		{name: "tag and mode overlap: loaded once", avail: avail, thread: workspace.Thread{To: "observer", SkillTags: []string{"arc", "grids"}, PrimaryMode: "analysis"},
			want: []string{"core: every thread", "grids: mode analysis and tags grids, arc", "planning: tag grids"}},
		{name: "card skills first, in card order", avail: avail, thread: workspace.Thread{To: "observer", SkillTags: []string{"grids"}}, card: []string{"review", "grids", "core"},
			want: []string{"core: every thread and every thread of observer", "review: every thread of observer", "grids: every thread of observer and tag grids", "planning: tag grids"}},
		{name: "card names a missing skill", avail: avail, thread: workspace.Thread{To: "observer"}, card: []string{"nowhere"},
			want: []string{"core: every thread", "nowhere | not found: no skills/nowhere.md (named by observer's card)"}},
		{name: "refused skills are listed, the named ones in place", avail: avail[2:], refused: map[string]string{"core": "refused: is a symlink", "zz": "refused: broken", "aa": "refused: FIFO"},
			thread: workspace.Thread{To: "observer", PrimaryMode: "planning"}, card: []string{"zz"},
			want: []string{"core | refused: is a symlink", "zz | refused: broken", "planning: mode planning", "aa | refused: FIFO"}},
		{name: "no mode, no tags, no core", avail: avail[2:], thread: workspace.Thread{To: "observer"}, want: nil},
		{name: "blank mode matches nothing", avail: []workspace.Skill{{Name: "x", Modes: []string{"a"}}}, thread: workspace.Thread{To: "o", PrimaryMode: "  "}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range pickSkills(tc.avail, tc.refused, tc.thread, tc.card) {
				if p.Reason != "" {
					got = append(got, p.Name+" | "+p.Reason)
				} else {
					got = append(got, p.Name+": "+strings.Join(p.Why, " and "))
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestContextSkillsGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		update workspace.ThreadUpdate
		card   []string // skills of the observer's card
		budget int      // 0: unlimited
		// refs of the skills section, in order, and left-out skills
		want    []string
		omitted map[string]string
		remove  []string // skills removed before
	}{
		{name: "skills-core-only", update: workspace.ThreadUpdate{SkillTags: &[]string{}}, want: []string{"skill:core"}},
		{name: "skills-by-mode", update: workspace.ThreadUpdate{SkillTags: &[]string{}, PrimaryMode: ptr("review")}, want: []string{"skill:core", "skill:review"}},
		{name: "skills-by-tag", update: workspace.ThreadUpdate{SkillTags: &[]string{"colours"}}, want: []string{"skill:core", "skill:colours"}},
		{name: "skills-tag-and-mode", update: workspace.ThreadUpdate{SkillTags: &[]string{"grids", "arc"}, PrimaryMode: ptr("analysis")}, want: []string{"skill:core", "skill:grids", "skill:planning"}},
		{name: "skills-card", card: []string{"review"}, update: workspace.ThreadUpdate{SkillTags: &[]string{}}, want: []string{"skill:core", "skill:review"}},
		{name: "skills-none", remove: []string{"core"}, update: workspace.ThreadUpdate{SkillTags: &[]string{"nothing"}}, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := skillFixture(t)
			for _, n := range tc.remove {
				if err := w.RemoveSkill(context.Background(), n, "test"); err != nil {
					t.Fatal(err)
				}
			}
			if tc.card != nil {
				setCardSkills(t, w, "observer", tc.card)
			}
			if _, err := w.UpdateThread(context.Background(), "training-001", "th_observer", "observer", tc.update); err != nil {
				t.Fatal(err)
			}
			b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Unlimited: true})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, it := range b.Sections[1].Items {
				got = append(got, it.Ref)
				if it.Kind != ItemSkill {
					t.Errorf("%s: kind %q", it.Ref, it.Kind)
				}
			}
			if b.Sections[1].Name != SectionSkills || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("section %q holds %v, want %v", b.Sections[1].Name, got, tc.want)
			}
			if len(b.Omitted) != 0 {
				t.Errorf("left out %v", b.Omitted)
			}
			checkContextGolden(t, tc.name, b)
		})
	}
}

func setCardSkills(t testing.TB, w *files.Store, agent string, skills []string) {
	t.Helper()
	cards, err := w.LoadAgents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range cards.Agents {
		if cards.Agents[i].Name == agent {
			cards.Agents[i].Skills = skills
		}
	}
	if err := w.WriteJSON(workspace.AgentsFile, cards); err != nil {
		t.Fatal(err)
	}
}

// A skill that does not fit is left out whole, listed with the reason,
// and smaller items after it still fit.
func TestContextSkillOverBudget(t *testing.T) {
	t.Parallel()
	w := skillFixture(t)
	writeSkill(t, w, "grids", "---\ndescription: Reading ARC grids\ntags: [grids]\n---\n"+strings.Repeat("A long lesson on grids. ", 200))
	full, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Unlimited: true})
	if err != nil {
		t.Fatal(err)
	}
	var header, core, grids int
	for _, it := range full.Sections[0].Items {
		header += it.Tokens
	}
	for _, it := range full.Sections[1].Items {
		switch it.Ref {
		case "skill:core":
			core = it.Tokens
		case "skill:grids":
			grids = it.Tokens
		}
	}
	if core == 0 || grids == 0 {
		t.Fatalf("skills of the full context: %v", includedRefs(full))
	}
	budget := header + core + grids - 1
	b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if r := omittedReason(b, "skill:grids"); !strings.HasPrefix(r, "over budget: needs ") {
		t.Errorf("skill:grids: reason %q, want over budget", r)
	}
	if refs := includedRefs(b); !contains(refs, "skills|skill:core") || !contains(refs, "active thread|notes/observations.md") {
		t.Errorf("included %v", refs)
	}
	if !strings.Contains(b.Text, "- skill:grids: over budget: needs ") {
		t.Errorf("text does not list the skill left out:\n%s", b.Text)
	}
	checkContextGolden(t, "skills-over-budget", b)
}

// Broken skill files are refused with a note, never fatal, and nothing of
// theirs reaches the text.
func TestContextBadSkills(t *testing.T) {
	t.Parallel()
	w := skillFixture(t)
	dir := filepath.Join(w.Dir(), workspace.SkillsDir)
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("---\ndescription: SECRET\ntags: [grids]\n---\nSECRET BODY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "linked.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "grids.md"), filepath.Join(dir, "inner.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := "---\ndescription: HUGE\ntags: [grids]\n---\n" + strings.Repeat("x", workspace.SkillMaxBytes)
	writeSkill(t, w, "huge", huge)
	writeSkill(t, w, "broken", "---\ndescription: BROKEN\ntags grids\n---\nBROKEN BODY\n")
	writeSkill(t, w, "notmatter", "# A skill without front matter\n")
	writeSkill(t, w, "badbody", "---\ndescription: Bad body\ntags: [grids]\n---\n\xff\xfe\n")
	writeSkill(t, w, "deep", "---\ndescription: d\ntags: ["+strings.Repeat("[", 1000)+"]\n---\n")
	writeSkill(t, w, "bad name", "---\ndescription: d\ntags: [grids]\n---\n")
	if err := os.Mkdir(filepath.Join(dir, "adir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("NOTES FILE"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".grids.md12345"), []byte("TEMPFILE"), 0o644); err != nil {
		t.Fatal(err)
	}
	setCardSkills(t, w, "observer", []string{"broken", "missing"})
	b := withDeadlineBundle(t, w, "th_observer", ContextOptions{Budget: 100000})
	want := map[string]string{
		"skill:broken":          "refused: front matter: line 3: \"tags grids\" is not a key: value line",
		"skill:missing":         "not found: no skills/missing.md (named by observer's card)",
		"skill:linked":          "refused: is a symlink",
		"skill:inner":           "refused: is a symlink",
		"skill:pipe":            "refused: is a FIFO",
		"skill:huge":            "refused: is " + workspace.GroupDigits(len(huge)) + " bytes, over the 262,144-byte limit",
		"skill:notmatter":       "refused: front matter: line 1:",
		"skill:badbody":         "refused: the body is not UTF-8 text",
		"skill:deep":            "refused: front matter: /tags/0: pattern: ",
		"skill:adir":            "refused: is a directory",
		"skills/bad name.md":    "refused: not a skill name",
		"skill:grids (read)":    "",
		"skill:core (read)":     "",
		"notes.txt (passed by)": "",
	}
	for ref, prefix := range want {
		if prefix == "" {
			continue
		}
		if r := omittedReason(b, ref); !strings.HasPrefix(r, prefix) {
			t.Errorf("%s: reason %q, want prefix %q", ref, r, prefix)
		}
	}
	if len(b.Omitted) != len(want)-3 {
		t.Errorf("omitted %d items, want %d: %v", len(b.Omitted), len(want)-3, b.Omitted)
	}
	for _, s := range []string{"SECRET", "HUGE", "BROKEN", "xxxxxxxx", "NOTES FILE", "TEMPFILE", "Bad body"} {
		if strings.Contains(b.Text, s) {
			t.Errorf("text holds %q of a refused file:\n%s", s, b.Text)
		}
	}
	refs := includedRefs(b)
	for _, ref := range []string{"skills|skill:core", "skills|skill:grids", "skills|skill:planning"} {
		if !contains(refs, ref) {
			t.Errorf("%s missing from %v", ref, refs)
		}
	}
	checkContextGolden(t, "skills-refused", b)
}

// A skills/ that is a symlink or a file is one note, and the rest of the
// context is built.
func TestContextSkillsDirRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func(t *testing.T, root string)
		want string
	}{
		{"symlink", func(t *testing.T, root string) {
			other := t.TempDir()
			if err := os.WriteFile(filepath.Join(other, "core.md"), []byte("---\ndescription: OUTSIDE\n---\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, filepath.Join(root, workspace.SkillsDir)); err != nil {
				t.Fatal(err)
			}
		}, "refused: is a symlink, not a directory"},
		{"file", func(t *testing.T, root string) {
			if err := os.WriteFile(filepath.Join(root, workspace.SkillsDir), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "refused: is a regular file, not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := provFixture(t)
			tc.make(t, w.Dir())
			b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: 100000})
			if err != nil {
				t.Fatal(err)
			}
			if r := omittedReason(b, "skills/"); !strings.HasPrefix(r, tc.want) {
				t.Errorf("skills/: reason %q, want %q", r, tc.want)
			}
			if strings.Contains(b.Text, "OUTSIDE") || !strings.Contains(b.Text, "### thread:th_observer") {
				t.Errorf("text:\n%s", b.Text)
			}
			if _, _, err := w.ListSkills(t.Context()); !errors.Is(err, workspace.ErrUnsafe) {
				t.Errorf("ListSkills: %v, want ErrUnsafe", err)
			}
		})
	}
}

func TestContextSkillsDeterministic(t *testing.T) {
	t.Parallel()
	w := skillFixture(t)
	mode := "analysis"
	if _, err := w.UpdateThread(context.Background(), "training-001", "th_observer", "observer", workspace.ThreadUpdate{PrimaryMode: &mode, SkillTags: &[]string{"grids", "colours"}}); err != nil {
		t.Fatal(err)
	}
	first, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: 400})
	if err != nil {
		t.Fatal(err)
	}
	// A skill written again with the same bytes changes nothing.
	writeSkill(t, w, "grids", gridsSkill)
	for i := 0; i < 3; i++ {
		b, err := Over(w).Context(t.Context(), "th_observer", ContextOptions{Budget: 400})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(b, first) {
			t.Fatalf("run %d differs:\n%s\n---\n%s", i, b.Text, first.Text)
		}
	}
}
