package clitest

import (
	"context"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddToken runs `workspaced token add --json ARGS` and returns the token
// and its id, failing the test unless they look like ones.
func (w *WS) AddToken(args ...string) (token, id string) {
	w.T.Helper()
	var out struct {
		Token string `json:"token"`
		ID    string `json:"id"`
	}
	Decode(w.T, w.Ok(append([]string{"token", "add", "--json"}, args...)...), &out)
	if !strings.HasPrefix(out.Token, "wsd_") || !strings.HasPrefix(out.ID, "tk_") {
		w.T.Fatalf("token add: %+v", out)
	}
	return out.Token, out.ID
}

// Listen starts `workspaced ARGS`, a server, in w's directory with w's
// environment, and waits until its output says where it listens: the
// first submatch of re. The test's cleanup kills it.
func (w *WS) Listen(re *regexp.Regexp, args ...string) (string, *Daemon) {
	w.T.Helper()
	cmd := exec.Command(Bin(), args...)
	cmd.Dir, cmd.Env = w.Dir, w.Env
	d := w.StartCmd(cmd)
	var url string
	Eventually(w.T, "workspaced "+strings.Join(args, " ")+" to say where it listens", func() (bool, string) {
		if m := re.FindStringSubmatch(d.Log.String()); m != nil {
			url = m[1]
			return true, ""
		}
		if !d.Running() {
			w.T.Fatalf("workspaced %q exited: %s", args, d.Log)
		}
		return false, d.Log.String()
	})
	return url, d
}

// Bearer is an http.RoundTripper that adds Token as a bearer token to
// every request it passes to Next (http.DefaultTransport when nil).
type Bearer struct {
	Token string
	Next  http.RoundTripper
}

// RoundTrip adds the Authorization header to a clone of r.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	next := b.Next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// ConnectMCP opens an MCP session on the streamable HTTP endpoint url
// with token; the test's cleanup closes it.
func ConnectMCP(t testing.TB, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: Bearer{Token: token}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "workspaced-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}
