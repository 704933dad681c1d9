//go:build !linux

package main

import "testing"

// smallExt4 skips the test: the disk-full and read-only faults are played
// on an ext4 image loop-mounted for the test, which only Linux can do.
func smallExt4(t *testing.T, _ int64) string {
	t.Helper()
	t.Skip("skipped: the filesystem faults loop-mount an ext4 image, which needs Linux")
	return ""
}

// fill is never reached here: smallExt4 skips first.
func fill(t *testing.T, _ string) {
	t.Helper()
	t.Fatal("fill needs the filesystem of smallExt4, which needs Linux")
}
