package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
	"github.com/workspaced/workspaced/internal/testbin"
)

// pyPackageDir is the Python package workspaced (src layout); the suite
// imports it from src, nothing is installed.
const pyPackageDir = "python"

// pyPython is Debian's python3 with pytest (python3-pytest), which the
// suite needs; the test is skipped, saying why, without them.
func pyPython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		p, err := exec.LookPath("python3")
		if err != nil {
			optdep.Skip(t, "pytest", "python3 is not installed: the Python package's suite cannot run (Debian: python3, python3-pytest)")
		}
		py = p
	}
	if err := exec.Command(py, "-c", "import pytest").Run(); err != nil {
		optdep.Skipf(t, "pytest", "%s has no pytest: the Python package's suite cannot run (Debian: python3-pytest; .ci/run installs it)", py)
	}
	return py
}

// rePytestSummary is the runner's last line under -q: "12 passed, 1
// skipped in 3.21s".
var rePytestSummary = regexp.MustCompile(`(?m)^=* ?(\d+ (?:passed|failed|error|skipped|deselected)\b.* in [\d.]+s)`)

// TestPythonClient runs the Python package's suite (pytest,
// clients/python/tests) against a real daemon on files, on SQLite and on
// PostgreSQL: each store is reached directly (the directory, sqlite:PATH,
// postgres://) and over the HTTP API of the same `workspaced serve
// --listen`, which requires tokens. Agents planner, reviewer, w1 and w2
// (and coordinator, worker_1 and worker_2, the conformance corpus's) have
// every task and every right. Every test of the suite must run and pass,
// but a case of the conformance corpus (tests/test_conformance.py) may be
// skipped for a step the package cannot say or a divergence known, with
// a reason naming the operation; the runner's summary line and every
// such reason are logged. mypy --strict checks the
// package and its tests when mypy is installed (required where mypy is).
func TestPythonClient(t *testing.T) {
	t.Parallel()
	py := pyPython(t)
	bin := testbin.Must(t)
	for _, kind := range []string{"files", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			if kind == "postgres" {
				if err := exec.Command(py, "-c", "import psycopg").Run(); err != nil {
					optdep.Skip(t, "psycopg", "python3 has no psycopg 3: the package's PostgreSQL way in cannot run (Debian: python3-psycopg)")
				}
			}
			w := newKindWS(t, kind)
			toks := map[string]string{}
			// planner, reviewer, w1 and w2 for the suite; coordinator,
			// worker_1 and worker_2 too for the conformance corpus's cases.
			for _, a := range []string{"planner", "reviewer", "w1", "w2", "coordinator", "worker_1", "worker_2"} {
				toks[a] = w.addToken("--agent", a, "--task", "*", "--may", "claim,done,plan,review", "--global-memory", "write")
			}
			tokenFile := filepath.Join(t.TempDir(), "ops-token")
			if err := os.WriteFile(tokenFile, []byte("ops-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			d, base := w.opsServe("--token-file", tokenFile, "--rate", "100000", "--burst", "100000")
			roots, _ := json.Marshal(map[string]string{kind: w.Root, "http": strings.TrimSuffix(base, "/")})
			tokJSON, _ := json.Marshal(toks)
			// The README's program runs on SQLite, as the README says.
			only := []string{}
			if kind != "sqlite" {
				only = []string{"-k", "not test_readme_program"}
			}
			summary, out, err := runPytest(t, py, only, "WORKSPACED_PY_ROOTS="+string(roots), "WORKSPACED_PY_TOKENS="+string(tokJSON),
				"WORKSPACED_BIN="+bin)
			skips, unexplained := pytestSkips(out)
			if err != nil || !strings.Contains(summary, "passed") || unexplained ||
				strings.Contains(summary, "failed") || strings.Contains(summary, "error") || strings.Contains(summary, "xfail") {
				t.Fatalf("pytest on %s: %v, summary %q\n%s\nserver:\n%s", kind, err, summary, out, d.Log.String())
			}
			t.Logf("the Python package's suite on %s (and its HTTP API): %s", kind, summary)
			for _, s := range skips {
				t.Logf("skipped: %s", s)
			}
		})
	}
	t.Run("install", func(t *testing.T) {
		t.Parallel()
		if err := exec.Command(py, "-c", "import setuptools, wheel, venv, ensurepip").Run(); err != nil {
			// setuptools before 70.1 builds a wheel with the wheel package's
			// bdist_wheel ("invalid command 'bdist_wheel'" without it).
			optdep.Skip(t, "venv", "python3 has no setuptools, wheel or venv: the package cannot be installed offline (Debian: python3-setuptools, python3-wheel, python3-venv)")
		}
		// A copy: pip builds in the source tree, which the suite reads.
		src := filepath.Join(t.TempDir(), "python")
		if err := copyPackage(src, pyPackageDir); err != nil {
			t.Fatal(err)
		}
		venv := filepath.Join(t.TempDir(), "venv")
		// The venv's own pip (ensurepip, most of the subtest's CPU) only
		// where the system's python3 has none to lend it: a venv that sees
		// the system's site-packages runs that pip as its own, installing
		// into the venv.
		mkvenv := []string{py, "-m", "venv", "--system-site-packages", "--without-pip", venv}
		pip := []string{filepath.Join(venv, "bin", "python"), "-m", "pip"}
		if exec.Command(py, "-m", "pip", "--version").Run() != nil {
			mkvenv = slices.Delete(mkvenv, 4, 5)
			pip = []string{filepath.Join(venv, "bin", "pip")}
		}
		for _, args := range [][]string{
			mkvenv,
			append(pip, "install", "--no-build-isolation", "--no-index", "--quiet", src),
			{filepath.Join(venv, "bin", "python"), "-c", "import sys, workspaced, workspaced.aio, importlib.resources as r; " +
				"assert workspaced.__file__.startswith(sys.prefix + '/'), (workspaced.__file__, sys.prefix); " +
				"assert r.files('workspaced').joinpath('py.typed').is_file(); print(workspaced.__version__)"},
		} {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir, cmd.Env = t.TempDir(), clitest.CleanEnv()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	t.Run("mypy", func(t *testing.T) {
		t.Parallel()
		mypy, err := exec.LookPath("mypy")
		if err != nil {
			optdep.Skip(t, "mypy", "mypy is not on PATH: the package's types are not checked (Debian: mypy; .ci/run installs it)")
		}
		// The package's own .mypy_cache (ignored by git), as `mypy` run by
		// hand or by .ci/run keeps it: unchanged modules are not checked again.
		cmd := exec.Command(mypy, "--strict", "src", "tests", "bench")
		cmd.Dir, cmd.Env = pyPackageDir, append(clitest.CleanEnv(), "MYPYPATH=src")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mypy --strict: %v\n%s", err, out)
		}
		t.Logf("mypy --strict: %s", bytes.TrimSpace(out))
	})
}

// copyPackage copies the Python package at from to dst, leaving out the
// caches the other subtests write while it copies (mypy's .mypy_cache is
// rewritten in place when its options or modules change).
func copyPackage(dst, from string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		name := d.Name()
		if d.IsDir() && rel != "." && (strings.HasPrefix(name, ".") || name == "__pycache__" || name == "build" || strings.HasSuffix(name, ".egg-info")) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// runPytest runs the package's suite with args and env added and returns the
// runner's summary line and its whole output.
func runPytest(t *testing.T, py string, args []string, env ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", "tests"}, args...)...)
	cmd.Dir = pyPackageDir
	cmd.Env = append(append(clitest.CleanEnv(), "PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	summary := ""
	if m := rePytestSummary.FindAllStringSubmatch(out.String(), -1); m != nil {
		summary = m[len(m)-1][1]
	}
	return summary, out.String(), err
}

// reSkipped is a skip in the runner's report under -rs: "SKIPPED [2]
// tests/test_x.py:12: why".
var reSkipped = regexp.MustCompile(`(?m)^SKIPPED \[\d+\] [^:]+:\d+: (.*)$`)

// pytestSkips are the reasons of the skips in the runner's output out;
// unexplained says a test was skipped for another reason than a step of
// the conformance corpus the package cannot say, which names the
// operation or argument it lacks (tests/test_conformance.py), or that
// the output has skips it does not explain.
func pytestSkips(out string) (reasons []string, unexplained bool) {
	for _, m := range reSkipped.FindAllStringSubmatch(out, -1) {
		reasons = append(reasons, m[1])
		unexplained = unexplained || !strings.HasPrefix(m[1], "conformance: ")
	}
	if summary := rePytestSummary.FindAllStringSubmatch(out, -1); summary != nil && strings.Contains(summary[len(summary)-1][1], "skipped") && len(reasons) == 0 {
		unexplained = true
	}
	return reasons, unexplained
}
