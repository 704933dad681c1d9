package workspace

import "testing"

func TestDecodeKeyRefusesNonCanonical(t *testing.T) {
	for _, name := range []string{"", ".hidden", "%2e", "%41", "%2", "%", "a/b", "%00", "a%ZZ", "%2F%2E"} {
		t.Run(name, func(t *testing.T) {
			if k, err := DecodeKey(name); err == nil && EncodeKey(k) != name {
				t.Errorf("DecodeKey(%q) = %q, which encodes differently", name, k)
			} else if err == nil && name != "%2F%2E" {
				t.Errorf("DecodeKey(%q) = %q, want an error", name, k)
			}
		})
	}
}
