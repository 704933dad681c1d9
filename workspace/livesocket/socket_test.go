package livesocket

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workspaced/workspaced/workspace"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// The socket file that stands in for the abstract socket off Linux: it
// answers with the report, replaces a file left by a dead daemon, is gone
// once closed, and is refused in a directory others may write or own.
func TestListenLiveFile(t *testing.T) {
	base := t.TempDir()
	path := liveSocketPath(base, os.Getuid(), 0x2a, 0x1f00)
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil { // left by a daemon that died
		t.Fatal(err)
	}
	ln, err := listenLiveFile(path)
	if err != nil {
		t.Fatalf("listen over a stale file: %v", err)
	}
	go serveLive(ln, func() workspace.Live { return workspace.Live{PID: 7, Tasks: 3} })
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var l workspace.Live
	err = json.NewDecoder(c).Decode(&l)
	c.Close()
	if err != nil || l.PID != 7 || l.Tasks != 3 {
		t.Fatalf("report %+v (%v), want pid 7 and 3 tasks", l, err)
	}
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file after close: %v, want it removed", err)
	}

	if err := os.Chmod(filepath.Dir(path), 0o777); err != nil {
		t.Fatal(err)
	}
	if ln, err := listenLiveFile(path); err == nil {
		ln.Close()
		t.Fatal("listened in a directory anyone may write")
	} else if !strings.Contains(err.Error(), "not a directory of this user's alone") {
		t.Errorf("error %q does not say why", err)
	}
	if os.Geteuid() != 0 {
		return // only root can give the directory to another user
	}
	if err := os.Chmod(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Dir(path), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if ln, err := listenLiveFile(path); err == nil {
		ln.Close()
		t.Fatal("listened in another user's directory")
	}
}

// The longest socket file name under /tmp fits macOS's 104-byte sun_path.
func TestLiveSocketPathFits(t *testing.T) {
	p := liveSocketPath("/tmp", 1<<31-1, 1<<64-1, 1<<64-1)
	if len(p) >= 104 {
		t.Errorf("%s is %d bytes, more than sun_path holds", p, len(p))
	}
}
