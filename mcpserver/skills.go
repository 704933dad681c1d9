package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/ops"
)

// ToolSkills lists the workspace's skills or reads one.
const ToolSkills = "skills"

type skillsInput struct {
	Name string `json:"name,omitempty"`
}

const descSkills = "List the workspace's skills (Markdown lessons; which your context loaded, and why), or read one by name."

// skillListItem is one skill of the skills tool's listing.
type skillListItem struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Modes       []string `json:"modes"`
	Size        int64    `json:"size"`
	LoadedFor   string   `json:"loaded_for,omitempty"`
}

// skills answers with a skill's file when name is given ({"name",
// "file"} as its structured answer), else with the listing.
func (s *Server) skills(ctx context.Context, _ *mcp.CallToolRequest, in skillsInput) (reply, error) {
	if in.Name != "" {
		sk, err := s.w.GetSkill(ctx, in.Name)
		if err != nil {
			return reply{}, err
		}
		file := string(sk.File())
		return reply{text: file, data: map[string]string{"name": in.Name, "file": file}}, nil
	}
	list, refused, err := s.w.ListSkills(ctx)
	if err != nil {
		return reply{}, err
	}
	var loaded []ops.SkillChoice
	if s.thread != "" {
		if loaded, err = service.ThreadSkills(ctx, s.w, s.task, s.thread); err != nil {
			return reply{}, err
		}
	}
	why := map[string]string{}
	for _, c := range loaded {
		why[c.Name] = c.Why
	}
	items := make([]skillListItem, len(list))
	for i, sk := range list {
		items[i] = skillListItem{Name: sk.Name, Description: sk.Description, Tags: sk.Tags, Modes: sk.Modes, Size: sk.Size, LoadedFor: why[sk.Name]}
	}
	text, err := toJSON(struct {
		Skills  []skillListItem          `json:"skills"`
		Refused []workspace.RefusedSkill `json:"refused"`
	}{items, refused})
	if err != nil {
		return reply{}, err
	}
	return reply{text: text, data: json.RawMessage(text)}, nil
}
