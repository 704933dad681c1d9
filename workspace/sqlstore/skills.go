package sqlstore

import (
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// Skills are rows of files under their path in the tree, skills/<name>.md,
// parsed and checked by workspace.ParseSkill as the tree's are.

// Skills reads the skills among rows of files under skills/, by the
// rows' order, without bodies; a row that is not a usable skill is
// refused with the reason.
func Skills(rows []PathBody) ([]workspace.Skill, []workspace.RefusedSkill) {
	out, refused := []workspace.Skill{}, []workspace.RefusedSkill{}
	for _, r := range rows {
		name, ok := strings.CutSuffix(strings.TrimPrefix(r.Path, workspace.SkillsDir+"/"), ".md")
		if !ok || workspace.ValidateID("skill name", name) != nil {
			refused = append(refused, workspace.RefusedSkill{File: r.Path, Reason: "refused: not a skill's name"})
			continue
		}
		sk, err := workspace.ParseSkill([]byte(r.Body))
		if err != nil {
			refused = append(refused, workspace.RefusedSkill{File: r.Path, Reason: "refused: " + err.Error()})
			continue
		}
		sk.Name, sk.Body = name, ""
		out = append(out, sk)
	}
	return out, refused
}

// Skill reads the skill name as its row holds it (had false when there
// is none: ErrNotFound).
func Skill(name, body string, had bool) (workspace.Skill, error) {
	if !had {
		return workspace.Skill{}, &workspace.Error{Kind: workspace.ErrNotFound, Op: "skill " + name, Msg: "no " + workspace.SkillFile(name),
			Hint: "list the skills to see which exist, or add it"}
	}
	sk, err := workspace.ParseSkill([]byte(body))
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("skill %s: %w", name, err)
	}
	sk.Name = name
	return sk, nil
}

// CheckSkill checks a skill to add (workspace.ParseSkill).
func CheckSkill(req workspace.AddSkillRequest) (workspace.Skill, error) {
	if err := workspace.ValidateID("skill name", req.Name); err != nil {
		return workspace.Skill{}, err
	}
	sk, err := workspace.ParseSkill(req.Data)
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("add skill %s: %w", req.Name, err)
	}
	sk.Name = req.Name
	return sk, nil
}

// SkillExists is the ErrConflict of adding a skill that exists without
// replacing it.
func SkillExists(name string) error {
	return &workspace.Error{Kind: workspace.ErrConflict, Op: "add skill " + name, Msg: "the skill exists", Hint: "replace it explicitly, or choose another name"}
}

// NoSkillToRemove is the ErrNotFound of removing a missing skill.
func NoSkillToRemove(name string) error {
	return &workspace.Error{Kind: workspace.ErrNotFound, Op: "remove skill " + name, Msg: "no " + workspace.SkillFile(name), Hint: "list the skills to see which exist"}
}
