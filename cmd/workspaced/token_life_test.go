package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/poll"
	"github.com/workspaced/workspaced/mcpserver"
	"github.com/workspaced/workspaced/tokens"
)

// mcpStream is an MCP session opened over plain HTTP with its standalone
// SSE stream open: ended is closed when the server ends the stream.
type mcpStream struct {
	id    string
	ended chan struct{}
}

// openStream initialises a session on url with token and opens its SSE
// stream (GET), as a client waiting for server messages does.
func openStream(t *testing.T, url, token string) *mcpStream {
	t.Helper()
	post := func(session, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, id)
	}
	resp = post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open the stream: %s", resp.Status)
	}
	s := &mcpStream{id: id, ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	return s
}

// endsWithin waits for the server to end s after what, and returns how
// long that took; a stream still open after 10 s fails the test (the
// server ends one within a second; the bound leaves room for a loaded
// machine).
func (s *mcpStream) endsWithin(t *testing.T, what string, since time.Time) time.Duration {
	t.Helper()
	select {
	case <-s.ended:
		return time.Since(since)
	case <-time.After(10 * time.Second):
		t.Fatalf("the SSE stream of session %s is still open 10 s after %s", s.id, what)
	}
	return 0
}

// TestTokenEndEndsStreams: a token revoked, rotated with no overlap, or
// expired ends the MCP sessions and SSE streams open on it (within a
// second: each is measured), frees their slots, and is refused from then
// on, saying why; a token rotated with an overlap keeps working until
// the overlap ends, and its successor works at once; token list shows the
// expiry, the successor and the last use. On a directory, a sqlite: and
// a postgres:// root.
func TestTokenEndEndsStreams(t *testing.T) {
	t.Parallel()
	for _, store := range []struct {
		name string
		ws   func(t *testing.T) *ws
	}{
		{"files", newWS},
		{"sqlite", func(t *testing.T) *ws { w, _ := clitest.NewSQLite(t); return &ws{w} }},
		{"postgres", func(t *testing.T) *ws { return &ws{clitest.At(t, newPGWS(t).Root)} }},
	} {
		t.Run(store.name, func(t *testing.T) {
			t.Parallel()
			w := store.ws(t)
			w.Task("t1")
			srv := w.mcpHTTP()

			revoked, revokedID := w.AddToken("--agent", "gone", "--task", "t1")
			s := openStream(t, srv.url, revoked)
			start := time.Now()
			w.Ok("token", "revoke", "--id", revokedID)
			t.Logf("revoke: the stream ended after %v", s.endsWithin(t, "the revoke", start))
			poll.Until(t, 10*time.Second, "the session's slot to be freed", func() (bool, string) {
				return strings.Contains(srv.Log.String(), "session closed"), srv.Log.String()
			})
			if _, err := clitest.ConnectMCP(t, srv.url, revoked); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "Unauthorized") {
				t.Fatalf("a revoked token connects: %v", err)
			}

			old, oldID := w.AddToken("--agent", "rot", "--task", "t1", "--ttl", "720h")
			s = openStream(t, srv.url, old)
			cs, err := clitest.ConnectMCP(t, srv.url, old)
			if err != nil {
				t.Fatal(err)
			}
			a := &mcpAgent{t: t, name: "rot", cs: cs, stderr: &clitest.Log{}}
			a.call(mcpserver.ToolStoreEnvData, map[string]any{"key": "k", "short_description": "d", "value": 1})
			var rot tokenRotateOutput
			clitest.Decode(t, w.Ok("token", "rotate", "--id", oldID, "--overlap", "1h", "--json"), &rot)
			if rot.Replaced != oldID || rot.Agent != "rot" || rot.ExpiresAt.Sub(rot.CreatedAt) < 719*time.Hour {
				t.Fatalf("rotate: %+v", rot)
			}
			// During the overlap both tokens work.
			a.call(mcpserver.ToolListEnvData, nil)
			if _, err := clitest.ConnectMCP(t, srv.url, rot.Token); err != nil {
				t.Fatalf("the new token: %v", err)
			}
			poll.Until(t, 10*time.Second, "token list to show the rotated token's successor, end and last use", func() (bool, string) {
				var list []tokenListItem
				clitest.Decode(t, w.Ok("token", "list", "--json"), &list)
				for _, o := range list {
					if o.ID == oldID {
						return o.RotatedTo == rot.ID && !o.ExpiresAt.IsZero() && !o.Ended && !o.LastUsedAt.IsZero(), fmt.Sprintf("%+v", o)
					}
				}
				return false, "not listed"
			})
			if out := w.Ok("token", "list"); !strings.Contains(out, "LAST USED") || !strings.Contains(out, rot.ID) {
				t.Fatalf("token list:\n%s", out)
			}
			w.Fails(exitFailure, "replaced already, by "+rot.ID, "token", "rotate", "--id", oldID)
			select {
			case <-s.ended:
				t.Fatal("the stream of a token rotated with an overlap ended during the overlap")
			default:
			}
			// Rotated again with no overlap: the middle token ends at once.
			s2 := openStream(t, srv.url, rot.Token)
			start = time.Now()
			w.Ok("token", "rotate", "--id", rot.ID, "--overlap", "0", "--json")
			t.Logf("rotate with no overlap: the stream ended after %v", s2.endsWithin(t, "the rotation", start))
			if text, isErr := a.try(mcpserver.ToolListEnvData, nil); isErr || text == "" {
				t.Fatalf("the first token, still in its overlap: %s", text)
			}

			short, _ := w.AddToken("--agent", "brief", "--task", "t1", "--ttl", "2s")
			s3 := openStream(t, srv.url, short)
			start = time.Now()
			s3.endsWithin(t, "the token's expiry", start)
			poll.Until(t, 10*time.Second, "a request with the expired token to be refused as expired", func() (bool, string) {
				_, err := clitest.ConnectMCP(t, srv.url, short)
				return err != nil, "it still connects"
			})
			if !strings.Contains(srv.Log.String(), "expired at") {
				t.Fatalf("the server's log does not say the token expired:\n%s", srv.Log)
			}
		})
	}
}

