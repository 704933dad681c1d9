package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// Skills are rows of files under their path in the tree, skills/<name>.md,
// parsed and checked by workspace.ParseSkill as the tree's are.

// ListSkills reads every skill, by name, without bodies; a row that is not
// a usable skill is refused with the reason.
func (s *Store) ListSkills(ctx context.Context) ([]workspace.Skill, []workspace.RefusedSkill, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	all, err := pathBodies(s.rdb.QueryContext(ctx, `SELECT path, body FROM files WHERE path LIKE 'skills/%' ORDER BY path`))
	if err != nil {
		return nil, nil, fmt.Errorf("list skills: %w", err)
	}
	out, refused := []workspace.Skill{}, []workspace.RefusedSkill{}
	for _, r := range all {
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
	return out, refused, nil
}

// GetSkill reads one skill whole; a missing one is ErrNotFound.
func (s *Store) GetSkill(ctx context.Context, name string) (workspace.Skill, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	if err := workspace.ValidateID("skill name", name); err != nil {
		return workspace.Skill{}, err
	}
	var body string
	err := s.rdb.QueryRowContext(ctx, "SELECT body FROM files WHERE path = $1", workspace.SkillFile(name)).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return workspace.Skill{}, &workspace.Error{Kind: workspace.ErrNotFound, Op: "skill " + name, Msg: "no " + workspace.SkillFile(name),
			Hint: "list the skills to see which exist, or add it"}
	}
	if err != nil {
		return workspace.Skill{}, err
	}
	sk, err := workspace.ParseSkill([]byte(body))
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("skill %s: %w", name, err)
	}
	sk.Name = name
	return sk, nil
}

// AddSkill checks a skill (workspace.ParseSkill) and stores it; an
// existing one is ErrConflict unless req.Replace.
func (s *Store) AddSkill(ctx context.Context, req workspace.AddSkillRequest) (workspace.Skill, error) {
	if err := workspace.ValidateID("skill name", req.Name); err != nil {
		return workspace.Skill{}, err
	}
	sk, err := workspace.ParseSkill(req.Data)
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("add skill %s: %w", req.Name, err)
	}
	sk.Name = req.Name
	q := "INSERT INTO files (path, body, updated_at) VALUES ($1, $2, $3) ON CONFLICT (path) DO NOTHING"
	if req.Replace {
		q = putFileSQL
	}
	res, err := s.exec(ctx, q, workspace.SkillFile(req.Name), string(req.Data), ts(now()))
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("add skill %s: %w", req.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return workspace.Skill{}, &workspace.Error{Kind: workspace.ErrConflict, Op: "add skill " + req.Name, Msg: "the skill exists", Hint: "replace it explicitly, or choose another name"}
	}
	return sk, nil
}

// RemoveSkill deletes a skill; a missing one is ErrNotFound.
func (s *Store) RemoveSkill(ctx context.Context, name, agent string) error {
	if err := workspace.ValidateID("skill name", name); err != nil {
		return err
	}
	res, err := s.exec(ctx, "DELETE FROM files WHERE path = $1", workspace.SkillFile(name))
	if err != nil {
		return fmt.Errorf("remove skill %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return &workspace.Error{Kind: workspace.ErrNotFound, Op: "remove skill " + name, Msg: "no " + workspace.SkillFile(name), Hint: "list the skills to see which exist"}
	}
	return nil
}
