package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestJSONArrayMatchesPrintJSON: a streamed array is byte for byte what
// printJSON writes for the whole slice, alone and nested in an object.
func TestJSONArrayMatchesPrintJSON(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2024, 1, 15, 10, 0, 0, 123_000_000, time.UTC)
	cases := map[string][]taskRow{
		"empty": {},
		"one":   {{ID: "t1", Status: "new", CreatedAt: t0, Description: "a <b> & \"c\"\nnext line"}},
		"three": {
			{ID: "t1", Status: "executing", Phase: "work", CreatedAt: t0, Description: "é ✓ \u2028", Priority: "high"},
			{ID: "t2", Status: "unreadable", Error: "tasks/t2/task.json: bad"},
			{ID: "t3", Status: "completed", CreatedAt: t0.Add(time.Hour), SubmittedBy: "human"},
		},
	}
	for name, rows := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := printJSON(&want, rows); err != nil {
				t.Fatal(err)
			}
			a := newJSONArray(&got, "")
			for _, r := range rows {
				if err := a.add(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.end(); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("streamed:\n%s\nprintJSON:\n%s", got.String(), want.String())
			}

			// Nested as the value of an object's field.
			want.Reset()
			if err := printJSON(&want, map[string]any{"rows": rows}); err != nil {
				t.Fatal(err)
			}
			got.Reset()
			got.WriteString("{\n  \"rows\": ")
			a = newJSONArray(&got, "  ")
			for _, r := range rows {
				if err := a.add(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.end(); err != nil {
				t.Fatal(err)
			}
			got.WriteString("\n}\n")
			if got.String() != want.String() {
				t.Fatalf("nested, streamed:\n%s\nprintJSON:\n%s", got.String(), want.String())
			}
			if name != "empty" && !strings.Contains(got.String(), "\n    {\n      \"id\"") {
				t.Fatalf("nested elements not indented:\n%s", got.String())
			}
		})
	}
}

// TestInOrder: results come out in the order of their index whatever
// order the workers finish in; an error from emit or a cancelled context
// stops it, and it returns only once no read is running.
func TestInOrder(t *testing.T) {
	t.Parallel()
	var running atomic.Int64
	read := func(i int) int {
		running.Add(1)
		defer running.Add(-1)
		// Uneven work, so that later items often finish first.
		x := 0
		for k := range (i * 7919) % 5000 {
			x += k
		}
		_ = x
		return i
	}
	for _, workers := range []int{0, 1, 3, 16} {
		var got []int
		err := inOrder(context.Background(), 500, workers, read, func(v int) error {
			got = append(got, v)
			return nil
		})
		if err != nil || len(got) != 500 {
			t.Fatalf("workers %d: %d results, %v", workers, len(got), err)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("workers %d: result %d is %d", workers, i, v)
			}
		}
	}
	if err := inOrder(context.Background(), 0, 4, read, func(int) error { t.Fatal("emit with nothing to read"); return nil }); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	err := inOrder(context.Background(), 1000, 4, read, func(v int) error {
		n++
		if v == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 11 {
		t.Fatalf("stopped after %d results with %v, want 11 and stop", n, err)
	}
	if r := running.Load(); r != 0 {
		t.Fatalf("%d reads still running after return", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := inOrder(ctx, 1000, 4, read, func(int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if r := running.Load(); r != 0 {
		t.Fatalf("%d reads still running after return", r)
	}
}
