package raceexit_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/internal/raceexit"
)

// TestGORACE: under -race the binary runs with the short exit wait in
// $GORACE (or with the caller's own atexit_sleep_ms); without -race,
// $GORACE is the caller's.
func TestGORACE(t *testing.T) {
	got := os.Getenv("GORACE")
	if !raceEnabled {
		if strings.Contains(got, raceexit.Sleep) {
			t.Errorf("GORACE=%q in a binary built without -race", got)
		}
		return
	}
	if !strings.Contains(got, "atexit_sleep_ms") {
		t.Errorf("GORACE=%q: the binary was not started again with %s", got, raceexit.Sleep)
	}
}

// printEnv makes TestPrintGORACE print $GORACE (see TestKeepsTheCallersGORACE).
const printEnv = "RACEEXIT_PRINT"

func TestPrintGORACE(t *testing.T) {
	if os.Getenv(printEnv) != "" {
		fmt.Printf("GORACE=[%s]\n", os.Getenv("GORACE"))
	}
}

// TestKeepsTheCallersGORACE starts this binary with a $GORACE of the
// caller's: its options stay, the wait is added to them, and a wait the
// caller set is the one the binary runs with.
func TestKeepsTheCallersGORACE(t *testing.T) {
	for _, c := range []struct{ given, want string }{
		{"halt_on_error=1", "halt_on_error=1 " + raceexit.Sleep},
		{"atexit_sleep_ms=7", "atexit_sleep_ms=7"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPrintGORACE$")
		cmd.Env = append(os.Environ(), printEnv+"=1", "GORACE="+c.given)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := c.given
		if raceEnabled {
			want = c.want
		}
		if !strings.Contains(string(out), "GORACE=["+want+"]") {
			t.Errorf("GORACE=%s given: the binary ran with %q, want GORACE=[%s]", c.given, out, want)
		}
	}
}

// TestEveryTestBinaryImportsIt: each package of the module with tests
// imports this one in them, so that no test binary of `go test -race
// ./...` waits the default second at its exit.
func TestEveryTestBinaryImportsIt(t *testing.T) {
	const self = "github.com/workspaced/workspaced/internal/raceexit"
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{len .TestGoFiles}} {{len .XTestGoFiles}} {{.TestImports}} {{.XTestImports}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || (f[1] == "0" && f[2] == "0") || f[0] == self {
			continue
		}
		n++
		if !strings.Contains(line, self+" ") && !strings.Contains(line, self+"]") {
			t.Errorf("%s has tests but does not import %s in them", f[0], self)
		}
	}
	if n < 40 {
		t.Errorf("only %d packages with tests listed:\n%s", n, out)
	}
}