// TestTokenLifeFlags: the flags of a token's life refuse what makes no
// sense, with a hint.
func TestTokenLifeFlags(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	_, id := w.AddToken("--agent", "a", "--task", "t1")
	cases := []failCase{
		{"ttl and expires-at", exitUsage, "give one or the other", []string{"token", "add", "--agent", "a", "--task", "t1", "--ttl", "1h", "--expires-at", "2030-01-01T00:00:00Z"}},
		{"negative ttl", exitUsage, "--ttl must be positive", []string{"token", "add", "--agent", "a", "--task", "t1", "--ttl", "-1h"}},
		{"bad time", exitUsage, "is not an RFC 3339 time", []string{"token", "add", "--agent", "a", "--task", "t1", "--expires-at", "tomorrow"}},
		{"past expiry", exitFailure, "which is not after now", []string{"token", "add", "--agent", "a", "--task", "t1", "--expires-at", "2001-01-01T00:00:00Z"}},
		{"rotate without id", exitUsage, "--id", []string{"token", "rotate"}},
		{"rotate unknown", exitNotFound, "no such token", []string{"token", "rotate", "--id", "tk_000000000000"}},
		{"negative overlap", exitUsage, "--overlap must not be negative", []string{"token", "rotate", "--id", id, "--overlap", "-1m"}},
		{"revoke two ways", exitUsage, "give one of --id ID, --agent A or --ended", []string{"token", "revoke", "--id", id, "--ended"}},
	}
	failsWithHints(t, w, cases)
	// A token file whose token expired: refused at start, saying when and what to do.
	short, _ := w.AddToken("--agent", "a", "--task", "t1", "--ttl", "1s")
	file := w.WriteTokenFile("short.token", short, 0o600)
	w.Task("t1")
	poll.Until(t, 10*time.Second, "the token to expire", func() (bool, string) {
		r := w.Run("mcp", "--task", "t1", "--token-file", file)
		return r.Code == exitFailure && strings.Contains(r.Stderr, "expired at") && strings.Contains(r.Stderr, "token rotate"), r.Stderr
	})
	if out := w.Ok("token", "revoke", "--ended"); !strings.Contains(out, "revoked") {
		t.Fatalf("revoke --ended: %s", out)
	}
	if out := w.Ok("token", "revoke", "--ended"); !strings.Contains(out, "no token has ended") {
		t.Fatalf("revoke --ended with none: %s", out)
	}
	var list []tokenListItem
	clitest.Decode(t, w.Ok("token", "list", "--json"), &list)
	if len(list) != 1 || list[0].ExpiresAt != (tokens.Grant{}).ExpiresAt {
		t.Fatalf("list: %+v", list)
	}
}

// TestStdioMCPEndsWithItsToken: `mcp --token-file` on stdio ends, saying
// why, once its token is revoked or expires, instead of staying up and
// refusing every call; its client's stdin is still open.
func TestStdioMCPEndsWithItsToken(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	revoked, id := w.AddToken("--agent", "a", "--task", "t1")
	// An hour: long enough for a loaded machine to start the process
	// within it. Once it serves, its expiry is brought to a second from
	// then (as the agents file holds it): the session must end when the
	// clock passes it, nothing else changing.
	short, shortID := w.AddToken("--agent", "b", "--task", "t1", "--ttl", "1h")
	start := func(name, token string) (*clitest.Log, chan error) {
		cmd := clitest.Command("--root", w.Root, "mcp", "--task", "t1", "--token-file", w.WriteTokenFile(name, token, 0o600))
		cmd.Dir, cmd.Env = w.Dir, clitest.CleanEnv()
		stderr := &clitest.Log{}
		cmd.Stderr = stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close() })
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		poll.Until(t, time.Minute, name+" serving", func() (bool, string) {
			return strings.Contains(stderr.String(), "serving task t1"), stderr.String()
		})
		return stderr, done
	}
	ends := func(what string, stderr *clitest.Log, done chan error, want string) {
		t.Helper()
		select {
		case err := <-done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitFailure {
				t.Fatalf("%s: exit %v, want %d; stderr:\n%s", what, err, exitFailure, stderr)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: mcp still serving a minute later; stderr:\n%s", what, stderr)
		}
		if s := stderr.String(); !strings.Contains(s, want) || !strings.Contains(s, "hint: start mcp again with a valid token") {
			t.Fatalf("%s: stderr says no why:\n%s", what, s)
		}
	}
	errB, doneB := start("b.token", short)
	errA, doneA := start("a.token", revoked)
	w.Ok("token", "revoke", "--id", id)
	expiresAt := time.Now().Add(time.Second).UTC()
	err := tokens.Update(t.Context(), w.Open(), "test", func(d *tokens.FileDoc) error {
		for i := range d.Tokens {
			if d.Tokens[i].ID() == shortID {
				d.Tokens[i].ExpiresAt = expiresAt
				return nil
			}
		}
		return fmt.Errorf("no token %s", shortID)
	})
	if err != nil {
		t.Fatal(err)
	}
	ends("revoked", errA, doneA, "the token was revoked; the session is over")
	ends("expired", errB, doneB, "expired at "+expiresAt.Format(time.RFC3339))
}
