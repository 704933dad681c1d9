package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workspaced/workspaced/internal/clitest"
	"github.com/workspaced/workspaced/internal/optdep"
)

// tsPackageDir is the TypeScript client of the HTTP API, the npm package
// @workspaced/client. .ci/run installs its node_modules with npm ci;
// nothing is downloaded here.
const tsPackageDir = "typescript"

// tsPackageNode is the node that runs the client's suite; the test is
// skipped, saying why, without node or the package's dependencies.
func tsPackageNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		optdep.Skip(t, "node", "node is not on PATH: the TypeScript client's suite cannot run (Debian: nodejs and npm; .ci/run installs them)")
	}
	if missing := tsMissingDeps(); len(missing) > 0 {
		optdep.Skipf(t, "node", "the TypeScript client's dependencies are not installed in %s (no %s): run npm ci there (.ci/run does)",
			tsPackageDir, strings.Join(missing, ", "))
	}
	return node
}

// tsMissingDeps names the package's dependencies (package.json's
// devDependencies) that its node_modules lacks: none installed, or
// installed before package.json named them.
func tsMissingDeps() []string {
	b, err := os.ReadFile(filepath.Join(tsPackageDir, "package.json"))
	if err != nil {
		return []string{"package.json: " + err.Error()}
	}
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return []string{"package.json: " + err.Error()}
	}
	var missing []string
	for name := range pkg.DevDependencies {
		if _, err := os.Stat(filepath.Join(tsPackageDir, "node_modules", name, "package.json")); err != nil {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing
}

// buildTSPackage checks that the client's generated types are what
// api/openapi.json generates, then compiles the client and its suite, once
// per test binary (tsc -b: nothing to do when dist/ is up to date).
var buildTSPackage = sync.OnceValues(func() (string, error) {
	var out bytes.Buffer
	for _, args := range [][]string{{"scripts/generate.mjs", "--check"}, {"node_modules/typescript/bin/tsc", "-b", "tsconfig.json"}} {
		cmd := exec.Command("node", args...)
		cmd.Dir, cmd.Env = tsPackageDir, clitest.CleanEnv()
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
})

var reTAPCount = regexp.MustCompile(`(?m)^# (pass|fail|skipped|todo|cancelled) (\d+)$`)

// TestTypeScriptClient runs the TypeScript client's suite (node:test,
// clients/typescript/test; every file of it in one node process a store)
// against `workspaced serve --listen` on a
// workspace on files, on SQLite and on PostgreSQL: the daemon and the HTTP
// API in one process, tokens required. Agents alpha and beta work on t1
// with every right and write the global memory, reader only reads it,
// outsider has t2 and no memory, admin has every task (and so may create
// tasks). The suite drives WorkspacedClient,
// WorkspacedStore under a LangGraph.js StateGraph and against
// InMemoryStore, WorkspacedSession under the Agents SDK's run() and two
// processes adding at once, and the problem answer of every documented
// error, over the client's own transport (node:http on Node) and, for the
// client's own tests, over fetch too; and over HTTPS, an mcp --http
// listener with a certificate of its own. Every one of its tests must run
// and pass.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	node := tsPackageNode(t)
	if out, err := buildTSPackage(); err != nil {
		t.Fatalf("building the TypeScript client: %v\n%s", err, out)
	}
	suite, err := filepath.Glob(filepath.Join(tsPackageDir, "dist", "test", "*.test.js"))
	if err != nil || len(suite) == 0 {
		t.Fatalf("no compiled tests in %s/dist/test: %v", tsPackageDir, err)
	}
	for _, kind := range []string{"files", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newKindWS(t, kind)
			w.Task("t1")
			w.Task("t2")
			toks := map[string]string{
				"alpha":    w.addToken("--agent", "alpha", "--task", "t1", "--may", "claim,done,plan,review", "--global-memory", "write"),
				"beta":     w.addToken("--agent", "beta", "--task", "t1", "--may", "claim,done,plan,review", "--global-memory", "write"),
				"reader":   w.addToken("--agent", "reader", "--task", "t1", "--global-memory", "read"),
				"outsider": w.addToken("--agent", "outsider", "--task", "t2"),
				"admin":    w.addToken("--agent", "admin", "--task", "*", "--may", "claim,done,plan,review"),
			}
			// A token file makes the listener require tokens, loopback or not.
			tokenFile := filepath.Join(t.TempDir(), "ops-token")
			if err := os.WriteFile(tokenFile, []byte("ops-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			// The suite is about the client, not the limits (tested on their own):
			// two processes adding at once must not wait out Retry-After.
			d, base := w.opsServe("--token-file", tokenFile, "--rate", "100000", "--burst", "100000")
			// A second workspace that no daemon serves, behind the panel's
			// listener on loopback without a token (every local process is
			// trusted, the agent named by Workspace-Agent) and a small rate
			// per address: the client meets 429, 501 and 503 there.
			lw := newKindWS(t, kind)
			lw.Task("t1")
			loop := lw.Web("--address-rate", "1", "--address-burst", "8")
			// The API over HTTPS: mcp --http on the same workspace with a
			// certificate the suite's node trusts (NODE_EXTRA_CA_CERTS).
			certFile, keyFile, _ := clitest.SelfSignedCert(t, t.TempDir())
			mcpURL, _ := w.Listen(reMCPServing, "mcp", "--http", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile, "--rate", "100000", "--burst", "100000")
			tokJSON, err := json.Marshal(toks)
			if err != nil {
				t.Fatal(err)
			}
			env := append(clitest.CleanEnv(), "WORKSPACED_URL="+base[:len(base)-1], "WORKSPACED_TOKENS="+string(tokJSON),
				"WORKSPACED_TASK=t1", "WORKSPACED_STORE="+kind,
				"WORKSPACED_LOOPBACK_URL="+loop.URL, "WORKSPACED_TLS_URL="+strings.TrimSuffix(mcpURL, "/mcp"),
				"NODE_EXTRA_CA_CERTS="+certFile)
			runTSSuite(t, node, kind, env, suite, d)
			// The client sends through node:http on Node unless given a
			// fetch: its own tests and the loopback's (429, Retry-After)
			// once more with fetch forced, on one store (the transport
			// does not depend on it).
			// The loopback's tests once more on a listener of their own: the
			// first run spent its address's rate, which refills at one
			// request a second.
			if kind == "files" {
				again := lw.Web("--address-rate", "1", "--address-burst", "8")
				runTSSuite(t, node, kind+" over fetch", append(env, "WORKSPACED_TRANSPORT=fetch", "WORKSPACED_LOOPBACK_URL="+again.URL),
					[]string{filepath.Join(tsPackageDir, "dist", "test", "client.test.js"), filepath.Join(tsPackageDir, "dist", "test", "loopback.test.js")}, d)
			}
		})
	}
}

// runTSSuite runs the compiled test files of the client's suite with env,
// in one node process (suiteEntry), failing t unless every test ran and
// passed.
func runTSSuite(t *testing.T, node, what string, env, files []string, d *clitest.Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test-reporter=tap", suiteEntry(t, files))
	cmd.Dir, cmd.Env = tsPackageDir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	counts := map[string]int{}
	for _, m := range reTAPCount.FindAllStringSubmatch(out.String(), -1) {
		counts[m[1]], _ = strconv.Atoi(m[2])
	}
	if runErr != nil || counts["fail"] != 0 || counts["pass"] == 0 || counts["skipped"] != 0 || counts["cancelled"] != 0 {
		t.Fatalf("node on %s: %v, counts %v\n%s\nserver:\n%s", what, runErr, counts, out.String(), d.Log.String())
	}
	t.Logf("the TypeScript client's suite on %s: %d tests passed", what, counts["pass"])
}

// suiteEntry writes a module that imports each compiled test file of
// suite in turn and returns its path: node runs their tests one after
// another in one process, as `node --test --test-concurrency=1` runs them
// in one process a file, without loading node and the frameworks again
// for each file.
func suiteEntry(t *testing.T, suite []string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range suite {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
		fmt.Fprintf(&b, "await import(%q);\n", u.String())
	}
	entry := filepath.Join(t.TempDir(), "suite.mjs")
	if err := os.WriteFile(entry, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return entry
}
