package panel_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// panelSecret is a token file's secret as 'openssl rand -hex 32' makes one.
const panelSecret = "9c1f2e3d4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// TestWebLoginBrowser: in Chromium, a panel with a token file sends a
// page to the login; the right token logs in as the operator, whose name
// and a "Log out" button the page shows; the session cookie is not the
// readable by scripts (HttpOnly) and holds no secret; "Log out" ends the session, and the
// panel asks for the login again.
func TestWebLoginBrowser(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	w.Task("t1")
	p := w.Web("--token-file", w.WriteTokenFile("panel.token", panelSecret+"\n", 0o600))
	if strings.Contains(p.Stderr.String(), "any process on this machine") {
		t.Fatalf("a panel with a token file says every local process is trusted:\n%s", p.Stderr)
	}
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL+"/"), chromedp.WaitVisible(`input[name="token"]`)); err != nil {
		t.Fatal(err)
	}
	if path := js[string](t, ctx, `location.pathname`); path != "/login" {
		t.Fatalf("a page without a login shows %s, want /login", path)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(`input[name="token"]`, panelSecret), chromedp.Click(`button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	afterNavigation(t, ctx, "the tasks page after the login", `location.pathname === "/" && document.body.dataset.loaded === "1" && !!document.querySelector('#logout')`)
	if user := js[string](t, ctx, `document.querySelector('#user').textContent`); user != "operator" {
		t.Fatalf("the page names %q, want operator", user)
	}
	if c := js[string](t, ctx, `document.cookie`); strings.Contains(c, "wsd_session") || strings.Contains(c, panelSecret) {
		t.Fatalf("scripts read the session cookie or the secret: %q", c)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#logout`)); err != nil {
		t.Fatal(err)
	}
	afterNavigation(t, ctx, "the login page after the logout", `location.pathname === "/login" && !!document.querySelector('input[name="token"]')`)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL+"/"), chromedp.WaitVisible(`input[name="token"]`)); err != nil {
		t.Fatal(err)
	}
	if path := js[string](t, ctx, `location.pathname`); path != "/login" {
		t.Fatalf("after the logout a page shows %s, want /login", path)
	}
}

// afterNavigation waits until expr is truthy in the page, through the
// navigations a click started (an evaluation during one fails, and is
// tried again).
func afterNavigation(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s (%v)", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
