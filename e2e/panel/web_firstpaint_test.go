package panel_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/demo"
)

// headless runs Chromium once as a user runs it from a shell, without
// the DevTools protocol: here to write a screenshot (--screenshot), which
// it takes once the page has loaded, whatever its scripts still fetch.
func headless(t *testing.T, args ...string) {
	t.Helper()
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, exe, all...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
}

// inkRows counts the rows of a screenshot below the header (the top 64
// pixels) that hold anything but the page's background, the colour of
// its bottom-right pixel.
func inkRows(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	bg := img.At(b.Max.X-1, b.Max.Y-1)
	same := func(x, y int) bool {
		r1, g1, b1, _ := img.At(x, y).RGBA()
		r2, g2, b2, _ := bg.RGBA()
		d := func(a, b uint32) uint32 {
			if a > b {
				return a - b
			}
			return b - a
		}
		return d(r1, r2)+d(g1, g2)+d(b1, b2) < 0x3000
	}
	rows := 0
	for y := b.Min.Y + 64; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if !same(x, y) {
				rows++
				break
			}
		}
	}
	return rows
}

// TestBrowserFirstPaint: the task page is painted by the server — the
// task, where it stands and its subtasks are in the HTML itself — so that
// a plain `chromium --headless --screenshot` of it shows the task, where
// the page of an unknown task (the script's to paint) shows next to
// nothing.
func TestBrowserFirstPaint(t *testing.T) {
	t.Parallel()
	p := newDemoPanel(t, false)
	page := p.URL + "/tasks/" + demo.TaskID
	body, err := getBody(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(body)
	st := p.state(t, demo.TaskID)
	for _, want := range []string{`id="first-paint"`, demo.TaskID, "phase completed", "of " + strconv.Itoa(len(st.Subtasks)) + " done", "st_1"} {
		if !strings.Contains(html, want) {
			t.Errorf("the first paint lacks %q:\n%s", want, html)
		}
	}
	if rows := strings.Count(html, "<tr>"); rows != len(st.Subtasks)+1 {
		t.Errorf("the first paint has %d rows, want a header and %d subtasks", rows, len(st.Subtasks))
	}
	dir := t.TempDir()
	shot, shell := filepath.Join(dir, "task.png"), filepath.Join(dir, "shell.png")
	headless(t, "--window-size=1280,800", "--screenshot="+shot, page)
	headless(t, "--window-size=1280,800", "--screenshot="+shell, p.URL+"/tasks/no_such_task")
	task, empty := inkRows(t, shot), inkRows(t, shell)
	t.Logf("rows with ink below the header: the task page %d, the shell %d", task, empty)
	if task < 4*empty || task < 150 {
		t.Errorf("the screenshot of the task page shows little: %d rows with ink (the shell without a task: %d)", task, empty)
	}
}

// TestBrowserLiveSaysNoDaemon: with no daemon the live indicator says so
// — never "● live" beside the banner — from the first paint on, and once
// the page's stream is open.
func TestBrowserLiveSaysNoDaemon(t *testing.T) {
	t.Parallel()
	p := newDemoPanel(t, false)
	page := p.URL + "/tasks/" + demo.TaskID
	if body, err := getBody(page); err != nil || !strings.Contains(string(body), "○ no daemon") || strings.Contains(string(body), "● live") {
		t.Errorf("the first paint's indicator: %v\n%s", err, body)
	}
	ctx := newBrowser(t)
	for _, path := range []string{"/", "/tasks/" + demo.TaskID} {
		open(t, ctx, p.URL+path)
		waitJS(t, ctx, "the banner and the indicator", `document.getElementById('no-daemon') !== null && document.getElementById('live').textContent.includes('no daemon')`, 10*time.Second)
		// The stream opens: the indicator still says no daemon.
		waitJS(t, ctx, "the stream open", `document.getElementById('live').className === 'live idle'`, 10*time.Second)
		if got := js[string](t, ctx, `document.getElementById('live').textContent`); strings.Contains(got, "● live") {
			t.Errorf("%s: the indicator says %q with no daemon", path, got)
		}
	}
	// The favicon the page links, and the one browsers ask for.
	for _, u := range []string{"/favicon.ico", "/assets/favicon.svg"} {
		res, err := http.Get(p.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/svg+xml" {
			t.Errorf("%s: %d %s", u, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
	if got := js[string](t, ctx, `document.querySelector('link[rel=icon]').href`); !strings.HasSuffix(got, "/assets/favicon.svg") {
		t.Errorf("the icon linked: %q", got)
	}
}
