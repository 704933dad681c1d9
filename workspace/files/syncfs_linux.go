package files

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the whole filesystem holding root (syncfs(2)).
func syncFS(root *os.Root) error {
	f, err := openDir(root)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
