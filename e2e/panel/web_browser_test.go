package panel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/workspaced/workspaced/demo"
	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/servetest"
	"github.com/workspaced/workspaced/web"
	"github.com/workspaced/workspaced/workspace"
	"github.com/workspaced/workspaced/workspace/daemon"
	"github.com/workspaced/workspaced/workspace/files"
)

// The panel in a real browser: Debian's Chromium, headless, driven over
// the DevTools protocol, against a real `workspaced web` and `workspaced
// serve`, with markers dropped by the CLI as agents drop them.

// chromium finds a Chromium binary, or skips the test saying how to get one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	optdep.Skip(t, "chromium", "no Chromium on this machine (Debian: apt-get install chromium; .ci/run installs it): the browser tests skip")
	return ""
}

// browser is the one headless Chromium of the test binary, started by the
// first test that asks for it; closeBrowser, from TestMain, stops it.
var browser struct {
	once  sync.Once
	ctx   context.Context // its first tab, which holds the browser
	err   error
	close func()
}

// newBrowser returns a tab for the test in a browser context of its own
// (cookies, storage and cache of its own, as a fresh profile has) of the
// test binary's Chromium; the tab and its context go when the test ends.
// The flags keep the browser from reaching for the network, which it
// would wait on where there is none.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "workspaced-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(exe),
			chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(1400, 1000),
			// Its singleton socket's directory goes with the profile when
			// the test binary stops it, not left in the system's /tmp.
			chromedp.Env("TMPDIR="+dir),
		)
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelC := chromedp.NewContext(actx)
		browser.ctx, browser.close = ctx, func() { cancelC(); cancelA(); os.RemoveAll(dir) }
		browser.err = chromedp.Do(ctx)
	})
	if browser.err != nil {
		t.Fatalf("start Chromium: %v", browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// closeBrowser stops the test binary's Chromium, if a test started it.
func closeBrowser() {
	if browser.close != nil {
		browser.close()
	}
}

// js evaluates expr in the page and decodes its value.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until expr is truthy in the page, at most d, and returns
// how long that took.
func waitJS(t *testing.T, ctx context.Context, what, expr string, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		left := d - time.Since(start)
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(max(left, time.Millisecond))))
		if err == nil {
			return time.Since(start)
		}
		// A navigation replaces the page's JavaScript context: a poll sent
		// to the one just gone is asked again in the new one.
		if !contextGone(err) || time.Since(start) >= d {
			t.Fatalf("%s: not within %v (%v)", what, d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// contextGone tells whether err is the browser saying the JavaScript
// context an evaluation was sent to no longer exists.
func contextGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}

func open(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	waitJS(t, ctx, "page loaded", `document.body.dataset.loaded === "1"`, 30*time.Second)
}

// cardIs is the expression true when subtask st's card shows status.
func cardIs(st, status string) string {
	return fmt.Sprintf(`!!document.querySelector('#board .card[data-subtask=%q][data-status=%q]')`, st, status)
}

// TestBrowserLive: the task page follows the daemon without a reload: a plan
// approved from the page starts its subtasks, claims and outputs dropped
// by the CLI move the cards and reach the timeline within 2 s, and a page
// reloaded while events stream in shows each of them exactly once.
func TestBrowserLive(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	p := w.Web()
	x := w.Open()
	w.ProposePlan(x, "t1", "Build the thing", 3, true)

	open(t, ctx, p.URL+"/tasks/t1")
	waitJS(t, ctx, "the approve button", `!!document.querySelector('#plan-approve')`, 2*time.Second)
	js[bool](t, ctx, `document.querySelector('#plan-approve').click(), true`)
	d := waitJS(t, ctx, "the subtasks started after approving from the page", cardIs("st_1", "pending")+" && "+cardIs("st_2", "blocked"), 5*time.Second)
	t.Logf("approve → board: %v", d)
	if !js[bool](t, ctx, `!!document.querySelector('#timeline .ev[data-event="plan_approved"]')`) {
		t.Error("the timeline lacks plan_approved")
	}

	w.Ok("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1")
	d = waitJS(t, ctx, "the claim on the board and the timeline", cardIs("st_1", "in_progress")+
		` && !!document.querySelector('#timeline .ev[data-event="work_assigned"]')`, 2*time.Second)
	t.Logf("claim marker → visible: %v", d)
	w.RunIn(`{"summary":"done"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-", "--done")
	d = waitJS(t, ctx, "the output on the board", cardIs("st_1", "completed")+" && "+cardIs("st_2", "pending")+
		` && !!document.querySelector('#timeline .ev[data-event="work_completed"]')`, 2*time.Second)
	t.Logf("done marker → visible: %v", d)

	// Events stream in while the page reloads; afterwards the timeline
	// holds each event of events.log once.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 40 {
			r, err := w.Exec("", "env", "store", "--task", "t1", "--agent", "w1", "--key", fmt.Sprintf("k%d", i), "--description", "d", "--value", "1")
			if err != nil || r.Code != 0 {
				t.Errorf("env store: %v %v", err, r)
				return
			}
		}
	})
	waitJS(t, ctx, "some of the stream", `document.querySelectorAll('#timeline .ev[data-event="env_stored"]').length >= 5`, 10*time.Second)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	evs, _, err := x.ReadEvents(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "every event after the reload", fmt.Sprintf(`document.body.dataset.loaded === "1" && document.querySelectorAll('#timeline .ev').length >= %d`, len(evs)), 10*time.Second)
	ids := js[[]string](t, ctx, `[...document.querySelectorAll('#timeline .ev')].map(e => e.dataset.id)`)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("event %s shown twice", id)
		}
		seen[id] = true
	}
	if len(ids) != len(evs) {
		t.Errorf("the timeline shows %d events, events.log holds %d", len(ids), len(evs))
	}
	if n := js[int](t, ctx, `document.querySelectorAll('#timeline .ev[data-event="env_stored"]').length`); n != 40 {
		t.Errorf("%d env_stored events shown, want 40", n)
	}
	// Then the stream goes on after the reload.
	w.Ok("claim", "--task", "t1", "--subtask", "st_2", "--agent", "w2")
	waitJS(t, ctx, "a claim after the reload", cardIs("st_2", "in_progress"), 2*time.Second)

	// The tasks page lists it, and follows a new task.
	open(t, ctx, p.URL+"/")
	waitJS(t, ctx, "t1 listed", `!!document.querySelector('#tasks tr[data-task="t1"]')`, 2*time.Second)
	w.Ok("task", "create", "--id", "t2", "--description", "Another")
	waitJS(t, ctx, "t2 listed without a reload", `!!document.querySelector('#tasks tr[data-task="t2"]')`, 2*time.Second)
}

// TestBrowserShowsAgentTextAsText: what agents write — task descriptions,
// env values and keys, session entries, outputs, event values, memory of
// every scope, friction — holding HTML and script shows as text on every
// page and every tab, and runs nothing.
func TestBrowserShowsAgentTextAsText(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	p := w.Web()
	x := w.Open()
	const evil = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2"><b>bold</b>`
	q, _ := json.Marshal(evil)
	w.Ok("task", "create", "--id", "t1", "--description", evil)
	w.Ok("env", "store", "--task", "t1", "--agent", "w1", "--key", `<img src=x onerror="window.__xss=3">`, "--description", evil, "--value", string(q))
	w.Ok("memory", "store", "--scope", "global", "--key", "style", "--description", evil, "--value", string(q), "--agent", "po")
	w.Ok("memory", "store", "--scope", "agent", "--agent", "observer", "--key", `<b>k</b>`, "--description", evil, "--value", string(q))
	w.Ok("memory", "store", "--scope", "session", "--task", "t1", "--thread", "t1", "--agent", "w1", "--key", "notes", "--description", evil, "--value", string(q))
	w.Ok("memory", "put", "--ns", "users", "--ns", evil, "--key", `<b>nk</b>`, "--value", `{"v":`+string(q)+`}`, "--agent", "po")
	w.Ok("friction", "add", "--type", "escalation", "--task", "t1", "--description", evil)
	w.RunIn(`{"summary":"s","subtasks":[{"id":"st_1","description":`+string(q)+`},{"id":"st_2","description":"two"}]}`, "plan", "write", "--task", "t1", "--file", "-", "--agent", "coordinator", "--propose")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "proposed" })
	w.RunIn(`{"type":"plan_review","verdict":"approved","notes":`+string(q)+`}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-", "--done")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.Status == "executing" })
	w.Ok("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1")
	w.RunIn(`{"summary":`+string(q)+`,"code":{"a.html":`+string(q)+`}}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-", "--done")
	w.Ok("task", "cancel", "--task", "t1", "--reason", evil)
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.Status == "cancelled" })

	check := func(page string) {
		t.Helper()
		if v := js[string](t, ctx, `String(window.__xss)`); v != "undefined" {
			t.Errorf("%s: a script ran (window.__xss = %s)", page, v)
		}
		if n := js[int](t, ctx, `document.querySelectorAll('main img, main script, main b').length`); n != 0 {
			t.Errorf("%s: %d elements made of agent text", page, n)
		}
		noObjectText(t, ctx, page)
	}
	open(t, ctx, p.URL+"/")
	waitJS(t, ctx, "the description as text", `document.querySelector('#tasks').textContent.includes('<script>window.__xss=1</script>')`, 5*time.Second)
	check("tasks")
	open(t, ctx, p.URL+"/tasks/t1")
	waitJS(t, ctx, "the description and the cancel reason as text", `document.querySelector('#description').textContent.includes('<img src=x') &&
		document.querySelector('#timeline').textContent.includes('reason=<script>')`, 5*time.Second)
	check("task")
	for _, tab := range []string{"board", "graph", "plan", "outputs", "threads", "env", "journal", "backups"} {
		js[bool](t, ctx, fmt.Sprintf(`document.querySelector('#tabs button[data-tab=%q]').click(), true`, tab))
		waitJS(t, ctx, tab+" shown", fmt.Sprintf(`document.querySelector('#panel').dataset.tab === %q`, tab), 5*time.Second)
		switch tab {
		case "board":
			waitJS(t, ctx, "the subtask description as text", `document.querySelector('#board').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
		case "plan":
			waitJS(t, ctx, "the subtask description as text", `document.querySelector('#panel').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
		case "outputs":
			waitJS(t, ctx, "the output button", `!!document.querySelector('button[data-output="st_1"]')`, 5*time.Second)
			js[bool](t, ctx, `document.querySelector('button[data-output="st_1"]').click(), true`)
			waitJS(t, ctx, "the output as text", `document.querySelector('#output-view').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
			waitJS(t, ctx, "the review notes as text", `document.querySelector('#reviews').textContent.includes('onerror="window.__xss=2"')`, 5*time.Second)
		case "env":
			waitJS(t, ctx, "the env key and description as text", `document.querySelector('#env').textContent.includes('<img src=x onerror="window.__xss=3">') &&
				document.querySelector('#env').textContent.includes('<b>bold</b>')`, 5*time.Second)
			js[bool](t, ctx, `document.querySelector('#env button').click(), true`)
			waitJS(t, ctx, "the env value as text", `document.querySelector('#env-value').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
			waitJS(t, ctx, "the session entry as text", `document.querySelector('#sessions').textContent.includes('Thread t1') &&
				document.querySelector('#session-t1').textContent.includes('<b>bold</b>')`, 5*time.Second)
			js[bool](t, ctx, `document.querySelector('#session-t1 button[data-key="notes"]').click(), true`)
			waitJS(t, ctx, "the session value as text", `document.querySelector('#env-value h3').textContent.startsWith('notes') &&
				document.querySelector('#env-value').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
		case "journal":
			waitJS(t, ctx, "the journal", `document.querySelectorAll('#journal tr[data-verdict]').length > 0`, 5*time.Second)
		}
		check("task, " + tab)
	}
	open(t, ctx, p.URL+"/memory")
	waitJS(t, ctx, "the global description as text", `document.querySelector('[data-scope="global"]').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
	js[bool](t, ctx, `document.querySelector('[data-scope="global"] button').click(), true`)
	waitJS(t, ctx, "the global value as text", `document.querySelector('#memory-value').textContent.includes('<script>')`, 5*time.Second)
	waitJS(t, ctx, "the agent's key and description as text", `(() => { const a = document.querySelector('[data-agent="observer"]');
		return !!a && a.textContent.includes('<b>k</b>') && a.textContent.includes('<img src=x onerror="window.__xss=2">') })()`, 5*time.Second)
	js[bool](t, ctx, `document.querySelector('[data-agent="observer"] button').click(), true`)
	waitJS(t, ctx, "the agent's value as text", `document.querySelector('#memory-value h3').textContent === '<b>k</b>' &&
		document.querySelector('#memory-value').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
	check("memory")
	waitJS(t, ctx, "the namespace's label as text", `document.querySelector('#namespaces').textContent.includes('users / <script>window.__xss=1')`, 5*time.Second)
	js[bool](t, ctx, `document.querySelector('#namespaces button[data-namespace]').click(), true`)
	waitJS(t, ctx, "the item's key as text", `document.querySelector('#namespace-items').textContent.includes('<b>nk</b>')`, 5*time.Second)
	js[bool](t, ctx, `document.querySelector('#namespace-items button').click(), true`)
	waitJS(t, ctx, "the item's value as text", `document.querySelector('#memory-value h3').textContent.endsWith(' : <b>nk</b>') &&
		document.querySelector('#memory-value').textContent.includes('<img src=x onerror')`, 5*time.Second)
	check("memory, namespaces")
	open(t, ctx, p.URL+"/friction")
	waitJS(t, ctx, "the friction entry as text", `document.querySelector('#friction').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
	if links := js[[]string](t, ctx, `[...document.querySelectorAll('#friction a')].map(a => a.getAttribute('href') + ' ' + a.textContent)`); len(links) != 1 || links[0] != "/tasks/t1 t1" {
		t.Errorf("friction's tasks column links %q, want one link /tasks/t1 named t1", links)
	}
	check("friction")
	// The policy is in force: an inline script injected by hand does not run.
	js[bool](t, ctx, `(() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1'; document.body.append(s); return true })()`)
	if v := js[string](t, ctx, `String(window.__inline)`); v != "undefined" {
		t.Errorf("an inline script ran despite the Content-Security-Policy")
	}
}

// noObjectText fails the test when the page's main shows a JavaScript
// object's default text ("[object HTMLTableElement]") or a list joined
// by commas where elements belong.
func noObjectText(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if txt := js[string](t, ctx, `document.querySelector('main').innerText`); strings.Contains(txt, "[object ") {
		t.Errorf("%s shows a JavaScript object as text:\n%s", page, txt)
	}
}

// TestBrowserShowsTheDaemonsWord: every status the task page shows is the
// state's, as the daemon wrote it: the plan versions by the state's
// plan_status (not plan.json's own), the journal's records by their
// verdict (a lost claim race is lost, with its reason, as the timeline
// says), and no view shows an object's text.
func TestBrowserShowsTheDaemonsWord(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	p := w.Web()
	x := w.Open()
	w.ProposePlan(x, "t1", "Race", 2, false)
	w.OkIn(`{"type":"plan_review","verdict":"revision_needed","notes":"smaller"}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-", "--done")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "revision_needed" })
	w.OkIn(clitest.PlanJSON(3, false), "plan", "write", "--task", "t1", "--file", "-", "--agent", "coordinator", "--propose")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "proposed" && s.PlanVersion == 2 })
	w.OkIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "r2", "--agent", "rev", "--file", "-", "--done")
	clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "approved" })
	w.Ok("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--wait")
	if r := w.Run("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w2", "--wait"); r.Code != 4 {
		t.Fatalf("the second claim: want exit 4 (lost), got %v", r)
	}
	st := clitest.StateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "approved" && s.PlanVersion == 2 })

	open(t, ctx, p.URL+"/tasks/t1#plan")
	waitJS(t, ctx, "the plan tab", `document.querySelector('#panel').dataset.tab === "plan"`, 5*time.Second)
	if got := js[string](t, ctx, `document.querySelector('#plan-title').textContent`); got != "Plan v2 approved" {
		t.Errorf("the plan's title says %q, want %q (state.plan_status %s)", got, "Plan v2 approved", st.PlanStatus)
	}
	if got := js[[]string](t, ctx, `[...document.querySelectorAll('#diff-to option')].map(o => o.textContent)`); !slices.Equal(got, []string{"v1 (revision_needed)", "v2 (approved)"}) {
		t.Errorf("the versions are labelled %q, want v1 (revision_needed), v2 (approved)", got)
	}
	if txt := js[string](t, ctx, `document.querySelector('#panel').innerText`); strings.Contains(txt, "proposed") {
		t.Errorf("the plan tab says proposed; the state says %s:\n%s", st.PlanStatus, txt)
	}
	noObjectText(t, ctx, "plan")

	js[bool](t, ctx, `document.querySelector('#tabs button[data-tab="journal"]').click(), true`)
	waitJS(t, ctx, "the journal", `document.querySelector('#panel').dataset.tab === "journal"`, 5*time.Second)
	rows := js[[]string](t, ctx, `[...document.querySelectorAll('#journal tr[data-verdict]')].map(r => r.cells[3].textContent + ' ' + r.cells[2].textContent + ': ' + r.cells[6].textContent)`)
	want := []string{
		"w2 claim: lost subtask st_1 already taken by w1",
		"w1 claim: won",
		"rev done: applied",
		"coordinator done: applied",
		"rev done: applied",
		"coordinator done: applied",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("the journal shows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if !js[bool](t, ctx, `!!document.querySelector('#timeline .ev[data-event="claim_refused"]')`) {
		t.Error("the timeline lacks claim_refused")
	}
	noObjectText(t, ctx, "journal")
}

// TestWebRefusesOpenListen: a non-loopback address without a token file
// is refused at start, saying why and what to do.
func TestWebRefusesOpenListen(t *testing.T) {
	t.Parallel()
	w := newWS(t)
	r := w.Fails(2, "not a loopback address", "web", "--listen", "0.0.0.0:0")
	if !strings.Contains(r.Stderr, "hint: give --token-file") {
		t.Errorf("no hint:\n%s", r.Stderr)
	}
	empty := w.Dir + "/empty-token"
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.Fails(1, "is empty", "web", "--listen", "0.0.0.0:0", "--token-file", empty)
	w.Fails(1, "no such file", "web", "--token-file", w.Dir+"/missing")
}

// hostile is agent text that would run or make elements if it were ever
// parsed as HTML.
const hostile = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2"><b>bold</b>`

// demoPanel is a workspace the demo made (in-process), served by an
// in-process panel, and by a daemon when serve is set (the demo's own
// daemon stops with it).
type demoPanel struct {
	root string
	x    *files.Store
	URL  string
}

// finishedDemo is the workspace the demo made, once per test binary
// (in-process, its daemon stopped with it): each demoPanel serves a copy
// of its own. removeDemo removes it once the tests are done.
var finishedDemo struct {
	once sync.Once
	dir  string // holds the workspace, "demo"
	err  error
}

func removeDemo() {
	if finishedDemo.dir != "" {
		os.RemoveAll(finishedDemo.dir)
	}
}

// newDemoPanel serves a copy of the workspace the demo made.
func newDemoPanel(tb testing.TB, serve bool) *demoPanel {
	tb.Helper()
	finishedDemo.once.Do(func() {
		if finishedDemo.dir, finishedDemo.err = os.MkdirTemp("", "panel-demo-"); finishedDemo.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, finishedDemo.err = demo.Run(ctx, demo.Config{Root: filepath.Join(finishedDemo.dir, "demo"), TimeScale: 0.01, Quiet: true})
	})
	if finishedDemo.err != nil {
		tb.Fatalf("demo: %v", finishedDemo.err)
	}
	root := filepath.Join(tb.TempDir(), "demo")
	if err := os.CopyFS(root, os.DirFS(filepath.Join(finishedDemo.dir, "demo"))); err != nil {
		tb.Fatalf("copy the demo's workspace: %v", err)
	}
	x, err := files.Open(root, workspace.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	if serve {
		servetest.StartTree(tb, root, 100*time.Millisecond, daemon.Config{Rescan: time.Hour})
	}
	s, err := web.New(web.Config{Store: x})
	if err != nil {
		tb.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx) }()
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.BaseContext = func(net.Listener) context.Context { return rctx }
	srv.Start()
	tb.Cleanup(func() { stop(); srv.CloseClientConnections(); srv.Close(); <-done })
	select {
	case <-s.Ready():
	case err := <-done:
		tb.Fatalf("the panel stopped: %v", err)
	}
	return &demoPanel{root: root, x: x, URL: srv.URL}
}

// await polls cond until it holds, at most d.
func awaitTB(tb testing.TB, what string, d time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *demoPanel) state(tb testing.TB, id string) workspace.State {
	st, _ := p.x.ReadState(context.Background(), id)
	return st
}

// bigTask creates task id with a plan of n subtasks in layers (st_i
// depends on st_(i-5) and, every third, on st_(i-1)), hostile
// descriptions, and a checkpoint over the first five, approved; then
// claims and completes the first done of them.
func (p *demoPanel) bigTask(tb testing.TB, id string, n, done int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := p.x.CreateTask(ctx, workspace.NewTaskRequest{ID: id, Description: hostile}); err != nil {
		tb.Fatal(err)
	}
	var subs []map[string]any
	for i := 1; i <= n; i++ {
		deps := []string{}
		if i > 5 {
			deps = append(deps, fmt.Sprintf("st_%d", i-5))
		}
		if i > 5 && i%3 == 0 {
			deps = append(deps, fmt.Sprintf("st_%d", i-1))
		}
		subs = append(subs, map[string]any{"id": fmt.Sprintf("st_%d", i), "description": fmt.Sprintf("%s %d", hostile, i), "dependencies": deps})
	}
	doc := map[string]any{"summary": hostile, "subtasks": subs}
	if n >= 5 {
		doc["checkpoints"] = []map[string]any{{"id": "cp_1", "description": hostile, "subtasks": []string{"st_1", "st_2", "st_3", "st_4", "st_5"}}}
	}
	plan, _ := json.Marshal(doc)
	if _, err := p.x.WritePlan(ctx, id, "coordinator", plan); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.x.WriteDone(ctx, workspace.DoneRequest{TaskID: id, Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		tb.Fatal(err)
	}
	awaitTB(tb, "plan proposed", 10*time.Second, func() bool { return p.state(tb, id).PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctx, p.x, id); err != nil {
		tb.Fatal(err)
	}
	awaitTB(tb, "executing", 10*time.Second, func() bool { return p.state(tb, id).Status == "executing" })
	for i := 1; i <= done; i++ {
		st := fmt.Sprintf("st_%d", i)
		agent := fmt.Sprintf("w%d", i%3)
		if _, err := p.x.WriteClaim(ctx, id, agent, st); err != nil {
			tb.Fatal(err)
		}
		awaitTB(tb, st+" claimed", 10*time.Second, func() bool { s := p.state(tb, id).Subtasks[st]; return s != nil && s.Status == "in_progress" })
		out, err := p.x.WriteOutput(ctx, id, st, agent, []byte(`{"summary":"done"}`))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := p.x.WriteDone(ctx, workspace.DoneRequest{TaskID: id, Agent: agent, SubtaskID: st, OutputFile: out}); err != nil {
			tb.Fatal(err)
		}
		awaitTB(tb, st+" done", 10*time.Second, func() bool { return p.state(tb, id).Subtasks[st].Status == "completed" })
	}
}

// noScript fails when agent text ran or became elements on the page.
func noScript(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if v := js[string](t, ctx, `String(window.__xss)`); v != "undefined" {
		t.Errorf("%s: a script ran (window.__xss = %s)", page, v)
	}
	if n := js[int](t, ctx, `document.querySelectorAll('main img, main script, main b:not([data-ok]), main svg b').length`); n != 0 {
		html := js[string](t, ctx, `[...document.querySelectorAll('main img, main script, main b')].map(e => e.outerHTML).join('\n')`)
		if strings.Contains(html, "bold") || strings.Contains(html, "img") || strings.Contains(html, "script") {
			t.Errorf("%s: %d elements made of agent text:\n%s", page, n, html)
		}
	}
	noObjectText(t, ctx, page)
}

func tab(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	js[bool](t, ctx, fmt.Sprintf(`document.querySelector('#tabs button[data-tab=%q]').click(), true`, name))
	waitJS(t, ctx, name+" shown", fmt.Sprintf(`document.querySelector('#panel').dataset.tab === %q`, name), 10*time.Second)
}

// TestBrowserGraph: a plan of 50 subtasks drawn as a graph: one node per
// subtask with its status, worker and attempts, none overlapping another,
// an arrow per dependency pointing from the dependency to its dependent,
// the checkpoint after its subtasks, the critical path highlighted as a
// chain, details on click; hostile descriptions stay text. The demo's
// finished task has its critical path by duration.
func TestBrowserGraph(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, true)
	p.bigTask(t, "big", 50, 3)
	open(t, ctx, p.URL+"/tasks/big#graph")
	waitJS(t, ctx, "50 nodes", `document.querySelectorAll('#graph g.node').length === 50`, 10*time.Second)
	type box struct {
		ID         string
		X, Y, W, H float64
	}
	boxes := js[[]box](t, ctx, `[...document.querySelectorAll('#graph g.node, #graph g.checkpoint')].map(g => { const r = g.getBoundingClientRect();
		return {ID: g.dataset.subtask || g.dataset.checkpoint, X: r.x, Y: r.y, W: r.width, H: r.height} })`)
	if len(boxes) != 51 {
		t.Fatalf("%d nodes and checkpoints, want 51", len(boxes))
	}
	for i, a := range boxes {
		if a.W < 20 || a.H < 20 {
			t.Errorf("%s is %vx%v", a.ID, a.W, a.H)
		}
		for _, b := range boxes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("%s %+v overlaps %s %+v", a.ID, a, b.ID, b)
			}
		}
	}
	// Every arrow goes from the dependency (left) to its dependent (right).
	bad := js[[]string](t, ctx, `(() => { const out = [], box = (id) => document.querySelector('#graph g.node[data-subtask="' + id + '"] rect').getBoundingClientRect();
		const edges = [...document.querySelectorAll('#graph path.edge[data-from]')];
		for (const e of edges) { const r = e.getBoundingClientRect(), a = box(e.dataset.from), b = box(e.dataset.to);
			if (!(a.right <= r.left + 1 && r.right <= b.left + 1)) out.push(e.dataset.from + '>' + e.dataset.to); }
		if (edges.length !== 60) out.push('edges: ' + edges.length); return out })()`)
	if len(bad) > 0 {
		t.Errorf("arrows not from dependency to dependent: %v", bad)
	}
	if got := js[string](t, ctx, `document.querySelector('#graph g.node[data-subtask="st_2"]').textContent`); !strings.Contains(got, "completed") || !strings.Contains(got, "w2") || !strings.Contains(got, "attempts 1") {
		t.Errorf("st_2's node says %q, want its status, worker and attempts", got)
	}
	if !js[bool](t, ctx, `(() => { const c = document.querySelector('#graph g.checkpoint[data-checkpoint="cp_1"]').getBoundingClientRect(),
		s = document.querySelector('#graph g.node[data-subtask="st_5"]').getBoundingClientRect(), n = document.querySelector('#graph g.node[data-subtask="st_6"]').getBoundingClientRect();
		return c.left >= s.right && c.right <= n.left })()`) {
		t.Error("the checkpoint is not between its subtasks and the next column")
	}
	// The critical path while running is by count: the longest chain of
	// dependencies, each a dependency of the next.
	longest := map[int]int{}
	for i := 1; i <= 50; i++ {
		longest[i] = 1
		if i > 5 {
			longest[i] = max(longest[i], longest[i-5]+1)
		}
		if i > 5 && i%3 == 0 {
			longest[i] = max(longest[i], longest[i-1]+1)
		}
	}
	want := 0
	for _, v := range longest {
		want = max(want, v)
	}
	chain := js[[]string](t, ctx, `(() => { const on = new Set([...document.querySelectorAll('#graph g.node.crit')].map(g => g.dataset.subtask));
		return [...document.querySelectorAll('#graph path.edge.crit')].map(e => e.dataset.from + '>' + e.dataset.to).concat([...on]) })()`)
	if len(chain) != 2*want-1 || js[string](t, ctx, `document.querySelector('#graph').dataset.criticalBy`) != "count" {
		t.Errorf("critical path %v (by %s), want %d subtasks by count, linked by %d arrows", chain, js[string](t, ctx, `document.querySelector('#graph').dataset.criticalBy`), want, want-1)
	}
	js[bool](t, ctx, `document.querySelector('#graph g.node[data-subtask="st_9"]').dispatchEvent(new MouseEvent('click', {bubbles: true})), true`)
	waitJS(t, ctx, "st_9's details", `(() => { const d = document.querySelector('#graph-detail[data-subtask="st_9"]');
		return !!d && d.textContent.includes('<script>window.__xss=1</script>') && d.textContent.includes('st_4, st_8') && d.textContent.includes('st_14') })()`, 5*time.Second)
	if js[bool](t, ctx, `!!document.getElementById('no-daemon')`) {
		t.Error("the no-daemon banner shows while a daemon serves")
	}
	noScript(t, ctx, "graph")

	open(t, ctx, p.URL+"/tasks/"+demo.TaskID+"#graph")
	waitJS(t, ctx, "the demo's graph", `document.querySelector('#graph')?.dataset.criticalBy === "duration" && document.querySelectorAll('#graph g.node.crit').length > 1`, 10*time.Second)
	if !js[bool](t, ctx, `document.querySelector('#critical-path').textContent.includes('by duration')`) {
		t.Error("the caption does not say the path is by duration")
	}
}

// TestBrowserChangesInWords: the plan tab says what changed from v1 to
// v2 subtask by subtask, field by field (no line of JSON); an output
// that was rewritten after a failure shows what changed in it.
func TestBrowserChangesInWords(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, false)
	open(t, ctx, p.URL+"/tasks/"+demo.TaskID+"#plan")
	waitJS(t, ctx, "the comparison", `!!document.querySelector('#plan-diff-summary')`, 10*time.Second)
	txt := js[string](t, ctx, `document.querySelector('#plan-diff').innerText`)
	if !strings.Contains(txt, "From v1 to v2") || strings.Contains(txt, `"id":`) || strings.Contains(txt, "{") && !strings.Contains(txt, "→") {
		t.Errorf("the comparison says:\n%s", txt)
	}
	if n := js[int](t, ctx, `document.querySelectorAll('#plan-diff [data-added], #plan-diff [data-removed], #plan-diff [data-changed]').length`); n == 0 {
		t.Errorf("no subtask added, removed or changed:\n%s", txt)
	}
	tab(t, ctx, "outputs")
	js[bool](t, ctx, fmt.Sprintf(`document.querySelector('button[data-output=%q]').click(), true`, demo.FailingSubtask))
	waitJS(t, ctx, "the output's changes", `!!document.querySelector('#output-diff li[data-field="status"]')`, 10*time.Second)
	noScript(t, ctx, "outputs")
}

// TestBrowserTime: the Gantt chart has a bar per attempt in its worker's
// row (the retried subtask twice, the first failed and retried); a race
// of refused claims folds into one timeline line; a long attribute is
// never broken inside.
func TestBrowserTime(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, true)
	st := p.state(t, demo.TaskID)
	attempts := 0
	for _, s := range st.Subtasks {
		attempts += s.Attempts
	}
	open(t, ctx, p.URL+"/tasks/"+demo.TaskID+"#time")
	waitJS(t, ctx, "the bars", fmt.Sprintf(`document.querySelectorAll('#gantt g.span').length === %d`, attempts), 30*time.Second)
	// Bars are drawn row by row (worker by worker): read them in attempt order.
	got := js[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#gantt g.span[data-subtask=%q]')].map(g => g.dataset.attempt + ' ' + g.dataset.outcome + ' ' + (g.dataset.retry || ''))`, demo.FailingSubtask))
	slices.Sort(got)
	if !slices.Equal(got, []string{"1 failed 1", "2 completed "}) {
		t.Errorf("the retried subtask's bars: %q", got)
	}
	for id, s := range st.Subtasks {
		if !js[bool](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#gantt g.span[data-subtask=%q]')].sort((a, b) => a.dataset.attempt - b.dataset.attempt).pop().dataset.worker === %q`, id, s.Worker)) {
			t.Errorf("%s's last bar is not in %s's row", id, s.Worker)
		}
	}

	p.bigTask(t, "race", 2, 0)
	open(t, ctx, p.URL+"/tasks/race")
	ctxb := context.Background()
	if _, err := p.x.WriteClaim(ctxb, "race", "winner", "st_1"); err != nil {
		t.Fatal(err)
	}
	awaitTB(t, "won", 10*time.Second, func() bool { return p.state(t, "race").Subtasks["st_1"].Worker == "winner" })
	long := strings.Repeat("averyveryverylongagentname", 3)
	for _, a := range []string{"l1", "l2", long} {
		seq := p.state(t, "race").JournalSeq
		if _, err := p.x.WriteClaim(ctxb, "race", a, "st_1"); err != nil {
			t.Fatal(err)
		}
		awaitTB(t, "refused", 10*time.Second, func() bool { return p.state(t, "race").JournalSeq > seq })
	}
	waitJS(t, ctx, "one line for the three refusals", `(() => { const f = document.querySelector('#timeline > .ev.fold');
		return !!f && f.dataset.count === "3" && f.textContent.includes('3 claims refused') && f.textContent.includes('st_1 ← ') })()`, 30*time.Second)
	if n := js[int](t, ctx, `document.querySelectorAll('#timeline > .ev[data-event="claim_refused"]').length`); n != 1 {
		t.Errorf("%d lines of refused claims, want 1", n)
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "folded after a reload", `document.querySelector('#timeline > .ev.fold')?.dataset.count === "3"`, 30*time.Second)
	js[bool](t, ctx, `document.querySelector('#timeline > .ev.fold').click(), true`)
	broken := js[[]string](t, ctx, `[...document.querySelectorAll('#timeline .kv')].filter(k => k.offsetParent && k.getClientRects().length > 1).map(k => k.textContent)`)
	if len(broken) > 0 || js[string](t, ctx, `getComputedStyle(document.querySelector('#timeline .kv')).whiteSpace`) != "nowrap" {
		t.Errorf("attributes broken across lines: %q", broken)
	}
	noScript(t, ctx, "timeline")
}

// TestBrowserFindAndPages: search within a task finds env data, events
// and outputs (hostile text as text); the task list filters by status
// and text and pages by 100.
func TestBrowserFindAndPages(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, false)
	open(t, ctx, p.URL+"/tasks/"+demo.ARCTaskID+"#search")
	js[bool](t, ctx, `(() => { const i = document.querySelector('#task-search'); i.value = 'PATTERN'; i.dispatchEvent(new Event('input')); return true })()`)
	waitJS(t, ctx, "hits", `document.querySelector('#search-results')?.dataset.query === 'PATTERN'`, 10*time.Second)
	kinds := js[[]string](t, ctx, `[...new Set([...document.querySelectorAll('#search-hits tr[data-kind]')].map(r => r.dataset.kind))].sort()`)
	if !slices.Equal(kinds, []string{"env", "event"}) {
		t.Errorf("hits in %v, want env and event", kinds)
	}
	if n := js[int](t, ctx, `document.querySelectorAll('#search-hits mark').length`); n == 0 {
		t.Error("no match marked")
	}
	ctxb := context.Background()
	for i := range 230 {
		d := fmt.Sprintf("bulk task %d", i)
		if i == 7 {
			d = hostile
		}
		if _, err := p.x.CreateTask(ctxb, workspace.NewTaskRequest{ID: fmt.Sprintf("bulk_%03d", i), Description: d}); err != nil {
			t.Fatal(err)
		}
	}
	open(t, ctx, p.URL+"/")
	waitJS(t, ctx, "100 rows", `document.querySelectorAll('#tasks tr').length === 100 && document.querySelector('#count').textContent === '1–100 of 232'`, 10*time.Second)
	js[bool](t, ctx, `document.querySelector('#next').click(), true`)
	waitJS(t, ctx, "the second page", `document.querySelector('#count').textContent === '101–200 of 232' && document.querySelector('#tasks tr').dataset.task === 'bulk_098'`, 10*time.Second)
	js[bool](t, ctx, `document.querySelector('#next').click(), true`)
	waitJS(t, ctx, "the last page", `document.querySelectorAll('#tasks tr').length === 32 && document.querySelector('#next').disabled`, 10*time.Second)
	js[bool](t, ctx, `(() => { const f = document.querySelector('#status-filter'); f.value = 'completed'; f.dispatchEvent(new Event('change')); return true })()`)
	waitJS(t, ctx, "completed only", `document.querySelectorAll('#tasks tr').length === 1 && document.querySelector('#tasks tr').dataset.task === 'auth_api'`, 10*time.Second)
	js[bool](t, ctx, `(() => { const f = document.querySelector('#status-filter'); f.value = ''; f.dispatchEvent(new Event('change'));
		const s = document.querySelector('#search'); s.value = 'script'; s.dispatchEvent(new Event('input')); return true })()`)
	waitJS(t, ctx, "the hostile task found by text", `document.querySelectorAll('#tasks tr').length === 1 && document.querySelector('#tasks').textContent.includes('<script>window.__xss=1')`, 10*time.Second)
	noScript(t, ctx, "tasks")
}

// TestBrowserReplay: the scrubber shows the board as of any record: none
// before the plan, the state's own at every record the server folds,
// everything completed at the end.
func TestBrowserReplay(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, false)
	last := p.state(t, demo.TaskID).JournalSeq
	open(t, ctx, p.URL+"/tasks/"+demo.TaskID+"#replay")
	waitJS(t, ctx, "the end", fmt.Sprintf(`document.querySelector('#replay-board')?.dataset.seq === "%d" && document.querySelectorAll('#replay-board .card[data-status="completed"]').length === 7`, last), 10*time.Second)
	seek := func(n int64) {
		js[bool](t, ctx, fmt.Sprintf(`(() => { const r = document.querySelector('#replay-seq'); r.value = '%d'; r.dispatchEvent(new Event('input')); return true })()`, n))
		waitJS(t, ctx, fmt.Sprintf("record %d", n), fmt.Sprintf(`document.querySelector('#replay-board').dataset.seq === "%d"`, n), 10*time.Second)
	}
	seek(0)
	if n := js[int](t, ctx, `document.querySelectorAll('#replay-board .card').length`); n != 0 {
		t.Errorf("%d cards before the first record", n)
	}
	for _, n := range []int64{last / 2, last * 3 / 4} {
		seek(n)
		var want web.ReplayView
		r, err := getBody(p.URL + fmt.Sprintf("/api/tasks/%s/state?seq=%d", demo.TaskID, n))
		if err != nil || json.Unmarshal(r, &want) != nil {
			t.Fatalf("state at %d: %v", n, err)
		}
		for id, s := range want.State.Subtasks {
			if !js[bool](t, ctx, fmt.Sprintf(`!!document.querySelector('#replay-board .card[data-subtask=%q][data-status=%q]')`, id, s.Status)) {
				t.Errorf("record %d: %s is not shown %s", n, id, s.Status)
			}
		}
	}
	if !js[bool](t, ctx, `document.querySelector('#replay-label').textContent.includes('record')`) {
		t.Error("no label says which record")
	}
	noScript(t, ctx, "replay")
}

func getBody(url string) ([]byte, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	r, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(r.Body)
	return b.Bytes(), err
}

// TestBrowserWithoutDaemon: with no daemon the pages still read the
// store, under a banner saying none serves the workspace.
func TestBrowserWithoutDaemon(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, false)
	for _, page := range []string{"/", "/tasks/" + demo.TaskID} {
		open(t, ctx, p.URL+page)
		waitJS(t, ctx, "the banner", `document.getElementById('no-daemon')?.textContent.includes('no daemon serves this workspace')`, 10*time.Second)
	}
	waitJS(t, ctx, "the board", `document.querySelectorAll('#board .card[data-status="completed"]').length === 7`, 10*time.Second)
}

// TestBrowserScreenshots takes the README's two pictures of the panel at
// 1280x800 from a demo run and a task in flight: the board and the
// graph; with -update-screenshots they replace docs/img/web-board.png
// and docs/img/web-graph.png.
func TestBrowserScreenshots(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, true)
	ctxb := context.Background()
	if _, err := p.x.CreateTask(ctxb, workspace.NewTaskRequest{ID: "report_q3", Description: "Write the quarterly report from the sales data"}); err != nil {
		t.Fatal(err)
	}
	plan := `{"summary":"Collect, check, chart and write","subtasks":[
		{"id":"collect_sales","description":"Export the sales by region"},{"id":"collect_costs","description":"Export the costs"},
		{"id":"check_sales","description":"Check the sales against the ledger","dependencies":["collect_sales"]},
		{"id":"margins","description":"Margins by region","dependencies":["check_sales","collect_costs"]},
		{"id":"charts","description":"Charts for the board","dependencies":["margins"]},
		{"id":"forecast","description":"Q4 forecast","dependencies":["check_sales"]},
		{"id":"draft","description":"Draft the report","dependencies":["charts","forecast"]},
		{"id":"review","description":"Proofread and send","dependencies":["draft"]}],
		"checkpoints":[{"id":"numbers_checked","description":"The numbers are right","subtasks":["check_sales","margins"]}]}`
	if _, err := p.x.WritePlan(ctxb, "report_q3", "coordinator", []byte(plan)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.x.WriteDone(ctxb, workspace.DoneRequest{TaskID: "report_q3", Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		t.Fatal(err)
	}
	awaitTB(t, "proposed", 10*time.Second, func() bool { return p.state(t, "report_q3").PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctxb, p.x, "report_q3"); err != nil {
		t.Fatal(err)
	}
	awaitTB(t, "executing", 10*time.Second, func() bool { return p.state(t, "report_q3").Status == "executing" })
	for _, c := range []struct{ st, agent string }{{"collect_sales", "analyst_1"}, {"collect_costs", "analyst_2"}, {"check_sales", "analyst_1"}, {"forecast", "analyst_3"}, {"margins", "analyst_2"}} {
		if _, err := p.x.WriteClaim(ctxb, "report_q3", c.agent, c.st); err != nil {
			t.Fatal(err)
		}
		awaitTB(t, c.st+" claimed", 10*time.Second, func() bool { s := p.state(t, "report_q3").Subtasks[c.st]; return s != nil && s.Status == "in_progress" })
		if c.st == "forecast" || c.st == "margins" {
			continue
		}
		out, err := p.x.WriteOutput(ctxb, "report_q3", c.st, c.agent, []byte(`{"summary":"done"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.x.WriteDone(ctxb, workspace.DoneRequest{TaskID: "report_q3", Agent: c.agent, SubtaskID: c.st, OutputFile: out}); err != nil {
			t.Fatal(err)
		}
		awaitTB(t, c.st+" done", 10*time.Second, func() bool { return p.state(t, "report_q3").Subtasks[c.st].Status == "completed" })
	}
	for _, s := range []struct{ name, url, wait string }{
		{"board", "/tasks/report_q3", `document.querySelectorAll('#board .card').length === 8`},
		{"graph", "/tasks/report_q3#graph", `document.querySelectorAll('#graph g.node').length === 8`},
	} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
			t.Fatal(err)
		}
		open(t, ctx, p.URL+s.url)
		waitJS(t, ctx, s.name, s.wait, 10*time.Second)
		if s.name == "graph" {
			js[bool](t, ctx, `document.querySelector('#graph g.node[data-subtask="margins"]').dispatchEvent(new MouseEvent('click', {bubbles: true})), true`)
		}
		img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
			t.Errorf("%s: not a 1280x800 PNG: %v %+v", s.name, err, cfg)
		}
		if *updateScreenshots {
			if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", "web-"+s.name+".png"), img, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// browserFor is newBrowser for a benchmark.
func browserFor(b *testing.B) context.Context {
	b.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		b.Skip("no Chromium on this machine (Debian: apt-get install chromium)")
	}
	dir := b.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.UserDataDir(dir), chromedp.Env("TMPDIR="+dir), chromedp.WindowSize(1280, 800),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	b.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		b.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// pollPage waits for expr to be truthy in the page.
func pollPage(b *testing.B, ctx context.Context, expr string) {
	b.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		b.Fatalf("%s: %v", expr, err)
	}
}

// BenchmarkBrowserFirstPaint: opening the page of a task of 1,000
// subtasks until its board is rendered in Chromium (the page's
// ws-loaded mark, from navigation start); reports the median as p50-ms.
func BenchmarkBrowserFirstPaint(b *testing.B) {
	ctx := browserFor(b)
	p := newDemoPanel(b, true)
	if err := fixture.PrepareTask(context.Background(), p.x, "big", 1000); err != nil {
		b.Fatal(err)
	}
	awaitTB(b, "proposed", 30*time.Second, func() bool { return p.state(b, "big").PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(context.Background(), p.x, "big"); err != nil {
		b.Fatal(err)
	}
	awaitTB(b, "executing", 30*time.Second, func() bool { return p.state(b, "big").Status == "executing" })
	var ms []float64
	b.ResetTimer()
	for b.Loop() {
		if err := chromedp.Do(ctx, chromedp.Navigate(p.URL+"/tasks/big")); err != nil {
			b.Fatal(err)
		}
		pollPage(b, ctx, `document.body.dataset.loaded === "1" && document.querySelectorAll('#board .card').length === 1000`)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByName('ws-loaded')[0].startTime`))
		if err != nil {
			b.Fatal(err)
		}
		ms = append(ms, v)
	}
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "p50-ms")
}

// BenchmarkBrowserEventVisible: an event appended to a task's log until
// it shows in the timeline of the open page; reports the median as
// p50-ms.
func BenchmarkBrowserEventVisible(b *testing.B) {
	ctx := browserFor(b)
	p := newDemoPanel(b, false)
	if err := chromedp.Do(ctx, chromedp.Navigate(p.URL+"/tasks/"+demo.TaskID)); err != nil {
		b.Fatal(err)
	}
	pollPage(b, ctx, `document.body.dataset.loaded === "1"`)
	var lat []time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		key := fmt.Sprintf("bench_%d", i)
		start := time.Now()
		if err := p.x.AppendEvents(context.Background(), demo.TaskID, []workspace.Event{{Name: "env_stored", TaskID: demo.TaskID, Attrs: map[string]string{"agent": "bench", "key": key}}}); err != nil {
			b.Fatal(err)
		}
		pollPage(b, ctx, fmt.Sprintf(`[...document.querySelectorAll('#timeline .ev[data-event="env_stored"]')].slice(0, 3).some(e => e.textContent.includes('key=%s'))`, key))
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}
