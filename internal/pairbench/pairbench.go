// Package pairbench times two ways of writing side by side in a
// benchmark: the same writers at once, each way in turn within every
// round, the order alternated, so that both meet the same load.
package pairbench

import (
	"sync"
	"testing"
	"time"
)

// Rates runs writers goroutines at once through one way, then the other,
// each round of b.Loop (the first round's order reversed in the next),
// after one warm-up round of each. Each call of a way writes items
// items. It reports the items a second of each way ("NAME-items/s") and
// the ratio of the second's to the first's ("ratio"), means over the
// rounds.
func Rates(b *testing.B, writers, items int, first, second string, ways map[string]func(writer int) error) {
	b.Helper()
	rate := func(how string) float64 {
		t0 := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				if err := ways[how](w); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		return float64(writers*items) / time.Since(t0).Seconds()
	}
	rate(first)
	rate(second)
	sum := map[string]float64{}
	for r := 0; b.Loop(); r++ {
		order := []string{first, second}
		if r%2 == 1 {
			order = []string{second, first}
		}
		got := map[string]float64{}
		for _, how := range order {
			got[how] = rate(how)
			sum[how+"-items/s"] += got[how]
		}
		sum["ratio"] += got[second] / got[first]
	}
	for k, v := range sum {
		b.ReportMetric(v/float64(b.N), k)
	}
}
