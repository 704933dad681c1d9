package friction_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/workspaced/workspaced/friction"

	_ "github.com/workspaced/workspaced/internal/raceexit"
)

// BenchmarkAdd measures one Add (lock, read, validate, write, fsync) on a
// log that already holds 200 entries.
func BenchmarkAdd(b *testing.B) {
	dir := b.TempDir()
	l := newBenchLog(b, dir)
	ctx := context.Background()
	for i := range 200 {
		if _, _, err := l.Add(ctx, friction.Entry{Type: friction.TypeEscalation, Description: "seed " + letters(i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, _, err := l.Add(ctx, friction.Entry{Type: friction.TypeEscalation, Description: fmt.Sprintf("seed %s", letters(i%200))}); err != nil {
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
		if _, _, err := l.Add(ctx, friction.Entry{Type: friction.TypeEscalation, Description: "seed " + letters(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := l.List(ctx, friction.Filter{}); err != nil {
			b.Fatal(err)
		}
	}
}
