package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Defaults for workspace.json settings. Every setting is optional.
const (
	DefaultRoot             = "workspace"
	DefaultLockTimeout      = 30 * time.Second
	DefaultValueWarnBytes   = 100 << 10
	DefaultValueMaxBytes    = 1 << 20
	DefaultMaxFileBytes     = 16 << 20
	DefaultMaxDepth         = 64
	DefaultBackupsKeep      = 10
	DefaultFullDays         = 7
	DefaultSummaryDays      = 30
	DefaultHistoryKeep      = 100
	DefaultRescan           = 30 * time.Second
	DefaultGrace            = 5 * time.Second
	DefaultCleanupInterval  = 24 * time.Hour
	DefaultRevisionLimit    = 2
	DefaultReviewerRepeats  = 3
	DefaultFailureRepeats   = 2
	DefaultTimeoutLow       = 30 * time.Minute
	DefaultTimeoutMedium    = 2 * time.Hour
	DefaultTimeoutHigh      = 8 * time.Hour
	DefaultPreambleMaxBytes = 600
)

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration time.Duration

// MarshalJSON writes the duration as a string, as people write it: "24h",
// "2h30m", "1m30s", never "24h0m0s". Nothing is rounded.
func (d Duration) MarshalJSON() ([]byte, error) {
	s := time.Duration(d).String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return json.Marshal(s)
}

// UnmarshalJSON accepts a duration string ("90s", "2h") or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\" or a number of seconds")
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// Settings is workspace.json. Zero fields take the Default… values.
type Settings struct {
	// LockTimeout bounds every lock wait.
	LockTimeout Duration `json:"lock_timeout,omitzero"`
	// Mode is "default" (0644 files, 0755 dirs) or "private" (0600/0700).
	Mode      string            `json:"mode,omitempty"`
	Limits    LimitSettings     `json:"limits,omitzero"`
	Backups   BackupSettings    `json:"backups,omitzero"`
	Retention RetentionSettings `json:"retention,omitzero"`
	Daemon    DaemonSettings    `json:"daemon,omitzero"`
	Friction  FrictionSettings  `json:"friction,omitzero"`
	HTTP      HTTPSettings      `json:"http,omitzero"`
	OAuth     OAuthSettings     `json:"oauth,omitzero"`
	Audit     AuditSettings     `json:"audit,omitzero"`
	Plans     PlanSettings      `json:"plans,omitzero"`
}

// PlanSettings say how the daemon takes an amendment of a running plan.
type PlanSettings struct {
	// AmendmentReview says which amendments wait for a plan review
	// before they apply: AmendReviewChanges (the default: one that only
	// adds subtasks applies at once, one that changes or withdraws any
	// waits), AmendReviewAlways or AmendReviewNever.
	AmendmentReview string `json:"amendment_review,omitempty"`
}

// The values of PlanSettings.AmendmentReview.
const (
	AmendReviewChanges = "changes"
	AmendReviewAlways  = "always"
	AmendReviewNever   = "never"
)

// OAuthSettings put the HTTP listeners in OAuth resource-server mode:
// besides the tokens of the agents file, they accept the access tokens
// (JWT) an authorization server issues for this server, and take the
// agent and its rights from their claims. Empty Issuer: no OAuth at all.
// The oauth package reads them; empty fields take its defaults.
type OAuthSettings struct {
	// Issuer is the authorization server's issuer URL, whose published
	// keys sign the access tokens.
	Issuer string `json:"issuer,omitempty"`
	// Resource is this server's canonical URI, the audience a token must
	// be issued for (RFC 8707), as its clients reach it.
	Resource string `json:"resource,omitempty"`
	// JWKSURI, if set, is where the issuer's keys are, without discovery.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// Audiences accepted beside Resource, for a server that names its
	// audience otherwise.
	Audiences []string `json:"audiences,omitempty"`
	// AgentClaim names the claim whose value is the agent (an id).
	AgentClaim string `json:"agent_claim,omitempty"`
	// TasksClaim names a claim listing the tasks the token may work on.
	TasksClaim string `json:"tasks_claim,omitempty"`
	// Scopes are the scope values that grant each right.
	Scopes OAuthScopes `json:"scopes,omitzero"`
}

// OAuthScopes name the scope that grants each right of a token. A scope
// TaskPrefix+T grants task T, TaskPrefix+"*" every task.
type OAuthScopes struct {
	Claim       string `json:"claim,omitempty"`
	Done        string `json:"done,omitempty"`
	Plan        string `json:"plan,omitempty"`
	Review      string `json:"review,omitempty"`
	MemoryRead  string `json:"memory_read,omitempty"`
	MemoryWrite string `json:"memory_write,omitempty"`
	TaskPrefix  string `json:"task_prefix,omitempty"`
}

