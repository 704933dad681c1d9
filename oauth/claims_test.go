package oauth_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/oidctest"
	"github.com/workspaced/workspaced/oauth"
	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// TestGrant maps claims to a grant: the agent from its claim, tasks from
// task scopes and the tasks claim, rights and global memory from their
// scopes; claims it cannot read refuse the token rather than grant
// something else.
func TestGrant(t *testing.T) {
	t.Parallel()
	def := oauth.Config{}.WithDefaults()
	custom := oauth.Config{OAuthSettings: workspace.OAuthSettings{AgentClaim: "azp", TasksClaim: "tasks",
		Scopes: workspace.OAuthScopes{Plan: "mcp.plan", MemoryWrite: "mcp.memory", TaskPrefix: "task/"}}}.WithDefaults()
	cases := []struct {
		name   string
		c      oauth.Config
		claims string
		want   tokens.Grant // Agent "" : refused
		says   string
	}{
		{"every right", def, `{"sub":"w1","scope":"workspace:task:t1 workspace:review workspace:plan workspace:done workspace:claim workspace:memory:write"}`,
			tokens.Grant{Agent: "w1", Tasks: []string{"t1"}, May: []string{"claim", "done", "plan", "review"}, GlobalMemory: tokens.GlobalWrite}, ""},
		{"read only", def, `{"sub":"w1","scope":"workspace:task:* workspace:memory:read"}`,
			tokens.Grant{Agent: "w1", Tasks: []string{"*"}, GlobalMemory: tokens.GlobalRead}, ""},
		{"scp as a list", def, `{"sub":"w1","scp":["workspace:task:t1","workspace:claim"]}`,
			tokens.Grant{Agent: "w1", Tasks: []string{"t1"}, May: []string{"claim"}, GlobalMemory: tokens.GlobalNone}, ""},
		{"tasks claim, twice named", def, `{"sub":"w1","workspace_tasks":["t1","t2"],"scope":"workspace:task:t1"}`,
			tokens.Grant{Agent: "w1", Tasks: []string{"t1", "t2"}, GlobalMemory: tokens.GlobalNone}, ""},
		{"tasks claim as a string", def, `{"sub":"w1","workspace_tasks":"t1 t2"}`,
			tokens.Grant{Agent: "w1", Tasks: []string{"t1", "t2"}, GlobalMemory: tokens.GlobalNone}, ""},
		{"custom mapping", custom, `{"sub":"x|y","azp":"planner","tasks":["t9"],"scope":"mcp.plan mcp.memory task/t3 workspace:plan"}`,
			tokens.Grant{Agent: "planner", Tasks: []string{"t9", "t3"}, May: []string{"plan"}, GlobalMemory: tokens.GlobalWrite}, ""},
		{"no agent", def, `{"scope":"workspace:task:t1"}`, tokens.Grant{}, `no claim "sub" naming the agent`},
		{"agent not an id", def, `{"sub":"auth0|123","scope":"workspace:task:t1"}`, tokens.Grant{}, `"auth0|123", is not an agent id`},
		{"agent not a string", def, `{"sub":12,"scope":"workspace:task:t1"}`, tokens.Grant{}, "naming the agent"},
		{"no task", def, `{"sub":"w1","scope":"workspace:claim"}`, tokens.Grant{}, "grants no task"},
		{"task not an id", def, `{"sub":"w1","scope":"workspace:task:../x"}`, tokens.Grant{}, `task "../x", which is not a task id`},
		{"scope a number", def, `{"sub":"w1","scope":5}`, tokens.Grant{}, `claim "scope" of the token is a float64`},
		{"tasks holding a number", def, `{"sub":"w1","workspace_tasks":["t1",2]}`, tokens.Grant{}, "holds a float64"},
		{"scope of another prefix", def, `{"sub":"w1","scope":"workspace:taskt1"}`, tokens.Grant{}, "grants no task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var claims map[string]any
			if err := json.Unmarshal([]byte(c.claims), &claims); err != nil {
				t.Fatal(err)
			}
			g, err := c.c.Grant(claims)
			if c.want.Agent == "" {
				if !errors.Is(err, oauth.ErrNoGrant) || !strings.Contains(err.Error(), c.says) {
					t.Fatalf("err = %v, want ErrNoGrant saying %q", err, c.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Agent != c.want.Agent || !reflect.DeepEqual(g.Tasks, c.want.Tasks) || !reflect.DeepEqual(g.May, c.want.May) || g.GlobalMemory != c.want.GlobalMemory {
				t.Errorf("grant = %+v, want %+v", g, c.want)
			}
			if err := g.Check(); err != nil {
				t.Errorf("the grant does not check: %v", err)
			}
		})
	}
}

// TestCheck refuses a configuration a server could not be safe with.
func TestCheck(t *testing.T) {
	t.Parallel()
	ok := "https://as.example.com"
	cases := []struct {
		name     string
		s        workspace.OAuthSettings
		says     string // "" : accepted
		hintsFix string
	}{
		{"https", workspace.OAuthSettings{Issuer: ok, Resource: "https://h/mcp"}, "", ""},
		{"loopback http", workspace.OAuthSettings{Issuer: "http://127.0.0.1:9000", Resource: "http://localhost:8765/mcp"}, "", ""},
		{"no resource", workspace.OAuthSettings{Issuer: ok}, "oauth.resource is missing", "--oauth-resource"},
		{"plain http off loopback", workspace.OAuthSettings{Issuer: "http://as.example.com", Resource: "https://h/mcp"}, "is not https", "https"},
		{"relative", workspace.OAuthSettings{Issuer: ok, Resource: "/mcp"}, "not an absolute URL", "https://host"},
		{"fragment", workspace.OAuthSettings{Issuer: ok, Resource: "https://h/mcp#x"}, "has a fragment", "#"},
		{"issuer query", workspace.OAuthSettings{Issuer: ok + "?a=b", Resource: "https://h/mcp"}, "has a query", "?"},
		{"scope with a space", workspace.OAuthSettings{Issuer: ok, Resource: "https://h/mcp", Scopes: workspace.OAuthScopes{Claim: "a b"}}, "scopes.claim", "single words"},
		{"empty audience", workspace.OAuthSettings{Issuer: ok, Resource: "https://h/mcp", Audiences: []string{""}}, "empty audience", "oauth.resource"},
	}
	for _, c := range cases {
		err := oauth.Config{OAuthSettings: c.s}.WithDefaults().Check()
		if c.says == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var we *workspace.Error
		if !errors.As(err, &we) || !strings.Contains(err.Error(), c.says) || !strings.Contains(we.Hint, c.hintsFix) {
			t.Errorf("%s: %v, want it to say %q and hint %q", c.name, err, c.says, c.hintsFix)
		}
	}
}

// FuzzGrant: whatever claims a token carries, the grant is either
// refused or one that checks, for an agent that is an id.
func FuzzGrant(f *testing.F) {
	for _, s := range []string{`{"sub":"w1","scope":"workspace:task:t1 workspace:claim"}`, `{"sub":"w1","workspace_tasks":["*"]}`, `{"sub":["x"]}`, `{}`} {
		f.Add(s)
	}
	c := oauth.Config{}.WithDefaults()
	f.Fuzz(func(t *testing.T, s string) {
		var claims map[string]any
		if json.Unmarshal([]byte(s), &claims) != nil {
			return
		}
		g, err := c.Grant(claims)
		if err != nil {
			if !errors.Is(err, oauth.ErrNoGrant) {
				t.Fatalf("%s: %v is not ErrNoGrant", s, err)
			}
			return
		}
		if err := g.Check(); err != nil || g.Agent != claims["sub"] {
			t.Fatalf("%s: grant %+v: %v", s, g, err)
		}
	})
}

// TestChallenge: the challenge names the metadata, the error and its
// description cut to what a quoted parameter may hold; insufficient_scope
// names the scopes that would do.
func TestChallenge(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	v := verifier(t, config(p.URL))
	meta := `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, c := range []struct {
		code, desc, want string
	}{
		{"", "", "Bearer " + meta},
		{oauth.ErrorInvalidToken, `expired at "now"` + "\n\\é", "Bearer " + meta + `, error="invalid_token", error_description="expired at 'now'"`},
		{oauth.ErrorInsufficientScope, "no task", "Bearer " + meta + `, error="insufficient_scope", error_description="no task", scope="workspace:claim workspace:done workspace:plan workspace:review workspace:memory:read workspace:memory:write workspace:task:*"`},
		{oauth.ErrorInvalidToken, strings.Repeat("x", 300), "Bearer " + meta + `, error="invalid_token", error_description="` + strings.Repeat("x", 200) + `"`},
	} {
		if got := v.Challenge(c.code, c.desc); got != c.want {
			t.Errorf("Challenge(%q, %q) =\n%s\nwant\n%s", c.code, c.desc, got, c.want)
		}
	}
}
