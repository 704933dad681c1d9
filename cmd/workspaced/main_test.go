package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/pgtest"
)

// bin is the workspaced binary built once for the whole suite; every CLI
// test runs it as a subprocess, as a user would.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "workspaced-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "workspaced")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build workspaced:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary gave.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// ws is a workspace made for one test, with the environment the binary
// runs in.
type ws struct {
	t    *testing.T
	root string // the workspace root (absolute)
	dir  string // the working directory the binary runs in
	env  []string
}

// cleanEnv is the test process environment without the variables that
// steer workspaced.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "WORKSPACE_ROOT=") || strings.HasPrefix(kv, "WORKSPACE_AGENT=") || strings.HasPrefix(kv, "WORKSPACE_TOKEN=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// newWS runs `workspaced init` in a fresh directory and returns a ws whose
// commands find the root through WORKSPACE_ROOT.
func newWS(t *testing.T) *ws {
	t.Helper()
	dir := t.TempDir()
	w := &ws{t: t, root: filepath.Join(dir, "workspace"), dir: dir}
	w.env = append(cleanEnv(), "WORKSPACE_ROOT="+w.root)
	w.ok("init")
	return w
}

// runIn runs the binary with args and optional stdin.
func (w *ws) runIn(stdin string, args ...string) result {
	w.t.Helper()
	r, err := execBin(w.dir, w.env, stdin, args...)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// execBin runs the binary in dir with env; it is safe to call from many
// goroutines. Only a failure to run at all is an error.
func execBin(dir string, env []string, stdin string, args ...string) (result, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		return r, fmt.Errorf("run workspaced %q: %w", args, err)
	}
	return r, nil
}

// okIn runs the binary with stdin and fails the test unless it exits 0.
func (w *ws) okIn(stdin string, args ...string) result {
	w.t.Helper()
	r := w.runIn(stdin, args...)
	if r.code != 0 {
		w.t.Fatalf("%v: %v", args, r)
	}
	return r
}

func (w *ws) run(args ...string) result {
	w.t.Helper()
	return w.runIn("", args...)
}

// ok runs the binary and fails the test unless it exits 0 with nothing on
// stderr; it returns stdout.
func (w *ws) ok(args ...string) string {
	w.t.Helper()
	r := w.run(args...)
	if r.code != 0 || r.stderr != "" {
		w.t.Fatalf("workspaced %q: want exit 0 and empty stderr, got %v", args, r)
	}
	return r.stdout
}

// fails runs the binary and checks the exit code and that stderr is one
// "workspaced: ..." error naming want, with stdout empty.
func (w *ws) fails(code int, want string, args ...string) result {
	w.t.Helper()
	r := w.run(args...)
	checkFailure(w.t, r, code, want, args)
	return r
}

func checkFailure(t *testing.T, r result, code int, want string, args []string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("workspaced %q: want exit %d, got %v", args, code, r)
	}
	if !strings.HasPrefix(r.stderr, "workspaced: ") {
		t.Fatalf("workspaced %q: stderr should start with \"workspaced: \": %v", args, r)
	}
	if !strings.Contains(r.stderr, want) {
		t.Fatalf("workspaced %q: stderr should contain %q: %v", args, want, r)
	}
	if r.stdout != "" {
		t.Fatalf("workspaced %q: stdout should be empty on failure: %v", args, r)
	}
}

// task creates a task with the given id.
func (w *ws) task(id string) {
	w.t.Helper()
	if got := w.ok("task", "create", "--id", id, "--description", "test task "+id); got != id+"\n" {
		w.t.Fatalf("task create printed %q, want %q", got, id+"\n")
	}
}

// tree lists every file and directory under the root with a hash of its
// content, leaving out .locks/ (lock files are made on demand and never
// deleted; they hold no data).
func (w *ws) tree() map[string]string {
	w.t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.root, p)
		if d.IsDir() {
			if d.Name() == ".locks" {
				return filepath.SkipDir
			}
			out[rel+"/"] = "dir"
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "symlink to " + target
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, before, after map[string]string, what string) {
	t.Helper()
	if reflect.DeepEqual(before, after) {
		return
	}
	var diff []string
	for k, v := range after {
		if before[k] != v {
			diff = append(diff, "+ "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			diff = append(diff, "- "+k)
		}
	}
	sort.Strings(diff)
	t.Fatalf("%s changed the tree:\n%s", what, strings.Join(diff, "\n"))
}

// decode parses JSON output into v, failing the test on error.
func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
}
