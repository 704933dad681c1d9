//go:build !linux

package bench

import (
	"io"
	"os"
	"path/filepath"
)

// quietStdin returns in: only on Linux is the agent's input read raw.
func quietStdin(in io.Reader) io.Reader { return in }

// dropMarker renames tmp to name, both in dir, and fsyncs dir: the
// atomic drop of a marker.
func dropMarker(dir, tmp, name string) error {
	if err := os.Rename(filepath.Join(dir, tmp), filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
