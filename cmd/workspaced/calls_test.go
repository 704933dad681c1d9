package main

import (
	"strings"
	"testing"

	"github.com/workspaced/workspaced/workspace/ops"
)

// TestSurfaceCallsAreCommands: every command the system context and the
// preamble name to a CLI or files agent (ops.Call) is a command of this
// binary, its subcommand one whose --help answers, and its flags ones
// the command takes.
func TestSurfaceCallsAreCommands(t *testing.T) {
	t.Parallel()
	flags := commandFlags(t)
	w := newWS(t)
	checked := 0
	for _, s := range []ops.Surface{ops.SurfaceCLI, ops.SurfaceFiles} {
		for _, c := range ops.UniversalCapabilities {
			call := ops.Call(s, c.Name, "t1", "observer")
			fields := strings.Fields(call)
			if len(fields) < 2 || fields[0] != "workspaced" {
				continue
			}
			checked++
			known, ok := flags[fields[1]]
			if !ok {
				t.Errorf("%s on %s: %q names no command", c.Name, s, call)
				continue
			}
			if len(fields) > 2 && !strings.HasPrefix(fields[2], "--") {
				w.Ok(fields[1], fields[2], "--help")
			}
			for fl := range docFlags(call) {
				if !known[fl] {
					t.Errorf("%s on %s: %q: %s takes no --%s", c.Name, s, call, fields[1], fl)
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("checked only %d commands", checked)
	}
}
