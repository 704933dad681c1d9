package clitest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace/files"
)

var opsURLRe = regexp.MustCompile(`url=(https?://\S+/)`)

// OpsURL waits until the daemon's log says where its operations
// endpoints listen (serve --listen ADDR --log-level info) and returns
// that base URL, which ends in "/".
func (d *Daemon) OpsURL() string {
	d.t.Helper()
	var u string
	Eventually(d.t, "the operations endpoints' address in the log", func() (bool, string) {
		m := opsURLRe.FindStringSubmatch(d.Log.String())
		if m == nil {
			return false, d.Log.String()
		}
		u = m[1]
		return true, ""
	})
	return u
}

// HTTPGet is the status and body of a GET of u (status 0, and the error
// for a body, when it could not be reached).
func HTTPGet(u string) (int, string) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// AwaitReadyz waits until the operations endpoints at u (OpsURL's base)
// answer /readyz with code and a body holding word.
func AwaitReadyz(t testing.TB, u string, code int, word string) {
	t.Helper()
	Eventually(t, fmt.Sprintf("/readyz %d %q", code, word), func() (bool, string) {
		c, b := HTTPGet(u + "readyz")
		return c == code && strings.Contains(b, word), fmt.Sprintf("%d %s", c, b)
	})
}

// HoldTask drops a claim of st_6 in task id and holds the task's lock, so
// that the daemon's commit of it waits; release lets it go on.
func HoldTask(t testing.TB, x *files.Store, id string) (release func()) {
	t.Helper()
	lk, err := x.LockTask(context.Background(), id, "ops-test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.WriteClaim(context.Background(), id, "ops", "st_6"); err != nil {
		t.Fatal(err)
	}
	return func() { lk.Release() }
}
