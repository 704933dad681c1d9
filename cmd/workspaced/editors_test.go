package main

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
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/workspaced/workspaced/internal/clitest"
)

// The editors' configurations of docs/MCP.md, tested as written: each
// block marked <!-- editor: NAME --> is checked against the configuration
// format that editor documents (testdata/editors/*.schema.json, written
// from its documentation), its variables are resolved as the editor
// resolves them, and every server in it is started — the command, or a
// `workspaced mcp --http` server where its URL points — and reached with
// the MCP TypeScript SDK client, which lists the tools and the tasks.

var reEditorBlock = regexp.MustCompile("(?s)<!-- editor: ([a-z-]+) -->\n```[a-z]+\n(.*?)\n```")

// editorBlocks are the marked blocks of docs/MCP.md by editor.
func editorBlocks(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "MCP.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range reEditorBlock.FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// shLine splits one shell command line as sh does for the simple
// lines a doc shows: words, single and double quotes, and $VAR or ${VAR}
// expanded from env outside single quotes.
func shLine(line string, env map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	expand := func(s string, i int) (string, int) {
		// s[i] == '$'
		if i+1 < len(s) && s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "$", i + 1
			}
			return env[s[i+2:i+end]], i + end + 1
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		return env[s[i+1:j]], j
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
			i++
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+end+2
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '$' {
					v, next := expand(line, i)
					cur.WriteString(v)
					i = next - 1
					continue
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unclosed \" in %q", line)
			}
			inWord, i = true, i+1
		case c == '$':
			v, next := expand(line, i)
			cur.WriteString(v)
			inWord, i = true, next
		default:
			cur.WriteByte(c)
			inWord, i = true, i+1
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// claudeAdd reads the words of `claude mcp add [options] NAME -- COMMAND
// [ARGS...]` (stdio) or `claude mcp add [options] NAME URL` (http, sse),
// as Claude Code documents it, into the server it adds, as .mcp.json holds
// it.
func claudeAdd(words []string) (string, map[string]any, error) {
	if len(words) < 4 || words[0] != "claude" || words[1] != "mcp" || words[2] != "add" {
		return "", nil, fmt.Errorf("not a claude mcp add line: %q", words)
	}
	transport, scope := "stdio", "local"
	env, headers := map[string]string{}, map[string]string{}
	var pos, command []string
	rest := words[3:]
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		value := func() (string, error) {
			if i+1 >= len(rest) {
				return "", fmt.Errorf("%s wants a value", w)
			}
			i++
			return rest[i], nil
		}
		var err error
		var v string
		switch w {
		case "--":
			command = rest[i+1:]
			i = len(rest)
		case "--transport", "-t":
			transport, err = value()
		case "--scope", "-s":
			scope, err = value()
		case "--env", "-e":
			if v, err = value(); err == nil {
				k, val, ok := strings.Cut(v, "=")
				if !ok {
					err = fmt.Errorf("--env %q is not KEY=value", v)
				}
				env[k] = val
			}
		case "--header", "-H":
			if v, err = value(); err == nil {
				k, val, ok := strings.Cut(v, ":")
				if !ok {
					err = fmt.Errorf("--header %q is not Name: value", v)
				}
				headers[k] = strings.TrimSpace(val)
			}
		default:
			if strings.HasPrefix(w, "-") {
				err = fmt.Errorf("unknown option %s", w)
			}
			pos = append(pos, w)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if !slices.Contains([]string{"local", "project", "user"}, scope) {
		return "", nil, fmt.Errorf("--scope %q", scope)
	}
	switch transport {
	case "stdio":
		if len(pos) != 1 || len(command) == 0 {
			return "", nil, fmt.Errorf("a stdio server is NAME -- COMMAND [ARGS...], not %q", words)
		}
		srv := map[string]any{"type": "stdio", "command": command[0], "args": command[1:]}
		if len(env) > 0 {
			srv["env"] = env
		}
		return pos[0], srv, nil
	case "http", "sse":
		if len(pos) != 2 || command != nil {
			return "", nil, fmt.Errorf("a remote server is NAME URL, not %q", words)
		}
		srv := map[string]any{"type": transport, "url": pos[1]}
		if len(headers) > 0 {
			srv["headers"] = headers
		}
		return pos[0], srv, nil
	}
	return "", nil, fmt.Errorf("--transport %q", transport)
}

var reVar = regexp.MustCompile(`\$\{([^}]*)\}`)

// resolveVars replaces the variables of one editor in s: Claude Code's
// ${NAME} and ${NAME:-default} from the environment; Cursor's and VS
// Code's ${env:NAME} and ${workspaceFolder}; VS Code's ${input:ID}, from
// the inputs the file declares. A variable the editor does not know is an
// error.
func resolveVars(editor, s string, env map[string]string, folder string, inputs map[string]string) (string, error) {
	var bad error
	out := reVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		switch {
		case editor == "claude-code":
			k, def, hasDef := strings.Cut(name, ":-")
			if v, ok := env[k]; ok {
				return v
			}
			if hasDef {
				return def
			}
			bad = fmt.Errorf("%s is not set", m)
		case name == "workspaceFolder":
			return folder
		case strings.HasPrefix(name, "env:"):
			return env[strings.TrimPrefix(name, "env:")]
		case editor == "vscode" && strings.HasPrefix(name, "input:"):
			v, ok := inputs[strings.TrimPrefix(name, "input:")]
			if !ok {
				bad = fmt.Errorf("%s names no input of the file's inputs", m)
			}
			return v
		default:
			bad = fmt.Errorf("%s is no variable of %s", m, editor)
		}
		return m
	})
	return out, bad
}

