package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

const skillUsage = `workspaced skill — skills: Markdown files skills/<name>.md that thread
contexts load by mode and tag (docs/CONTEXT.md).

A skill begins with a front matter, then its Markdown body:

  ---
  description: Reading ARC grids: rows, columns, colours 0-9
  tags: [grids, arc]
  modes: [analysis]
  ---
  # Grids
  ...

description is one line (required); tags and modes are lists of words.
A thread's context loads the skill named core always, the skills its
agent's card names, the skills whose modes hold the thread's primary_mode
and those with a tag among its skill_tags.

Usage:
  workspaced skill add --name N --file F|- [--description D] [--tags LIST] [--modes LIST] [--replace] [--json]
  workspaced skill list [--json]
  workspaced skill show --name N [--json]
  workspaced skill remove --name N

Examples:
  workspaced skill add --name grids --file grids.md
  workspaced skill add --name core --description "Rules for every agent" --file - < core-body.md
  workspaced skill list
  workspaced skill show --name grids

Exit codes: 0 ok, 1 failure (a refused front matter, a bad name), 2 usage,
3 no such skill, 4 the skill exists (add without --replace) or lock timeout.
`

func cmdSkill(ctx context.Context, e *env, args []string) error {
	return dispatch(ctx, e, "skill", skillUsage, []subcommand{
		{"add", "check a skill and write it to skills/<name>.md", skillAdd},
		{"list", "every skill: name, tags, modes, size, description; refused files", skillList},
		{"show", "one skill as stored (--json: its fields and body)", skillShow},
		{"remove", "delete a skill", skillRemove},
	}, args)
}

const skillAddUsage = `Usage:
  workspaced skill add --name N --file F|- [--description D] [--tags LIST] [--modes LIST]
                       [--replace] [--agent A] [--json]

Checks a skill and writes it atomically to skills/<name>.md. Without
--description, F is the whole skill and must begin with its front matter.
With --description, F is the body alone and the front matter is written
from --description, --tags and --modes (LIST is comma-separated).

The front matter is a line "---", then "key: value" lines — description (one
line, required), tags: [a, b], modes: [m] — then a line "---". A value in
"double quotes" is a JSON string; no other key is allowed, and no key twice.
A refused skill is reported with the line at fault and nothing is written.

Examples:
  workspaced skill add --name grids --file grids.md
  workspaced skill add --name grids --file grids.md --replace
  workspaced skill add --name core --description "Rules for every agent" --file - < core-body.md
  workspaced skill add --name review --description "How to review" --modes review --tags code,plans --file review.md

Exit codes: 0 ok, 1 failure (a refused front matter, a bad name, a file over
256 KiB), 2 usage, 4 the skill exists (use --replace) or lock timeout.
`

