package livesocket

import (
	"fmt"
	"net"
)

// liveAddr is the abstract socket of the daemon serving root.
func liveAddr(root string) (string, error) {
	dev, ino, err := rootID(root)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("@workspaced/%x/%x", dev, ino), nil
}

// listenAddr listens on the abstract socket addr, which has no file and
// goes away with the listener.
func listenAddr(addr string) (net.Listener, error) { return net.Listen("unix", addr) }
