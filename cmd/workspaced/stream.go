package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// jsonArray writes a JSON array one element at a time, byte for byte as
// printJSON writes the whole slice (two-space indent, no HTML escaping,
// "[]" when empty, a trailing newline), so a command can stream a list of
// any length in the output format it has always had. indent is the
// indentation of the line holding the array ("" at the top level).
type jsonArray struct {
	w      io.Writer
	indent string
	n      int
	buf    bytes.Buffer
	enc    *json.Encoder
}

func newJSONArray(w io.Writer, indent string) *jsonArray {
	a := &jsonArray{w: w, indent: indent}
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetEscapeHTML(false)
	a.enc.SetIndent(indent+"  ", "  ")
	return a
}

// add writes one element.
func (a *jsonArray) add(v any) error {
	a.buf.Reset()
	if a.n == 0 {
		a.buf.WriteString("[\n")
	} else {
		a.buf.WriteString(",\n")
	}
	a.buf.WriteString(a.indent + "  ")
	if err := a.enc.Encode(v); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	a.buf.Truncate(a.buf.Len() - 1) // Encode's newline: a comma may follow
	a.n++
	_, err := a.w.Write(a.buf.Bytes())
	return err
}

// end closes the array; at the top level it ends the line too.
func (a *jsonArray) end() error {
	s := "[]"
	if a.n > 0 {
		s = "\n" + a.indent + "]"
	}
	if a.indent == "" {
		s += "\n"
	}
	_, err := io.WriteString(a.w, s)
	return err
}

// inOrder calls read(i) for every i in [0, n) on up to workers goroutines
// at once and emit with the results in the order of i, as each becomes
// due, holding at most a few results per worker: for commands whose
// per-item work (reading and validating files) dominates, and whose output
// must keep its order. It stops at emit's first error, or when ctx is
// done, and returns only once every goroutine it started has ended.
func inOrder[T any](ctx context.Context, n, workers int, read func(i int) T, emit func(T) error) error {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		i   int
		out chan T
	}
	jobs := make(chan job)
	due := make(chan chan T, 4*workers)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		defer close(due)
		for i := range n {
			out := make(chan T, 1)
			select {
			case due <- out:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- job{i, out}:
			case <-ctx.Done():
				return
			}
		}
	})
	for range min(workers, n) {
		wg.Go(func() {
			for j := range jobs {
				j.out <- read(j.i)
			}
		})
	}
	var err error
	emitted := 0
	for out := range due {
		if err == nil {
			select {
			case v := <-out:
				emitted++
				err = emit(v)
			case <-ctx.Done():
				err = ctx.Err()
			}
			if err != nil {
				cancel()
			}
		}
	}
	wg.Wait()
	if err == nil && emitted < n {
		err = ctx.Err() // stopped before the end: only a cancelled ctx does that
	}
	return err
}

// eachParallel calls f for every i in [0, n), on as many goroutines as
// GOMAXPROCS, and returns when every call has returned: for per-item work
// whose results go to their own slots, in no order.
func eachParallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}
