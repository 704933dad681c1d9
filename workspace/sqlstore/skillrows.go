package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/workspaced/workspaced/workspace"
)

// Skills are rows of files under their path in the tree, skills/<name>.md,
// parsed and checked by workspace.ParseSkill as the tree's are.

// ListSkills reads every skill, by name, without bodies; a row that is not
// a usable skill is refused with the reason.
func (s *Store) ListSkills(ctx context.Context) ([]workspace.Skill, []workspace.RefusedSkill, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	all, err := PathBodies(s.r.Query(ctx, `SELECT path, body FROM files WHERE path LIKE 'skills/%' ORDER BY path`+s.dl.Collate))
	if err != nil {
		return nil, nil, fmt.Errorf("list skills: %w", err)
	}
	out, refused := Skills(all)
	return out, refused, nil
}

// GetSkill reads one skill whole; a missing one is ErrNotFound.
func (s *Store) GetSkill(ctx context.Context, name string) (workspace.Skill, error) {
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := workspace.ValidateID("skill name", name); err != nil {
		return workspace.Skill{}, err
	}
	var body string
	err := s.r.QueryRow(ctx, "SELECT body FROM files WHERE path = $1", workspace.SkillFile(name)).Scan(&body)
	missing := errors.Is(err, ErrNoRows)
	if err != nil && !missing {
		return workspace.Skill{}, err
	}
	return Skill(name, body, !missing)
}

// AddSkill checks a skill (workspace.ParseSkill) and stores it; an
// existing one is ErrConflict unless req.Replace.
func (s *Store) AddSkill(ctx context.Context, req workspace.AddSkillRequest) (workspace.Skill, error) {
	sk, err := CheckSkill(req)
	if err != nil {
		return workspace.Skill{}, err
	}
	q := "INSERT INTO files (path, body) VALUES ($1, $2) ON CONFLICT (path) DO NOTHING"
	if req.Replace {
		q = s.q.putFile
	}
	n, err := s.d.WriteOne(ctx, q, workspace.SkillFile(req.Name), string(req.Data))
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("add skill %s: %w", req.Name, err)
	}
	if n == 0 {
		return workspace.Skill{}, SkillExists(req.Name)
	}
	return sk, nil
}

// RemoveSkill deletes a skill; a missing one is ErrNotFound.
func (s *Store) RemoveSkill(ctx context.Context, name, agent string) error {
	if err := workspace.ValidateID("skill name", name); err != nil {
		return err
	}
	n, err := s.d.WriteOne(ctx, "DELETE FROM files WHERE path = $1", workspace.SkillFile(name))
	if err != nil {
		return fmt.Errorf("remove skill %s: %w", name, err)
	}
	if n == 0 {
		return NoSkillToRemove(name)
	}
	return nil
}
