//go:build !linux

package livesocket

import (
	"net"
	"os"
)

// liveDir is where the socket files are: /tmp rather than $TMPDIR, so that
// status finds the daemon whatever $TMPDIR each was started with (macOS
// gives every login session its own).
const liveDir = "/tmp"

// liveAddr is the socket file of the daemon serving root: there is no
// abstract namespace here.
func liveAddr(root string) (string, error) {
	dev, ino, err := rootID(root)
	if err != nil {
		return "", err
	}
	return liveSocketPath(liveDir, os.Getuid(), dev, ino), nil
}

// listenAddr listens on the socket file addr (see listenLiveFile).
func listenAddr(addr string) (net.Listener, error) { return listenLiveFile(addr) }
