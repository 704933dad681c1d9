package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workspaced/workspaced/audit"
	"github.com/workspaced/workspaced/workspace"
)

// How sessions share one MCP server. The tools — their definitions,
// schemas and argument checkers — are built once per process (toolset)
// and registered once per MCP server; an MCP server serves any number of
// sessions, each bound to a *Server: its identity (task, thread, agent)
// and the grant it is checked against. The binding travels in the
// session's context: the context a session is connected with is the
// context of every call it makes.

type sessionKey struct{}

// withSession binds the session connected with the returned context to s.
func withSession(ctx context.Context, s *Server) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// host is one MCP server and how it finds the session of a call.
type host struct {
	mcp *mcp.Server
	// one serves every session connected without a binding (a Server's
	// own MCP server, connected to any transport); nil on a server
	// shared by bound sessions only.
	one *Server
	// obs is told of every tool call (nil: nobody).
	obs Observer
}

// session is the Server a call is made for.
func (h *host) session(ctx context.Context) (*Server, error) {
	if s, ok := ctx.Value(sessionKey{}).(*Server); ok {
		return s, nil
	}
	if h.one != nil {
		return h.one, nil
	}
	return nil, fmt.Errorf("this session is bound to no task: open a new one")
}

// newHost builds an MCP server with every tool and the resource
// templates registered. What depends on the session — the instructions,
// the tools its grant allows, the task's own resources — is filled in
// per request by middleware.
func newHost(version string, one *Server) *host {
	h := &host{one: one}
	h.mcp = mcp.NewServer(&mcp.Implementation{Name: DefaultName, Title: "workspaced shared workspace", Version: version}, nil)
	for _, d := range toolset() {
		h.mcp.AddTool(d.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s, err := h.session(ctx)
			if err != nil {
				h.called(d.tool.Name, true)
				return errorResult(err), nil
			}
			res := d.call(s, ctx, req)
			h.called(d.tool.Name, res.IsError)
			return res, nil
		})
	}
	h.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: StateURITemplate, Name: "task-state",
		Description: "A task's execution state (state.json).", MIMEType: "application/json"}, h.readResource)
	h.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: EnvURITemplate, Name: "task-env",
		Description: "A task's environment data manifest.", MIMEType: "application/json"}, h.readResource)
	h.mcp.AddReceivingMiddleware(h.middleware)
	return h
}

func (h *host) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	s, err := h.session(ctx)
	if err != nil {
		return nil, err
	}
	return s.readResource(ctx, req)
}

// middleware fills in what a session's answers owe to its identity: the
// instructions of initialize (and of server/discover), the tools of tools/list its grant allows
// now, and its task's resources in resources/list.
func (h *host) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		s, serr := h.session(ctx)
		if serr != nil {
			return res, nil
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions = s.instructions()
		case *mcp.DiscoverResult:
			r.Instructions = s.instructions()
		case *mcp.ListToolsResult:
			allowed := s.listable(req.GetExtra())
			tools := make([]*mcp.Tool, 0, len(r.Tools))
			for _, t := range r.Tools {
				if !allowed(t.Name) {
					continue
				}
				if d := toolByName()[t.Name]; d != nil && s.task != "" {
					t = d.bound
				}
				tools = append(tools, t)
			}
			r.Tools = tools
		case *mcp.ListResourcesResult:
			if p, ok := req.GetParams().(*mcp.ListResourcesParams); ok && p != nil && p.Cursor != "" {
				break
			}
			r.Resources = append(s.resources(), r.Resources...)
		}
		return res, nil
	}
}

// toolDef is a tool built once and shared by every MCP server: its
// published definition and its call, which checks the caller, checks and
// decodes the arguments, and runs the handler for a session.
type toolDef struct {
	tool *mcp.Tool
	// bound is the tool as a session bound to a task is shown it:
	// without the task and thread arguments, which it takes all the same.
	bound *mcp.Tool
	call  func(s *Server, ctx context.Context, req *mcp.CallToolRequest) *mcp.CallToolResult
	// check is the checker of its arguments.
	check *argChecker
}

// reply is a tool's answer: the text a model reads and, when the answer
// is JSON, the object it holds (structuredContent, as the tool's output
// schema describes it).
type reply struct {
	text string
	data any
}

// handler is a tool's work for a session, given its decoded arguments.
type handler[In any] func(s *Server, ctx context.Context, req *mcp.CallToolRequest, in In) (reply, error)

