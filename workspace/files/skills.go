package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/workspaced/workspaced/atomicfile"
	"github.com/workspaced/workspaced/vocab"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/files/agentfile"
)

// skillsDir opens skills/ for reading; (nil, nil) when there is none. A
// skills/ that is a symlink or not a directory is ErrUnsafe.
func (w *Store) skillsDir() (*os.File, error) {
	st, err := w.root.Lstat(workspace.SkillsDir)
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: %w", workspace.SkillsDir, err)
	}
	if !st.IsDir() {
		kind := workspace.FileKind(st.Mode())
		if st.Mode().IsRegular() {
			kind = "regular file"
		}
		return nil, &workspace.Error{Kind: workspace.ErrUnsafe, Op: "read " + workspace.SkillsDir, Msg: fmt.Sprintf("is a %s, not a directory", kind),
			Hint: "keep the skills as regular files in a directory skills/ of the root"}
	}
	f, err := w.root.Open(workspace.SkillsDir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", workspace.SkillsDir, err)
	}
	return f, nil
}

// skillNames lists the skill files of the open skills/ directory, sorted:
// every visible *.md, with the names that are not ids refused.
func skillNames(dir *os.File) (names []string, refused []workspace.RefusedSkill, err error) {
	if _, err := dir.Seek(0, io.SeekStart); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", workspace.SkillsDir, err)
	}
	for {
		ents, rerr := dir.Readdirnames(512)
		for _, n := range ents {
			name, ok := strings.CutSuffix(n, ".md")
			if strings.HasPrefix(n, ".") || !ok {
				continue
			}
			if !vocab.ValidID(name) {
				refused = append(refused, workspace.RefusedSkill{File: path.Join(workspace.SkillsDir, n), Reason: "refused: not a skill name (" + vocab.IDRule + ")"})
				continue
			}
			names = append(names, name)
		}
		if rerr == io.EOF || len(ents) == 0 {
			break
		}
		if rerr != nil {
			return nil, nil, fmt.Errorf("read %s: %w", workspace.SkillsDir, rerr)
		}
	}
	sort.Strings(names)
	sort.Slice(refused, func(i, j int) bool { return refused[i].File < refused[j].File })
	return names, refused, nil
}

// readSkill reads a whole skill file of the open skills/ directory.
func readSkill(dir *os.File, name string) (workspace.Skill, error) {
	data, err := agentfile.ReadAt(dir, name+".md", workspace.SkillMaxBytes)
	if err != nil {
		return workspace.Skill{}, err
	}
	s, err := workspace.ParseSkill(data)
	if err != nil {
		return workspace.Skill{}, err
	}
	s.Name = name
	return s, nil
}

// ListSkills reads every skill of skills/ whole and returns them by name,
// without their bodies, and the files refused with the reason: a name that
// is not an id, a symlink, a FIFO or anything but a regular file, a file
// over SkillMaxBytes, a broken front matter, a body that is not UTF-8. A
// refused file is never an error; a skills/ that cannot be listed (a
// symlink, not a directory) is. It writes nothing.
func (w *Store) ListSkills(ctx context.Context) ([]workspace.Skill, []workspace.RefusedSkill, error) {
	dir, err := w.skillsDir()
	if err != nil || dir == nil {
		return []workspace.Skill{}, []workspace.RefusedSkill{}, err
	}
	defer dir.Close()
	names, refused, err := skillNames(dir)
	if err != nil {
		return nil, nil, err
	}
	out := []workspace.Skill{}
	for _, n := range names {
		s, err := readSkill(dir, n)
		if err != nil {
			refused = append(refused, workspace.RefusedSkill{File: workspace.SkillFile(n), Reason: "refused: " + workspace.ErrorMsg(err)})
			continue
		}
		s.Body = ""
		out = append(out, s)
	}
	sort.Slice(refused, func(i, j int) bool { return refused[i].File < refused[j].File })
	if refused == nil {
		refused = []workspace.RefusedSkill{}
	}
	return out, refused, nil
}

// GetSkill reads one skill whole. A missing skill is ErrNotFound; a file
// refused (see ListSkills) is ErrUnsafe or ErrInvalid with the reason.
func (w *Store) GetSkill(ctx context.Context, name string) (workspace.Skill, error) {
	if err := workspace.ValidateID("skill name", name); err != nil {
		return workspace.Skill{}, err
	}
	dir, err := w.skillsDir()
	if err != nil {
		return workspace.Skill{}, err
	}
	if dir == nil {
		return workspace.Skill{}, workspace.NotFoundf("skill "+name, "list the skills to see which exist, or add it", "no skills/ directory in the workspace")
	}
	defer dir.Close()
	s, err := readSkill(dir, name)
	if errors.Is(err, workspace.ErrNotFound) {
		return workspace.Skill{}, workspace.NotFoundf("skill "+name, "list the skills to see which exist, or add it", "no %s", workspace.SkillFile(name))
	}
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("skill %s: %w", name, err)
	}
	return s, nil
}

// AddSkill checks a skill file (ParseSkill) and writes it atomically to
// skills/<name>.md under the file's lock. An existing skill is a conflict
// unless Replace is set. Nothing is written when the file is refused.
func (w *Store) AddSkill(ctx context.Context, req workspace.AddSkillRequest) (workspace.Skill, error) {
	if err := workspace.ValidateID("skill name", req.Name); err != nil {
		return workspace.Skill{}, err
	}
	agent := req.Agent
	if agent == "" {
		agent = "workspaced"
	}
	s, err := workspace.ParseSkill(req.Data)
	if err != nil {
		return workspace.Skill{}, fmt.Errorf("add skill %s: %w", req.Name, err)
	}
	s.Name = req.Name
	name := workspace.SkillFile(req.Name)
	l, err := w.LockFile(ctx, name, agent)
	if err != nil {
		return workspace.Skill{}, err
	}
	defer l.Release()
	if w.exists(name) && !req.Replace {
		return workspace.Skill{}, &workspace.Error{Kind: workspace.ErrConflict, Op: "add skill " + req.Name, Msg: "the skill exists", Hint: "replace it explicitly, or choose another name"}
	}
	if err := w.Write(name, req.Data); err != nil {
		return workspace.Skill{}, err
	}
	return s, nil
}

// RemoveSkill deletes skills/<name>.md under its lock, durably. A missing
// skill is ErrNotFound.
func (w *Store) RemoveSkill(ctx context.Context, name, agent string) error {
	if err := workspace.ValidateID("skill name", name); err != nil {
		return err
	}
	if agent == "" {
		agent = "workspaced"
	}
	file := workspace.SkillFile(name)
	l, err := w.LockFile(ctx, file, agent)
	if err != nil {
		return err
	}
	defer l.Release()
	if _, err := w.root.Lstat(file); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return workspace.NotFoundf("remove skill "+name, "list the skills to see which exist", "no %s", file)
		}
		return fmt.Errorf("remove skill %s: %w", name, err)
	}
	if err := w.root.Remove(file); err != nil {
		return fmt.Errorf("remove skill %s: %w", name, err)
	}
	if err := atomicfile.SyncDir(w.root, workspace.SkillsDir); err != nil {
		return fmt.Errorf("remove skill %s: %w", name, err)
	}
	return nil
}
