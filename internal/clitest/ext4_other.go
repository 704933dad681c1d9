//go:build !linux

package clitest

import "testing"

// SmallExt4 skips the test: the disk-full and read-only faults are played
// on an ext4 image loop-mounted for the test, which only Linux can do.
func SmallExt4(t testing.TB, _ int64) string {
	t.Helper()
	t.Skip("skipped: the filesystem faults loop-mount an ext4 image, which needs Linux")
	return ""
}

// Fill is never reached here: SmallExt4 skips first.
func Fill(t testing.TB, _ string) {
	t.Helper()
	t.Fatal("fill needs the filesystem of SmallExt4, which needs Linux")
}
