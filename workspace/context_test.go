package workspace

import (
	"strings"
	"testing"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {"→", 1}, {strings.Repeat("x", 10000), 2500}} {
		if got := EstimateTokens(tc.in); got != tc.want {
			t.Errorf("EstimateTokens(%d bytes) = %d, want %d", len(tc.in), got, tc.want)
		}
	}
}

func TestGroupDigits(t *testing.T) {
	for in, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2500: "2,500", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := groupDigits(in); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", in, got, want)
		}
	}
}
