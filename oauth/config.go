// Package oauth is the OAuth resource-server mode of the HTTP listeners:
// the access tokens (JWT) an authorization server issues for this server
// are verified against the server's published keys — signature, issuer,
// expiry and audience (RFC 8707: this server's canonical URI) — and the
// agent and its rights are taken from their claims, as the workspace's
// settings map them. The listener publishes its Protected Resource
// Metadata (RFC 9728) so that a client finds the authorization server by
// itself.
//
// A token is checked and mapped to a tokens.Grant; it is never stored,
// logged or passed to anything else. A server without an issuer
// configured advertises no OAuth at all.
package oauth

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/workspaced/workspaced/tokens"
	"github.com/workspaced/workspaced/workspace"
)

// Defaults of the claims mapping.
const (
	DefaultAgentClaim  = "sub"
	DefaultTasksClaim  = "workspace_tasks"
	DefaultClaim       = "workspace:claim"
	DefaultDone        = "workspace:done"
	DefaultPlan        = "workspace:plan"
	DefaultReview      = "workspace:review"
	DefaultMemoryRead  = "workspace:memory:read"
	DefaultMemoryWrite = "workspace:memory:write"
	DefaultTaskPrefix  = "workspace:task:"
)

// WellKnown is the path of the Protected Resource Metadata (RFC 9728 §3):
// at the root, and followed by the resource's path.
const WellKnown = "/.well-known/oauth-protected-resource"

// Config is the OAuth mode of a listener: the settings of workspace.json
// with the defaults filled in (WithDefaults) and checked (Check).
type Config struct {
	workspace.OAuthSettings
}

// Enabled reports whether OAuth mode is on: an issuer is configured.
func (c Config) Enabled() bool { return c.Issuer != "" }

// WithDefaults returns c with every empty claim name and scope set to its
// default.
func (c Config) WithDefaults() Config {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&c.AgentClaim, DefaultAgentClaim)
	def(&c.TasksClaim, DefaultTasksClaim)
	def(&c.Scopes.Claim, DefaultClaim)
	def(&c.Scopes.Done, DefaultDone)
	def(&c.Scopes.Plan, DefaultPlan)
	def(&c.Scopes.Review, DefaultReview)
	def(&c.Scopes.MemoryRead, DefaultMemoryRead)
	def(&c.Scopes.MemoryWrite, DefaultMemoryWrite)
	def(&c.Scopes.TaskPrefix, DefaultTaskPrefix)
	return c
}

// Check reports what is wrong with an enabled configuration: an issuer
// or resource that is not an absolute https URL (http only on loopback),
// a resource with a fragment, a scope with a space.
func (c Config) Check() error {
	if err := checkURL("oauth.issuer", c.Issuer, true); err != nil {
		return err
	}
	if c.Resource == "" {
		return bad("oauth.resource is missing: a token's audience is checked against this server's canonical URI",
			"set oauth.resource in workspace.json (or --oauth-resource) to the URL clients reach, e.g. https://mcp.example.com/mcp")
	}
	if err := checkURL("oauth.resource", c.Resource, false); err != nil {
		return err
	}
	if c.JWKSURI != "" {
		if err := checkURL("oauth.jwks_uri", c.JWKSURI, true); err != nil {
			return err
		}
	}
	for name, v := range map[string]string{
		"agent_claim": c.AgentClaim, "tasks_claim": c.TasksClaim,
		"scopes.claim": c.Scopes.Claim, "scopes.done": c.Scopes.Done, "scopes.plan": c.Scopes.Plan, "scopes.review": c.Scopes.Review,
		"scopes.memory_read": c.Scopes.MemoryRead, "scopes.memory_write": c.Scopes.MemoryWrite, "scopes.task_prefix": c.Scopes.TaskPrefix,
	} {
		if v == "" || strings.ContainsAny(v, " \t\r\n\"\\") {
			return bad(fmt.Sprintf("oauth.%s %q is empty or holds a space, a quote or a backslash", name, v),
				"scope values and claim names are single words (RFC 6749 §3.3)")
		}
	}
	for _, a := range c.Audiences {
		if a == "" {
			return bad("oauth.audiences holds an empty audience", "list the audience values a token may carry beside oauth.resource")
		}
	}
	return nil
}

// checkURL refuses what is not an absolute https URL without a fragment,
// or http on a loopback host; with noQuery, a query too.
func checkURL(name, raw string, noQuery bool) error {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return bad(fmt.Sprintf("%s %q is not an absolute URL", name, raw), "write it as https://host[/path]")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return bad(fmt.Sprintf("%s %q has a fragment", name, raw), "leave the #… out (RFC 8707 §2)")
	}
	if noQuery && u.RawQuery != "" {
		return bad(fmt.Sprintf("%s %q has a query", name, raw), "leave the ?… out")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	default:
		return bad(fmt.Sprintf("%s %q is not https", name, raw), "use https (plain http only on a loopback address, for tests)")
	}
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func bad(msg, hint string) error {
	return &workspace.Error{Kind: workspace.ErrInvalid, Op: "oauth", Msg: msg, Hint: hint}
}

// ScopesSupported are the scope values the mapping reads, as the
// Protected Resource Metadata lists them: every right's, and the scope of
// every task.
func (c Config) ScopesSupported() []string {
	s := c.Scopes
	return []string{s.Claim, s.Done, s.Plan, s.Review, s.MemoryRead, s.MemoryWrite, s.TaskPrefix + tokens.AllTasks}
}

// MetadataURL is where the Protected Resource Metadata of the resource
// is: the well-known path inserted between the host and the resource's
// path (RFC 9728 §3.1).
func (c Config) MetadataURL() string {
	u, err := url.Parse(c.Resource)
	if err != nil {
		return ""
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + WellKnown + path
}

// MetadataPaths are the paths a listener serves the metadata at: the one
// of MetadataURL, and the root's (the form clients try when the resource
// has no path, and the fallback of others).
func (c Config) MetadataPaths() []string {
	u, err := url.Parse(c.MetadataURL())
	if err != nil || u.Path == WellKnown {
		return []string{WellKnown}
	}
	return []string{u.Path, WellKnown}
}
