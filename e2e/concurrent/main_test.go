// Package concurrent_test runs many workspaced processes at once on one
// directory root, updating one entry: read-modify-writes through
// --if-version that retry on conflict, and the same under `workspaced
// lock`. No update is lost. (The daemon under SIGKILL and bursts is
// e2e/torture; the two packages are apart so each stays short.)
package concurrent_test

import (
	"os"
	"testing"

	"github.com/workspaced/workspaced/internal/clitest"
)

func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }
