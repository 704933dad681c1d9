package friction

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkAdd measures one Add (lock, read, validate, write, fsync) on a
// log that already holds 200 entries.
func BenchmarkAdd(b *testing.B) {
	dir := b.TempDir()
	l := newBenchLog(b, dir)
	ctx := context.Background()
	for i := range 200 {
		if _, _, err := l.Add(ctx, Entry{Type: TypeEscalation, Description: "seed " + letters(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := l.Add(ctx, Entry{Type: TypeEscalation, Description: fmt.Sprintf("seed %s", letters(i%200))}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck measures parsing and validating a log of 200 entries.
func BenchmarkCheck(b *testing.B) {
	dir := b.TempDir()
	l := newBenchLog(b, dir)
	ctx := context.Background()
	for i := range 200 {
		if _, _, err := l.Add(ctx, Entry{Type: TypeEscalation, Description: "seed " + letters(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, _, err := l.read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
