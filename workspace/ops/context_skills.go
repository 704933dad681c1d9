package ops

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// CoreSkill is the skill every thread context loads when it exists.
const CoreSkill = "core"

// skillPick is one skill of a thread context: loaded, and why, or left out
// before the budget is consulted, and why.
type skillPick struct {
	Name   string
	Why    []string // "every thread", "every thread of observer", "mode analysis", "tag grids"
	Reason string   // non-empty: left out (not found, refused)
}

// pickSkills chooses the skills of thread t, whose agent's card names
// cardSkills, from the skills available (sorted by name) and those whose
// files were refused (name → reason). It is pure, and its order is stable:
//
//  1. the skill named core, when there is one;
//  2. the card's skills, in the card's order;
//  3. the skills whose modes contain the thread's primary_mode, by name;
//  4. the skills with a tag among the thread's skill_tags, by name;
//  5. every other refused skill file, by name, so that a broken skill is
//     never silently missing.
//
// Modes and tags are compared without regard to case. A skill chosen
// twice is loaded once, in its first place, with every reason.
func pickSkills(avail []workspace.Skill, refused map[string]string, t workspace.Thread, cardSkills []string) []skillPick {
	var out []skillPick
	at := map[string]int{}
	add := func(name, why, reason string) {
		if i, ok := at[name]; ok {
			if out[i].Reason == "" && why != "" {
				out[i].Why = append(out[i].Why, why)
			}
			return
		}
		at[name] = len(out)
		p := skillPick{Name: name, Reason: reason}
		if reason == "" {
			p.Why = []string{why}
		}
		out = append(out, p)
	}
	byName := make(map[string]workspace.Skill, len(avail))
	for _, s := range avail {
		byName[s.Name] = s
	}
	named := func(name, why, missing string) {
		if _, ok := byName[name]; ok {
			add(name, why, "")
		} else if r, ok := refused[name]; ok {
			add(name, "", r)
		} else if missing != "" {
			add(name, "", missing)
		}
	}
	named(CoreSkill, "every thread", "")
	for _, n := range cardSkills {
		named(n, "every thread of "+t.To, fmt.Sprintf("not found: no %s (named by %s's card)", workspace.SkillFile(n), t.To))
	}
	if mode := strings.TrimSpace(t.PrimaryMode); mode != "" {
		for _, s := range avail {
			if len(matchWords(s.Modes, []string{mode})) > 0 {
				add(s.Name, "mode "+mode, "")
			}
		}
	}
	if len(t.SkillTags) > 0 {
		for _, s := range avail {
			if m := matchWords(s.Tags, t.SkillTags); len(m) == 1 {
				add(s.Name, "tag "+m[0], "")
			} else if len(m) > 1 {
				add(s.Name, "tags "+strings.Join(m, ", "), "")
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(refused)) {
		add(n, "", refused[n])
	}
	return out
}

// matchWords returns the words of have that equal one of want, case
// aside, in have's order.
func matchWords(have, want []string) []string {
	var out []string
	for _, h := range have {
		for _, w := range want {
			if strings.EqualFold(h, strings.TrimSpace(w)) {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

// skillCandidates reads the skills of thread t and makes them the items
// of section. Nothing here is ever an error: a skills/ that cannot be read
// and every refused skill file become omissions with their reason. Only
// the front matter of each skill is read to choose; the chosen skills are
// then read whole.
func (w Ops) skillCandidates(ctx context.Context, section int, t workspace.Thread, cardSkills []string) []candidate {
	avail, refused, badFiles, err := w.availableSkills(ctx)
	if err != nil {
		return []candidate{{section: section, item: Item{Ref: workspace.SkillsDir + "/"}, reason: "refused: " + workspace.ErrorMsg(err)}}
	}
	var out []candidate
	for _, p := range pickSkills(avail, refused, t, cardSkills) {
		c := candidate{section: section, item: Item{Ref: "skill:" + p.Name, Kind: ItemSkill}, reason: p.Reason}
		if c.reason == "" {
			s, err := w.GetSkill(ctx, p.Name)
			if err != nil {
				c.reason = "refused: " + workspace.ErrorMsg(err)
			} else {
				head := fmt.Sprintf("(skill, for %s) %s", strings.Join(p.Why, " and "), oneLine(s.Description))
				c.item.Content = head + "\n" + strings.TrimRight(strings.TrimLeft(s.Body, "\r\n"), " \t\r\n")
			}
		}
		out = append(out, c)
	}
	for _, f := range badFiles {
		out = append(out, candidate{section: section, item: Item{Ref: f.File}, reason: f.Reason})
	}
	return out
}

// SkillChoice is a skill a thread's context loads, and why ("every
// thread", "mode analysis and tag grids", ...).
type SkillChoice struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// ThreadSkills lists the skills the context of a thread loads, in the
// context's order, reading only their front matter; skills it would refuse
// or cannot find are left out (Context lists them with the reason). A
// skills/ that cannot be read loads nothing. It writes nothing. When ctx
// ends, it returns the context's error.
func (w Ops) ThreadSkills(ctx context.Context, taskID, threadID string) ([]SkillChoice, error) {
	t, err := w.GetThread(ctx, taskID, threadID)
	if err != nil {
		return nil, err
	}
	cards, err := w.LoadAgents(ctx)
	if err != nil {
		return nil, err
	}
	card, _ := cards.Card(t.To)
	out := []SkillChoice{}
	avail, _, _, err := w.availableSkills(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("skills of thread %s: %w", threadID, err)
	}
	if err != nil {
		return out, nil
	}
	for _, p := range pickSkills(avail, nil, t, card.Skills) {
		if p.Reason == "" {
			out = append(out, SkillChoice{Name: p.Name, Why: strings.Join(p.Why, " and ")})
		}
	}
	return out, nil
}

// availableSkills lists the store's skills (front matter only), the
// skills it refused by name, and the files of skills/ that are no skill's
// name at all.
func (w Ops) availableSkills(ctx context.Context) (avail []workspace.Skill, refused map[string]string, badFiles []workspace.RefusedSkill, err error) {
	avail, bad, err := w.ListSkills(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	refused = map[string]string{}
	for _, r := range bad {
		name, ok := strings.CutSuffix(strings.TrimPrefix(r.File, workspace.SkillsDir+"/"), ".md")
		if ok && workspace.ValidateID("skill name", name) == nil && workspace.SkillFile(name) == r.File {
			refused[name] = r.Reason
			continue
		}
		badFiles = append(badFiles, r)
	}
	return avail, refused, badFiles, nil
}
