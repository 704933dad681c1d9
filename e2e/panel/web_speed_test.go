package panel_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/internal/fixture/scale"
	"github.com/workspaced/workspaced/workspace"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "rewrite docs/img/*.png from the panel")

// TestWebScreenshots takes the README's pictures of the panel from a demo
// run and a task in flight: each must be a PNG of the window's size; with
// -update-screenshots they replace docs/img/.
func TestWebScreenshots(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	w := newWS(t)
	root := filepath.Join(t.TempDir(), "demo")
	w.Ok("demo", "--root", root, "--quiet", "--time-scale", "0.02")
	w.Env = append(clitest.CleanEnv(), "WORKSPACE_ROOT="+root)
	w.Root = root
	w.serve()
	x := w.Open()
	w.ProposePlan(x, "report_q3", "Write the quarterly report from the sales data", 9, true)
	w.RunIn(`{"type":"plan_review","verdict":"approved"}`, "review", "write", "--task", "report_q3", "--id", "plan_v1", "--agent", "reviewer", "--file", "-", "--done")
	clitest.StateWhere(t, x, "report_q3", func(s workspace.State) bool { return s.Status == "executing" })
	for i, agent := range []string{"w1", "w2", "w3", "w1"} {
		st := fmt.Sprintf("st_%d", []int{1, 3, 4, 5}[i])
		w.Ok("claim", "--task", "report_q3", "--subtask", st, "--agent", agent, "--wait")
		if i < 2 {
			w.RunIn(`{"summary":"done"}`, "output", "write", "--task", "report_q3", "--subtask", st, "--agent", agent, "--file", "-", "--done")
		}
	}
	w.Ok("env", "store", "--task", "report_q3", "--agent", "w1", "--key", "sales_q3", "--description", "Sales by region, Q3", "--value", `{"north":120,"south":95}`)
	w.ProposePlan(x, "triage_inbox", "Triage the support inbox", 4, false)
	p := w.Web()
	var hive, arc string
	for _, l := range strings.Split(w.Ok("task", "list"), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(l, "REST") {
			hive = f[0]
		} else if len(f) > 0 && strings.Contains(l, "ARC") {
			arc = f[0]
		}
	}
	if hive == "" || arc == "" {
		t.Fatalf("no demo task in:\n%s", w.Ok("task", "list"))
	}
	shots := []struct{ name, url, wait string }{
		{"tasks", "/", ""},
		{"task", "/tasks/report_q3", ""},
		{"plan-review", "/tasks/triage_inbox", `!!document.querySelector('#plan-approve')`},
		{"plan-diff", "/tasks/" + hive + "#plan", `!!document.querySelector('#plan-diff .add')`},
		{"threads", "/tasks/" + arc + "#threads", `!!document.querySelector('#threads li')`},
		{"friction", "/friction", ""},
		{"memory", "/memory", ""},
	}
	for _, s := range shots {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)); err != nil {
			t.Fatal(err)
		}
		open(t, ctx, p.URL+s.url)
		if s.wait != "" {
			waitJS(t, ctx, s.name, s.wait, 10*time.Second)
		}
		img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil || cfg.Width != 1400 || cfg.Height != 900 {
			t.Errorf("%s: not a 1400x900 PNG: %v %+v", s.name, err, cfg)
		}
		if *updateScreenshots {
			if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", "web-"+s.name+".png"), img, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWebSpeed measures the panel in Chromium (WORKSPACED_WEB_SPEED=1):
// the first paint of a task with 1,000 subtasks and 5,000 events, a
// marker's way to the open page over 200 markers, and the tasks page over
// 10,000 tasks. It reports; it asserts only that each thing happened.
func TestWebSpeed(t *testing.T) {
	t.Parallel()
	if os.Getenv("WORKSPACED_WEB_SPEED") == "" {
		t.Skip("set WORKSPACED_WEB_SPEED=1 to measure the panel in Chromium")
	}
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	x := w.Open()
	bg := context.Background()

	// A task of 1,000 subtasks, approved, with 5,000 events.
	if err := fixture.PrepareTask(bg, x, "big", 1000); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "big", func(s workspace.State) bool { return s.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctx, x, "big"); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "big", func(s workspace.State) bool { return s.Status == "executing" })
	evs, _, _ := x.ReadEvents(ctx, "big")
	var batch []workspace.Event
	for i := len(evs); i < 5000; i++ {
		batch = append(batch, workspace.Event{Name: "env_stored", TaskID: "big", Attrs: map[string]string{"agent": "w" + strconv.Itoa(i%8), "key": "k" + strconv.Itoa(i), "version": "1"}})
	}
	if err := x.AppendEvents(ctx, "big", batch); err != nil {
		t.Fatal(err)
	}
	p := w.Web()
	var fcp, loaded []float64
	for range 5 {
		open(t, ctx, p.URL+"/tasks/big")
		waitJS(t, ctx, "5,000 events shown", `document.querySelectorAll('#timeline .ev').length === 5000 && document.querySelectorAll('#board .card').length === 1000`, 30*time.Second)
		fcp = append(fcp, js[float64](t, ctx, `performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1`))
		loaded = append(loaded, js[float64](t, ctx, `performance.getEntriesByName('ws-loaded')[0].startTime`))
	}
	slices.Sort(fcp)
	slices.Sort(loaded)
	t.Logf("task of 1,000 subtasks and 5,000 events: first contentful paint median %.0f ms, board and timeline rendered median %.0f ms (5 loads: %v)", fcp[2], loaded[2], loaded)

	// 200 markers, one at a time, each to its card on an open page.
	if err := fixture.PrepareTask(bg, x, "m", 200); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "m", func(s workspace.State) bool { return s.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctx, x, "m"); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "m", func(s workspace.State) bool { return s.Status == "executing" })
	open(t, ctx, p.URL+"/tasks/m")
	js[bool](t, ctx, `(() => { window.__seen = {}; new MutationObserver(() => {
		for (const c of document.querySelectorAll('#board .card[data-status="in_progress"]')) {
			if (!window.__seen[c.dataset.subtask]) window.__seen[c.dataset.subtask] = performance.timeOrigin + performance.now();
		}
	}).observe(document.getElementById('panel'), {subtree: true, childList: true, attributes: true}); return true })()`)
	var lat []time.Duration
	for i := 1; i <= 200; i++ {
		st := "st_" + strconv.Itoa(i)
		dropped := time.Now()
		if _, err := x.WriteClaim(ctx, "m", "w"+strconv.Itoa(i%8), st); err != nil {
			t.Fatal(err)
		}
		waitJS(t, ctx, st+" in progress", fmt.Sprintf(`!!window.__seen[%q]`, st), 10*time.Second)
		seen := js[float64](t, ctx, fmt.Sprintf(`window.__seen[%q]`, st))
		lat = append(lat, time.Duration(seen*1e6)-time.Duration(dropped.UnixNano()))
	}
	slices.Sort(lat)
	t.Logf("marker → visible on the open page, 200 markers: p50 %v, p99 %v, max %v", lat[99].Round(time.Millisecond/10), lat[197].Round(time.Millisecond/10), lat[199].Round(time.Millisecond/10))

	// 10,000 tasks: the server's start, the API's page, the tasks page.
	scaleRoot := filepath.Join(t.TempDir(), "scale")
	if err := (scale.Tree{Active: 2000, Finished: 8000}).Write(scaleRoot); err != nil {
		t.Fatal(err)
	}
	ws2 := &ws{&clitest.WS{T: t, Dir: w.Dir, Root: scaleRoot, Env: append(clitest.CleanEnv(), "WORKSPACE_ROOT="+scaleRoot)}}
	start := time.Now()
	p2 := ws2.Web()
	ready := time.Since(start)
	var api []time.Duration
	for _, q := range []string{"", "?status=executing", "?q=task_0999", "?offset=9900"} {
		for range 10 {
			t0 := time.Now()
			r, err := http.Get(p2.URL + "/api/tasks" + q)
			if err != nil || r.StatusCode != 200 {
				t.Fatalf("GET /api/tasks%s: %v", q, err)
			}
			r.Body.Close()
			api = append(api, time.Since(t0))
		}
	}
	slices.Sort(api)
	var page []float64
	for range 5 {
		open(t, ctx, p2.URL+"/")
		waitJS(t, ctx, "100 rows", `document.querySelectorAll('#tasks tr').length === 100 && document.querySelector('#count').textContent.includes('10000')`, 30*time.Second)
		page = append(page, js[float64](t, ctx, `performance.getEntriesByName('ws-loaded')[0].startTime`))
	}
	slices.Sort(page)
	t.Logf("10,000 tasks: web ready (index built) in %v; GET /api/tasks p50 %v, max %v over 40; tasks page rendered median %.0f ms", ready.Round(time.Millisecond), api[20].Round(time.Millisecond/10), api[39].Round(time.Millisecond/10), page[2])
}

