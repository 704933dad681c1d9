package panel_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/workspaced/workspaced/internal/fixture"
	"github.com/workspaced/workspaced/service"
	"github.com/workspaced/workspaced/workspace"
)

// TestBrowserAmendment: a plan amended while it runs, in the panel: the
// graph marks the subtasks the last amendment added and those the one
// awaiting review would withdraw, and says what each does; the header
// says an amendment awaits review, approved from the page; the plan tab
// names each version by where it stands and shows what an amendment
// changed. With -update-screenshots the graph replaces
// docs/img/web-amendment.png.
func TestBrowserAmendment(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	p := newDemoPanel(t, true)
	ctxb := context.Background()
	if _, err := p.x.CreateTask(ctxb, workspace.NewTaskRequest{ID: "index_logs", Description: "Index every log file of the incident"}); err != nil {
		t.Fatal(err)
	}
	plan := `{"summary":"List, index, summarise","subtasks":[
		{"id":"list_files","description":"List the log files"},
		{"id":"index_api","description":"Index api.log","dependencies":["list_files"]},
		{"id":"index_db","description":"Index db.log","dependencies":["list_files"]},
		{"id":"summary","description":"Summarise the incident","dependencies":["index_api","index_db"]}]}`
	if _, err := p.x.WritePlan(ctxb, "index_logs", "coordinator", []byte(plan)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.x.WriteDone(ctxb, workspace.DoneRequest{TaskID: "index_logs", Agent: "coordinator", OutputFile: "plan.json"}); err != nil {
		t.Fatal(err)
	}
	awaitTB(t, "proposed", 10*time.Second, func() bool { return p.state(t, "index_logs").PlanStatus == "proposed" })
	if err := fixture.ApprovePlan(ctxb, p.x, "index_logs"); err != nil {
		t.Fatal(err)
	}
	awaitTB(t, "executing", 10*time.Second, func() bool { return p.state(t, "index_logs").Status == "executing" })
	if _, err := service.Claim(ctxb, p.x, "index_logs", "lister", "list_files", service.DeliverOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitTB(t, "claimed", 10*time.Second, func() bool { return p.state(t, "index_logs").Subtasks["list_files"].Status == "in_progress" })

	// The lister finds three more files: they join the plan at once.
	wait := service.DeliverOptions{Wait: 10 * time.Second}
	add := workspace.PlanAmendment{}
	for _, f := range []string{"auth", "cache", "queue"} {
		add.Add = append(add.Add, workspace.Subtask{ID: "index_" + f, Description: "Index " + f + ".log", Dependencies: []string{"list_files"}})
	}
	if am, err := service.AmendPlan(ctxb, p.x, "index_logs", "lister", add, wait); err != nil || am.Review || am.Verdict.Verdict != workspace.VerdictApplied {
		t.Fatalf("add: %+v, %v", am, err)
	}
	// db.log is gone: its subtask is withdrawn, which waits for a review.
	am, err := service.AmendPlan(ctxb, p.x, "index_logs", "lister", workspace.PlanAmendment{
		Withdraw: []string{"index_db"},
		Change:   []workspace.Subtask{{ID: "summary", Description: "Summarise the incident", Dependencies: []string{"index_api", "index_auth", "index_cache", "index_queue"}}},
	}, wait)
	if err != nil || !am.Review || am.Verdict.Verdict != workspace.VerdictApplied {
		t.Fatalf("withdraw: %+v, %v", am, err)
	}

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	open(t, ctx, p.URL+"/tasks/index_logs#graph")
	waitJS(t, ctx, "the amended graph", `document.querySelectorAll('#graph g.node').length === 7 && !!document.querySelector('#amendment-graph-note')`, 10*time.Second)
	marks := js[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll('#graph g.node[data-amendment]')].map(g => [g.dataset.subtask, g.dataset.amendment]))`)
	want := map[string]string{"index_auth": "added", "index_cache": "added", "index_queue": "added", "index_db": "withdrawing", "summary": "changing"}
	if len(marks) != len(want) {
		t.Errorf("marks %v, want %v", marks, want)
	}
	for k, v := range want {
		if marks[k] != v {
			t.Errorf("%s marked %q, want %q (all: %v)", k, marks[k], v, marks)
		}
	}
	for sel, text := range map[string]string{
		"#amended-note":         "plan v2 amended v1 (lister): adds index_auth, index_cache, index_queue",
		"#amendment-graph-note": "amendment v3 (lister) awaits review: changes summary; withdraws index_db",
		"#amendment-note":       "amendment v3 awaits review",
	} {
		if got := js[string](t, ctx, `document.querySelector('`+sel+`').textContent`); !strings.Contains(got, text) {
			t.Errorf("%s says %q, want %q", sel, got, text)
		}
	}
	img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(img)); err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Errorf("not a 1280x800 PNG: %v %+v", err, cfg)
	}
	if *updateScreenshots {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", "web-amendment.png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The plan tab: each version by where it stands, what v2 added.
	tab(t, ctx, "plan")
	waitJS(t, ctx, "the plan tab", `document.querySelector('#plan-title')?.textContent.includes('amendment awaiting review') && document.querySelector('#plan-diff')?.textContent.includes('index_db')`, 10*time.Second)
	js[bool](t, ctx, `(() => { const f = document.querySelector('#diff-from'), to = document.querySelector('#diff-to'); f.value = '1'; to.value = '2'; to.dispatchEvent(new Event('change')); return true })()`)
	waitJS(t, ctx, "v1 to v2", `document.querySelector('#plan-diff').textContent.includes('index_queue')`, 10*time.Second)
	noScript(t, ctx, "plan")

	// Approved from the page, the amendment runs.
	tab(t, ctx, "board")
	waitJS(t, ctx, "the review form", `!!document.querySelector('#amendment-approve')`, 10*time.Second)
	js[bool](t, ctx, `document.querySelector('#amendment-approve').click(), true`)
	awaitTB(t, "the amendment applied", 10*time.Second, func() bool { s := p.state(t, "index_logs"); return s.PlanVersion == 3 && s.Amendment == nil })
	waitJS(t, ctx, "the board without index_db", `!document.querySelector('#board .card[data-subtask="index_db"]') && !document.querySelector('#amendment-note')`, 10*time.Second)
}