// resolveServer is one server entry with its variables resolved.
func resolveServer(editor string, srv map[string]any, env map[string]string, folder string, inputs map[string]string) (map[string]any, error) {
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		switch x := v.(type) {
		case string:
			return resolveVars(editor, x, env, folder, inputs)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				var err error
				if out[i], err = walk(e); err != nil {
					return nil, err
				}
			}
			return out, nil
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				var err error
				if out[k], err = walk(e); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
		return v, nil
	}
	r, err := walk(srv)
	if err != nil {
		return nil, err
	}
	return r.(map[string]any), nil
}

// validateEditor checks doc against testdata/editors/NAME.schema.json.
func validateEditor(t *testing.T, name string, doc any) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	sch, err := c.Compile(filepath.Join("testdata", "editors", name+".schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The validator wants JSON's own types.
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("%s: not a configuration %s takes: %#v", name, name, err)
	}
}

// TestEditorConfigs: every editor's block of docs/MCP.md is a valid
// configuration of that editor, and each server in it, started as the
// editor starts it, serves the whole workspace to the TypeScript SDK
// client.
func TestEditorConfigs(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	w := newWS(t)
	w.Task("t1")
	token := w.addToken("--agent", "editor", "--task", "*")
	srv := w.mcpHTTP()
	served, err := url.Parse(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"WORKSPACE_TOKEN": token}

	blocks := editorBlocks(t)
	for _, want := range []string{"claude-code-cli", "claude-code", "cursor", "vscode"} {
		if blocks[want] == "" {
			t.Errorf("docs/MCP.md has no block marked <!-- editor: %s -->", want)
		}
	}
	for editor, block := range blocks {
		schemaName := editor
		var doc map[string]any
		if editor == "claude-code-cli" {
			// The lines add what .mcp.json then holds.
			schemaName = "claude-code"
			servers := map[string]any{}
			for _, line := range strings.Split(block, "\n") {
				words, err := shLine(line, env)
				if err != nil {
					t.Fatalf("%s: %v", editor, err)
				}
				name, s, err := claudeAdd(words)
				if err != nil {
					t.Fatalf("%s: %v", editor, err)
				}
				servers[name] = s
			}
			doc = map[string]any{"mcpServers": servers}
		} else if err := json.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("%s: the block is not JSON: %v", editor, err)
		}
		validateEditor(t, schemaName, doc)

		inputs := map[string]string{}
		if in, ok := doc["inputs"].([]any); ok {
			for _, e := range in {
				// The one input asked for is the token.
				inputs[e.(map[string]any)["id"].(string)] = token
			}
		}
		key := "mcpServers"
		if editor == "vscode" {
			key = "servers"
		}
		servers, _ := doc[key].(map[string]any)
		kinds := map[string]bool{}
		for name, s := range servers {
			spec, err := resolveServer(schemaName, s.(map[string]any), env, w.Dir, inputs)
			if err != nil {
				t.Errorf("%s %s: %v", editor, name, err)
				continue
			}
			if u, ok := spec["url"].(string); ok {
				// The server the URL names, on the port this test got.
				pu, err := url.Parse(u)
				if err != nil || pu.Hostname() != "127.0.0.1" || pu.Path != "/mcp" || pu.RawQuery != "" {
					t.Errorf("%s %s: url %q is not the whole workspace's endpoint on loopback", editor, name, u)
					continue
				}
				pu.Host = served.Host
				spec = map[string]any{"type": "http", "url": pu.String(), "headers": spec["headers"]}
			} else {
				spec["type"], spec["cwd"] = "stdio", w.Dir
			}
			kinds[spec["type"].(string)] = true
			t.Run(editor+"/"+name, func(t *testing.T) {
				t.Parallel()
				got := connectTS(t, node, spec)
				if !slices.Contains(got.Tools, "list_tasks") || !slices.Contains(got.Tools, "get_task") || !slices.Equal(got.Tasks, []string{"t1"}) {
					t.Errorf("tools %v, tasks %v", got.Tools, got.Tasks)
				}
			})
		}
		if !kinds["stdio"] || !kinds["http"] {
			t.Errorf("%s: servers %v, want one over stdio and one over HTTP", editor, kinds)
		}
	}
}

// connectTS runs connect.mjs with the resolved server spec, with the
// binary first on PATH, as an editor that finds `workspaced` there.
func connectTS(t *testing.T, node string, spec map[string]any) (out struct {
	Tools []string `json:"tools"`
	Tasks []string `json:"tasks"`
}) {
	t.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "connect.mjs", string(data))
	cmd.Dir = tsClientDir
	cmd.Env = append(clitest.CleanEnv(), "PATH="+filepath.Dir(clitest.Bin())+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node connect.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("node connect.mjs printed %q: %v", stdout.String(), err)
	}
	return out
}
