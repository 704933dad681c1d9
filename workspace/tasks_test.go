package workspace

import (
	"errors"
	"testing"
)

func TestCheckDepth(t *testing.T) {
	cases := []struct {
		name string
		data string
		max  int
		ok   bool
	}{
		{"flat", `{"a":1}`, 1, true},
		{"at limit", `[[1]]`, 2, true},
		{"over", `[[[1]]]`, 2, false},
		{"brackets in strings", `["[[[[", "\"[[["]`, 1, true},
		{"escaped backslash", `["\\", [1]]`, 1, false},
		{"mixed", `{"a":[{"b":{}}]}`, 4, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDepth([]byte(tc.data), tc.max)
			if (err == nil) != tc.ok {
				t.Errorf("CheckDepth(%s, %d) = %v, want ok=%v", tc.data, tc.max, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrUnsafe) {
				t.Errorf("err = %v, want ErrUnsafe", err)
			}
		})
	}
}
