package clitest

import (
	"os"
	"testing"
)

// LongEnv, set to 1, runs the SIGKILL crash tests of e2e/ at their long
// sizes. By default each is sized to what its assertions need, so that
// no package runs long on a loaded machine: the same kills at random
// moments, every one of them while the agents write, over fewer markers,
// every marker still checked applied exactly once and every event logged
// once.
const LongEnv = "WORKSPACED_TORTURE_LONG"

// Long reports whether $WORKSPACED_TORTURE_LONG asks for the long sizes;
// a value other than 1 or 0 fails t.
func Long(t testing.TB) bool {
	t.Helper()
	switch v := os.Getenv(LongEnv); v {
	case "", "0":
		return false
	case "1":
		return true
	default:
		t.Fatalf("%s=%q: want 1 (the long sizes) or 0", LongEnv, v)
		return false
	}
}

// Sized is n, or full when $WORKSPACED_TORTURE_LONG asks for the long
// sizes.
func Sized(t testing.TB, n, full int) int {
	t.Helper()
	if Long(t) {
		return full
	}
	return n
}
