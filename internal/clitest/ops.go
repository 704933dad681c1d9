package clitest

import (
	"io"
	"net/http"
	"regexp"
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