// HTTPSettings are the limits and trusts of every listener (serve
// --listen, web, mcp --http); their flags override them. Zero fields take
// the listener's defaults (docs/SECURITY.md lists them).
type HTTPSettings struct {
	// RequestsPerSecond and Burst bound the requests of one token.
	RequestsPerSecond float64 `json:"requests_per_second,omitempty"`
	Burst             int     `json:"burst,omitempty"`
	// AddressRequestsPerSecond and AddressBurst bound the requests of one
	// client address that carry no valid token.
	AddressRequestsPerSecond float64 `json:"address_requests_per_second,omitempty"`
	AddressBurst             int     `json:"address_burst,omitempty"`
	// StreamsPerToken bounds the live event streams one token holds open.
	StreamsPerToken int `json:"streams_per_token,omitempty"`
	// SessionsPerToken bounds the MCP sessions one token holds open.
	SessionsPerToken int `json:"sessions_per_token,omitempty"`
	// TrustedOrigins are browser origins trusted besides the listener's
	// own ("https://agents.example.com").
	TrustedOrigins []string `json:"trusted_origins,omitempty"`
	// TrustedProxies are the reverse proxies (addresses or CIDR prefixes)
	// whose X-Forwarded-For names the client.
	TrustedProxies []string `json:"trusted_proxies,omitempty"`
}

// AuditSettings bound an audit file (--audit-log): past MaxMegabytes
// it is rotated, and Keep rotated files are kept. Zero fields take the
// audit package's defaults (docs/SECURITY.md lists them).
type AuditSettings struct {
	MaxMegabytes int `json:"max_megabytes,omitempty"`
	Keep         int `json:"keep,omitempty"`
}

// LimitSettings bounds what agents may write and what the daemon reads.
type LimitSettings struct {
	ValueWarnBytes int `json:"value_warn_bytes,omitempty"`
	ValueMaxBytes  int `json:"value_max_bytes,omitempty"`
	MaxFileBytes   int `json:"max_file_bytes,omitempty"`
	MaxDepth       int `json:"max_depth,omitempty"`
}

// BackupSettings configures the rolling backups of state.json.
type BackupSettings struct {
	Keep int `json:"keep,omitempty"`
}

// DaemonSettings configures workspaced serve.
type DaemonSettings struct {
	Rescan          Duration `json:"rescan,omitzero"`
	Grace           Duration `json:"grace,omitzero"`
	CleanupInterval Duration `json:"cleanup_interval,omitzero"`
}

// FrictionSettings tunes the friction detectors.
type FrictionSettings struct {
	RevisionLimit   int      `json:"revision_limit,omitempty"`
	ReviewerRepeats int      `json:"reviewer_repeats,omitempty"`
	FailureRepeats  int      `json:"failure_repeats,omitempty"`
	TimeoutLow      Duration `json:"timeout_low,omitzero"`
	TimeoutMedium   Duration `json:"timeout_medium,omitzero"`
	TimeoutHigh     Duration `json:"timeout_high,omitzero"`
}

// WithDefaults returns s with every zero field set to its default.
func (s Settings) WithDefaults() Settings {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *Duration, d time.Duration) {
		if *v <= 0 {
			*v = Duration(d)
		}
	}
	defD(&s.LockTimeout, DefaultLockTimeout)
	if s.Mode == "" {
		s.Mode = "default"
	}
	def(&s.Limits.ValueWarnBytes, DefaultValueWarnBytes)
	def(&s.Limits.ValueMaxBytes, DefaultValueMaxBytes)
	def(&s.Limits.MaxFileBytes, DefaultMaxFileBytes)
	def(&s.Limits.MaxDepth, DefaultMaxDepth)
	def(&s.Backups.Keep, DefaultBackupsKeep)
	def(&s.Retention.FullDays, DefaultFullDays)
	def(&s.Retention.SummaryDays, DefaultSummaryDays)
	def(&s.Retention.HistoryKeep, DefaultHistoryKeep)
	defD(&s.Daemon.Rescan, DefaultRescan)
	defD(&s.Daemon.Grace, DefaultGrace)
	// CleanupInterval 0 in the file means "default"; the serve flag can turn it off.
	defD(&s.Daemon.CleanupInterval, DefaultCleanupInterval)
	def(&s.Friction.RevisionLimit, DefaultRevisionLimit)
	def(&s.Friction.ReviewerRepeats, DefaultReviewerRepeats)
	def(&s.Friction.FailureRepeats, DefaultFailureRepeats)
	defD(&s.Friction.TimeoutLow, DefaultTimeoutLow)
	defD(&s.Friction.TimeoutMedium, DefaultTimeoutMedium)
	defD(&s.Friction.TimeoutHigh, DefaultTimeoutHigh)
	if s.Plans.AmendmentReview == "" {
		s.Plans.AmendmentReview = AmendReviewChanges
	}
	return s
}

// Options tune how a workspace tree is opened (files.Open, files.Init).
type Options struct {
	// Now replaces time.Now (tests).
	Now func() time.Time
	// DefaultSettings opens the workspace with the default settings,
	// without reading workspace.json: for a checker (validate) that must
	// look at a tree whose workspace.json is itself broken.
	DefaultSettings bool
}

// ResolveRoot picks the root directory: flag, then $WORKSPACE_ROOT, then
// DefaultRoot in the working directory.
func ResolveRoot(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("WORKSPACE_ROOT"); env != "" {
		return env
	}
	return DefaultRoot
}
