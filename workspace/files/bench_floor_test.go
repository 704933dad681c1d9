package files

import (
	"os"
	"path/filepath"
	"testing"
)

// floorWrite is the bare durable replace of dir/name with data.
func floorWrite(b *testing.B, dir, name string, data []byte) {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		b.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	d.Close()
}

func BenchmarkDurableFloor(b *testing.B) {
	dir := b.TempDir()
	data := make([]byte, 1024)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		floorWrite(b, dir, "target.json", data)
	}
}