// define builds one tool whose arguments are In, with its input schema
// derived from In and its output schema out (nil: the answer is text).
// The arguments are checked against the schema and decoded into In
// (decodeArgs) before the handler runs. An error becomes a tool error
// (IsError) with ErrorText; a panic in a handler becomes a tool error
// too, so no call can stop the server.
func define[In any](name, desc string, ann *mcp.ToolAnnotations, out *schema, h handler[In]) *toolDef {
	sch := inputSchema[In]()
	t := &mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: published(sch)}
	if out != nil {
		t.OutputSchema = out
	}
	bound := t
	if takesTask(name) {
		withTaskArgs(sch)
		t = &mcp.Tool{Name: name, Description: desc, Annotations: ann, InputSchema: published(sch), OutputSchema: t.OutputSchema}
	}
	check := newArgChecker(name, sch)
	// run checks and runs one call; outcome is how it ended, for the
	// audit. A tentative call (on a remembered grant, decided again on a
	// look-up when refused) logs no refusal of its own.
	run := func(bound *Server, ctx context.Context, req *mcp.CallToolRequest, extra *mcp.RequestExtra, raw json.RawMessage, tentative bool) (s *Server, res *mcp.CallToolResult, outcome string, err error) {
		s, err = bound.on(ctx, extra, name, raw)
		if err != nil {
			return bound, errorResult(err), audit.Refused, err
		}
		args := argsOf(ctx, raw)
		permit := s.permit
		if tentative {
			permit = s.check
		}
		if err := permit(extra, name, args.top); err != nil {
			return s, errorResult(err), audit.Refused, err
		}
		in, err := decodeArgs[In](check, args, raw)
		if err != nil {
			return s, errorResult(err), audit.Refused, err
		}
		// The session's token is named in the events its writes append.
		r, err := h(s, workspace.WithToken(ctx, s.tokenID), req, in)
		if err != nil {
			res = errorResult(err)
			res.StructuredContent = r.data
			return s, res, audit.Failed, err
		}
		return s, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.text}}, StructuredContent: r.data}, audit.OK, nil
	}
	call := func(bound *Server, ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult) {
		defer func() {
			if r := recover(); r != nil {
				res = errorResult(fmt.Errorf("%s: internal error: %v", name, r))
			}
		}()
		var raw json.RawMessage
		var extra *mcp.RequestExtra
		if req != nil && req.Params != nil {
			raw = req.Params.Arguments
		}
		if req != nil {
			extra = req.Extra
		}
		// The arguments by name, read once for the call's every step
		// and its audit.
		ctx = context.WithValue(ctx, argsKey{}, parseArgs(raw))
		// refused answers a call whose token a look-up refused.
		refused := func(s *Server, lerr error) *mcp.CallToolResult {
			err := refusal("the token of this session is no longer valid: "+lerr.Error(), "stop: whoever runs you must give you a valid token")
			s.log.Warn("mcp: call refused", "agent", s.agent, "tool", name, "reason", err.Error())
			s.record(ctx, extra, name, raw, audit.Refused, err)
			return errorResult(err)
		}
		rm := rememberedFor(extra, name)
		if other := rememberedAny(extra); rm == nil && other != nil {
			// Admitted on a remembered grant for another tool (its
			// message read otherwise than the SDK read it): looked up
			// before it runs, as every call of this tool is.
			g, lerr := other.lookUp()
			if lerr != nil {
				return refused(bound, lerr)
			}
			extra = lookedUp(extra, g)
			again := *req
			again.Extra = extra
			req = &again
		}
		guarded := ctx
		if rm != nil {
			// Admitted on the token's remembered grant: the store checks
			// it in the operation's own statement (fold.go).
			guarded = workspace.WithGrantGuard(ctx, rm.guard)
		}
		s, res, outcome, err := run(bound, guarded, req, extra, raw, rm != nil)
		if rm != nil && againOnLookUp(err) {
			g, lerr := rm.lookUp()
			if lerr != nil {
				return refused(s, lerr)
			}
			extra = lookedUp(extra, g)
			again := *req
			again.Extra = extra
			s, res, outcome, err = run(bound, ctx, &again, extra, raw, false)
		}
		s.record(ctx, extra, name, raw, outcome, err)
		return res
	}
	return &toolDef{tool: t, bound: bound, call: call, check: check}
}

// text adapts a handler whose answer is text.
func text[In any](h func(*Server, context.Context, *mcp.CallToolRequest, In) (string, error)) handler[In] {
	return func(s *Server, ctx context.Context, req *mcp.CallToolRequest, in In) (reply, error) {
		t, err := h(s, ctx, req, in)
		return reply{text: t}, err
	}
}

// object adapts a handler whose answer is a JSON object: the object is
// the structured answer too.
func object[In any](h func(*Server, context.Context, *mcp.CallToolRequest, In) (string, error)) handler[In] {
	return func(s *Server, ctx context.Context, req *mcp.CallToolRequest, in In) (reply, error) {
		t, err := h(s, ctx, req, in)
		if err != nil {
			return reply{}, err
		}
		return reply{text: t, data: json.RawMessage(t)}, nil
	}
}

// under adapts a handler whose answer is any JSON (an array, a value):
// the structured answer is an object holding it under key, since
// structured content is always an object.
func under[In any](key string, h func(*Server, context.Context, *mcp.CallToolRequest, In) (string, error)) handler[In] {
	return func(s *Server, ctx context.Context, req *mcp.CallToolRequest, in In) (reply, error) {
		t, err := h(s, ctx, req, in)
		if err != nil {
			return reply{}, err
		}
		return reply{text: t, data: map[string]json.RawMessage{key: json.RawMessage(t)}}, nil
	}
}

// toolset is every tool, built once per process.
var toolset = sync.OnceValue(buildTools)

// toolByName is the toolset by name.
var toolByName = sync.OnceValue(func() map[string]*toolDef {
	m := map[string]*toolDef{}
	for _, d := range toolset() {
		m[d.tool.Name] = d
	}
	return m
})

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ErrorText(err)}}}
}