func skillAdd(ctx context.Context, e *env, args []string) error {
	fs := newFlags("skill add")
	name := fs.String("name", "", "skill `NAME` (the file is skills/<NAME>.md)")
	file := fs.String("file", "", "the skill, or with --description its body (`F`, - for stdin)")
	desc := fs.String("description", "", "write the front matter: `D`, one line saying what the skill teaches")
	tags := fs.String("tags", "", "with --description: comma-separated `LIST` of tags")
	modes := fs.String("modes", "", "with --description: comma-separated `LIST` of modes")
	replace := fs.Bool("replace", false, "replace an existing skill")
	agent := fs.String("agent", "", "the writing `AGENT`, recorded as the lock holder (default $WORKSPACE_AGENT, else \"cli\")")
	asJSON := fs.Bool("json", false, "print the skill as read back (without its body)")
	if err := parseNeeding(e, fs, skillAddUsage, args, "name", "file"); err != nil {
		return err
	}
	if *desc == "" && (flagSet(fs, "tags") || flagSet(fs, "modes")) {
		return usageHint("skill add", "--tags and --modes go with --description; without it the file carries its own front matter")
	}
	data, err := readInput(e, *file)
	if err != nil {
		return err
	}
	if *desc != "" {
		data = workspace.ComposeSkill(workspace.SkillMeta{Description: *desc, Tags: splitList(*tags), Modes: splitList(*modes)}, string(data))
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	s, err := w.AddSkill(ctx, workspace.AddSkillRequest{Name: *name, Data: data, Replace: *replace, Agent: agentOr(*agent, "cli")})
	if err != nil {
		return err
	}
	s.Body = ""
	if *asJSON {
		return printJSON(e.stdout, s)
	}
	fmt.Fprintf(e.stdout, "wrote %s\n", e.display(workspace.SkillFile(s.Name)))
	return nil
}

// skillListOutput is skill list --json.
type skillListOutput struct {
	Skills  []workspace.Skill        `json:"skills"`
	Refused []workspace.RefusedSkill `json:"refused"`
}

const skillListUsage = `Usage:
  workspaced skill list [--json]

Lists every skill by name: its tags, modes, size and description. Files of
skills/ that are not usable skills (a symlink, a FIFO, over 256 KiB, a
broken front matter, a name that is not an id) are listed after, with the
reason; they never stop the listing. --json prints {skills, refused}.

Examples:
  workspaced skill list
  workspaced skill list --json | jq -r '.skills[].name'

Exit codes: 0 ok (also with refused files), 1 failure (skills/ is a symlink
or not a directory), 2 usage.
`

func skillList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("skill list")
	asJSON := fs.Bool("json", false, "print {skills, refused} as JSON")
	if err := parse(e, fs, skillListUsage, args); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	skills, refused, err := w.ListSkills(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, skillListOutput{Skills: skills, Refused: refused})
	}
	if len(skills) == 0 && len(refused) == 0 {
		fmt.Fprintln(e.stdout, "no skills (add one with 'workspaced skill add')")
		return nil
	}
	rows := make([][]string, len(skills))
	for i, s := range skills {
		rows[i] = []string{s.Name, orDash(strings.Join(s.Tags, ",")), orDash(strings.Join(s.Modes, ",")), humanSize(s.Size), cut(s.Description, 60)}
	}
	if len(rows) > 0 {
		table(e.stdout, []string{"NAME", "TAGS", "MODES", "SIZE", "DESCRIPTION"}, rows)
	}
	for _, r := range refused {
		fmt.Fprintf(e.stdout, "%s: %s\n", r.File, r.Reason)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

const skillShowUsage = `Usage:
  workspaced skill show --name N [--json]

Prints a skill as a thread context reads it: its front matter, then its
body. --json prints {name, description, tags, modes, size, body}.

Examples:
  workspaced skill show --name grids
  workspaced skill show --name grids --json | jq -r .body

Exit codes: 0 ok, 1 failure (the file is refused: the reason is printed),
2 usage, 3 no such skill.
`

func skillShow(ctx context.Context, e *env, args []string) error {
	fs := newFlags("skill show")
	name := fs.String("name", "", "skill `NAME`")
	asJSON := fs.Bool("json", false, "print the skill as JSON")
	if err := parseNeeding(e, fs, skillShowUsage, args, "name"); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	s, err := w.GetSkill(ctx, *name)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, s)
	}
	_, err = e.stdout.Write(s.File())
	return err
}

const skillRemoveUsage = `Usage:
  workspaced skill remove --name N [--agent A]

Deletes skills/<name>.md under its lock.

Examples:
  workspaced skill remove --name grids
  workspaced --root /srv/agents skill remove --name core --agent maintainer

Exit codes: 0 ok, 1 failure, 2 usage, 3 no such skill, 4 lock timeout.
`

func skillRemove(ctx context.Context, e *env, args []string) error {
	fs := newFlags("skill remove")
	name := fs.String("name", "", "skill `NAME`")
	agent := fs.String("agent", "", "the removing `AGENT`, recorded as the lock holder (default $WORKSPACE_AGENT, else \"cli\")")
	if err := parseNeeding(e, fs, skillRemoveUsage, args, "name"); err != nil {
		return err
	}
	w, err := e.openStore()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.RemoveSkill(ctx, *name, agentOr(*agent, "cli")); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "removed %s\n", e.display(workspace.SkillFile(*name)))
	return nil
}
