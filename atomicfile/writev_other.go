//go:build !linux

package atomicfile

import "os"

// writev writes bufs to f, in order, one write each.
func writev(f *os.File, bufs [][]byte) error {
	for _, b := range bufs {
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	return nil
}
