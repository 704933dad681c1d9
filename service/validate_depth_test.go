package service

import (
	"os"
	"strings"
	"testing"

	"github.com/workspaced/workspaced/schemas"
)

// TestValidateEntryDepth: validate applies the depth limit to an entry's
// value, as the stores do: a value nested to the limit passes, one level
// more does not.
func TestValidateEntryDepth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tt := range []struct {
		depth int
		ok    bool
	}{{schemas.MaxDepth - 1, true}, {schemas.MaxDepth, true}, {schemas.MaxDepth + 1, false}} {
		value := strings.Repeat("[", tt.depth) + strings.Repeat("]", tt.depth)
		doc := `{"key": "k", "short_description": "", "stored_by": "a", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z", "version": 1, "value": ` + value + "}\n"
		if err := os.WriteFile(dir+"/k.json", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		probs := validateFile(root, "k.json", schemas.KindEntry)
		if got := len(probs) == 0; got != tt.ok {
			t.Errorf("value nested %d deep: problems %v, want ok=%v", tt.depth, probs, tt.ok)
		}
	}
}