// TestWebSpeedBoard10000 measures (WORKSPACED_WEB_SPEED=1) the page of a
// task of 10,000 subtasks, approved, in Chromium: its first contentful
// paint and the board rendered. It reports; it asserts only that every
// card was drawn.
func TestWebSpeedBoard10000(t *testing.T) {
	t.Parallel()
	if os.Getenv("WORKSPACED_WEB_SPEED") == "" {
		t.Skip("set WORKSPACED_WEB_SPEED=1 to measure the panel in Chromium")
	}
	ctx := newBrowser(t)
	w := newWS(t)
	w.serve()
	x := w.Open()
	if err := fixture.PrepareTask(context.Background(), x, "huge", 10000); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "huge", func(s workspace.State) bool { return s.PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctx, x, "huge"); err != nil {
		t.Fatal(err)
	}
	clitest.StateWhere(t, x, "huge", func(s workspace.State) bool { return s.Status == "executing" })
	p := w.Web()
	var fcp, loaded, api []float64
	for range 5 {
		t0 := time.Now()
		r, err := http.Get(p.URL + "/api/tasks/huge")
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("GET /api/tasks/huge: %v", err)
		}
		r.Body.Close()
		api = append(api, float64(time.Since(t0).Milliseconds()))
		open(t, ctx, p.URL+"/tasks/huge")
		waitJS(t, ctx, "10,000 cards", `document.querySelectorAll('#board .card').length === 10000`, 60*time.Second)
		fcp = append(fcp, js[float64](t, ctx, `performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1`))
		loaded = append(loaded, js[float64](t, ctx, `performance.getEntriesByName('ws-loaded')[0].startTime`))
	}
	slices.Sort(fcp)
	slices.Sort(loaded)
	slices.Sort(api)
	t.Logf("task of 10,000 subtasks: GET /api/tasks/huge median %.0f ms; first contentful paint median %.0f ms, board rendered median %.0f ms (5 loads: %v)", api[2], fcp[2], loaded[2], loaded)
}
