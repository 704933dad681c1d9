package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

func (s *Store) GetSkill(name string) (workspace.Skill, error) {
	return workspace.Skill{}, notYet("get skill")
}
func (s *Store) ListSkills() ([]workspace.Skill, []workspace.RefusedSkill, error) {
	return nil, nil, notYet("list skills")
}
func (s *Store) AddSkill(ctx context.Context, req workspace.AddSkillRequest) (workspace.Skill, error) {
	return workspace.Skill{}, notYet("add skill")
}
func (s *Store) RemoveSkill(ctx context.Context, name, agent string) error {
	return notYet("remove skill")
}
