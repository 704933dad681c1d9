package workspace

import "testing"

// The caller's step is its own thread's: a parent addressed to someone
// else says nothing about the caller.
func TestMemoryShares(t *testing.T) {
	for _, tc := range []struct{ a, b, bound, wa, wb int }{
		{10, 20, 100, 10, 20},
		{100, 0, 100, 100, 0},
		{30, 200, 100, 30, 70},
		{200, 30, 100, 70, 30},
		{200, 200, 100, 50, 50},
		{200, 200, 101, 50, 51},
		{0, 0, 0, 0, 0},
	} {
		if got := memoryShares(tc.a, tc.b, tc.bound); got != [2]int{tc.wa, tc.wb} {
			t.Errorf("memoryShares(%d, %d, %d) = %v, want [%d %d]", tc.a, tc.b, tc.bound, got, tc.wa, tc.wb)
		}
	}
}

func TestCallerStep(t *testing.T) {
	tests := []struct {
		name       string
		chain      []Thread
		step, what string
	}{
		{"root thread", []Thread{{ID: "t", To: "a", Progress: "p"}}, "", ""},
		{"progress first", []Thread{{ID: "t", To: "a", Progress: " p ", Approach: "a"}, {ID: "x", From: "a", To: "b"}}, "p", "latest step"},
		{"approach else", []Thread{{ID: "t", To: "a", Approach: "a"}, {ID: "x", From: "a", To: "b"}}, "a", "approach"},
		{"blank", []Thread{{ID: "t", To: "a", Progress: "  ", Approach: "\n"}, {ID: "x", From: "a", To: "b"}}, "", ""},
		{"parent not the caller's", []Thread{{ID: "t", To: "a", Progress: "p"}, {ID: "x", From: "z", To: "b"}}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			step, what := callerStep(tc.chain)
			if step != tc.step || what != tc.what {
				t.Errorf("got %q %q, want %q %q", step, what, tc.step, tc.what)
			}
		})
	}
}
