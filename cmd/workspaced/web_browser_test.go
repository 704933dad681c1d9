package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/workspace"
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

// newBrowser starts a headless Chromium with a fresh profile for the test.
// The flags keep it from reaching for the network, which it would wait on
// where there is none.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// webProc is one `workspaced web` process.
type webProc struct {
	url    string
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
}

// web starts `workspaced web` on a free loopback port and returns once it
// printed its address.
func (w *ws) web(extra ...string) *webProc {
	w.t.Helper()
	cmd := exec.Command(bin, append([]string{"web", "--listen", "127.0.0.1:0"}, extra...)...)
	cmd.Dir, cmd.Env = w.dir, w.env
	p := &webProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
			w.t.Fatalf("workspaced web printed %q; stderr:\n%s", u, p.stderr)
		}
		p.url = strings.TrimSuffix(u, "/")
	case <-time.After(60 * time.Second):
		w.t.Fatalf("workspaced web did not start; stderr:\n%s", p.stderr)
	}
	return p
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
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(d))); err != nil {
		t.Fatalf("%s: not within %v (%v)", what, d, err)
	}
	return time.Since(start)
}

func open(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	waitJS(t, ctx, "page loaded", `document.body.dataset.loaded === "1"`, 30*time.Second)
}

// planJSON is a plan of n subtasks; st_2 depends on st_1 when deps.
func planJSON(n int, deps bool) string {
	var subs []string
	for i := 1; i <= n; i++ {
		d := ""
		if deps && i == 2 {
			d = `,"dependencies":["st_1"]`
		}
		subs = append(subs, fmt.Sprintf(`{"id":"st_%d","description":"subtask %d"%s}`, i, i, d))
	}
	return `{"summary":"the plan","subtasks":[` + strings.Join(subs, ",") + `]}`
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
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	p := w.web()
	x := w.open()
	w.ok("task", "create", "--id", "t1", "--description", "Build the thing")
	w.runIn(planJSON(3, true), "plan", "write", "--task", "t1", "--file", "-", "--agent", "coordinator", "--propose")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "proposed" })

	open(t, ctx, p.url+"/tasks/t1")
	waitJS(t, ctx, "the approve button", `!!document.querySelector('#plan-approve')`, 2*time.Second)
	js[bool](t, ctx, `document.querySelector('#plan-approve').click(), true`)
	d := waitJS(t, ctx, "the subtasks started after approving from the page", cardIs("st_1", "pending")+" && "+cardIs("st_2", "blocked"), 5*time.Second)
	t.Logf("approve → board: %v", d)
	if !js[bool](t, ctx, `!!document.querySelector('#timeline .ev[data-event="plan_approved"]')`) {
		t.Error("the timeline lacks plan_approved")
	}

	w.ok("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1")
	d = waitJS(t, ctx, "the claim on the board and the timeline", cardIs("st_1", "in_progress")+
		` && !!document.querySelector('#timeline .ev[data-event="work_assigned"]')`, 2*time.Second)
	t.Logf("claim marker → visible: %v", d)
	w.runIn(`{"summary":"done"}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-", "--done")
	d = waitJS(t, ctx, "the output on the board", cardIs("st_1", "completed")+" && "+cardIs("st_2", "pending")+
		` && !!document.querySelector('#timeline .ev[data-event="work_completed"]')`, 2*time.Second)
	t.Logf("done marker → visible: %v", d)

	// Events stream in while the page reloads; afterwards the timeline
	// holds each event of events.log once.
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 40 {
			r, err := execBin(w.dir, w.env, "", "env", "store", "--task", "t1", "--agent", "w1", "--key", fmt.Sprintf("k%d", i), "--description", "d", "--value", "1")
			if err != nil || r.code != 0 {
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
	w.ok("claim", "--task", "t1", "--subtask", "st_2", "--agent", "w2")
	waitJS(t, ctx, "a claim after the reload", cardIs("st_2", "in_progress"), 2*time.Second)

	// The tasks page lists it, and follows a new task.
	open(t, ctx, p.url+"/")
	waitJS(t, ctx, "t1 listed", `!!document.querySelector('#tasks tr[data-task="t1"]')`, 2*time.Second)
	w.ok("task", "create", "--id", "t2", "--description", "Another")
	waitJS(t, ctx, "t2 listed without a reload", `!!document.querySelector('#tasks tr[data-task="t2"]')`, 2*time.Second)
}

// TestBrowserShowsAgentTextAsText: what agents write — task descriptions,
// env values and keys, session entries, outputs, event values, memory of
// every scope, friction — holding HTML and script shows as text on every
// page and every tab, and runs nothing.
func TestBrowserShowsAgentTextAsText(t *testing.T) {
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	p := w.web()
	x := w.open()
	const evil = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2"><b>bold</b>`
	q, _ := json.Marshal(evil)
	w.ok("task", "create", "--id", "t1", "--description", evil)
	w.ok("env", "store", "--task", "t1", "--agent", "w1", "--key", `<img src=x onerror="window.__xss=3">`, "--description", evil, "--value", string(q))
	w.ok("memory", "store", "--scope", "global", "--key", "style", "--description", evil, "--value", string(q), "--agent", "po")
	w.ok("memory", "store", "--scope", "agent", "--agent", "observer", "--key", `<b>k</b>`, "--description", evil, "--value", string(q))
	w.ok("memory", "store", "--scope", "session", "--task", "t1", "--thread", "t1", "--agent", "w1", "--key", "notes", "--description", evil, "--value", string(q))
	w.ok("friction", "add", "--type", "escalation", "--task", "t1", "--description", evil)
	w.runIn(`{"summary":"s","subtasks":[{"id":"st_1","description":`+string(q)+`},{"id":"st_2","description":"two"}]}`, "plan", "write", "--task", "t1", "--file", "-", "--agent", "coordinator", "--propose")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "proposed" })
	w.runIn(`{"type":"plan_review","verdict":"approved","notes":`+string(q)+`}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-", "--done")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.Status == "executing" })
	w.ok("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1")
	w.runIn(`{"summary":`+string(q)+`,"code":{"a.html":`+string(q)+`}}`, "output", "write", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--file", "-", "--done")
	w.ok("task", "cancel", "--task", "t1", "--reason", evil)
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.Status == "cancelled" })

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
	open(t, ctx, p.url+"/")
	waitJS(t, ctx, "the description as text", `document.querySelector('#tasks').textContent.includes('<script>window.__xss=1</script>')`, 5*time.Second)
	check("tasks")
	open(t, ctx, p.url+"/tasks/t1")
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
	open(t, ctx, p.url+"/memory")
	waitJS(t, ctx, "the global description as text", `document.querySelector('[data-scope="global"]').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
	js[bool](t, ctx, `document.querySelector('[data-scope="global"] button').click(), true`)
	waitJS(t, ctx, "the global value as text", `document.querySelector('#memory-value').textContent.includes('<script>')`, 5*time.Second)
	waitJS(t, ctx, "the agent's key and description as text", `(() => { const a = document.querySelector('[data-agent="observer"]');
		return !!a && a.textContent.includes('<b>k</b>') && a.textContent.includes('<img src=x onerror="window.__xss=2">') })()`, 5*time.Second)
	js[bool](t, ctx, `document.querySelector('[data-agent="observer"] button').click(), true`)
	waitJS(t, ctx, "the agent's value as text", `document.querySelector('#memory-value h3').textContent === '<b>k</b>' &&
		document.querySelector('#memory-value').textContent.includes('<script>window.__xss=1')`, 5*time.Second)
	check("memory")
	open(t, ctx, p.url+"/friction")
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
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	p := w.web()
	x := w.open()
	w.ok("task", "create", "--id", "t1", "--description", "Race")
	w.okIn(planJSON(2, false), "plan", "write", "--task", "t1", "--file", "-", "--agent", "coordinator", "--propose")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "proposed" })
	w.okIn(`{"type":"plan_review","verdict":"revision_needed","notes":"smaller"}`, "review", "write", "--task", "t1", "--id", "r1", "--agent", "rev", "--file", "-", "--done")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "revision_needed" })
	w.okIn(planJSON(3, false), "plan", "write", "--task", "t1", "--file", "-", "--agent", "coordinator", "--propose")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "proposed" && s.PlanVersion == 2 })
	w.okIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "t1", "--id", "r2", "--agent", "rev", "--file", "-", "--done")
	stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "approved" })
	w.ok("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w1", "--wait")
	if r := w.run("claim", "--task", "t1", "--subtask", "st_1", "--agent", "w2", "--wait"); r.code != 4 {
		t.Fatalf("the second claim: want exit 4 (lost), got %v", r)
	}
	st := stateWhere(t, x, "t1", func(s workspace.State) bool { return s.PlanStatus == "approved" && s.PlanVersion == 2 })

	open(t, ctx, p.url+"/tasks/t1#plan")
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
	w := newWS(t)
	r := w.fails(2, "not a loopback address", "web", "--listen", "0.0.0.0:0")
	if !strings.Contains(r.stderr, "hint: give --token-file") {
		t.Errorf("no hint:\n%s", r.stderr)
	}
	empty := w.dir + "/empty-token"
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.fails(1, "is empty", "web", "--listen", "0.0.0.0:0", "--token-file", empty)
	w.fails(1, "no such file", "web", "--token-file", w.dir+"/missing")
}
