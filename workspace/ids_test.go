package workspace

import (
	"errors"
	"testing"

	"github.com/workspaced/workspaced/vocab"
)

// TestValidateIDWrapsVocab checks that the workspace's id check is the
// shared grammar, dressed as a workspace error: ErrInvalid for the CLI's
// exit code, the grammar in words as its hint.
func TestValidateIDWrapsVocab(t *testing.T) {
	if err := ValidateID("task id", "t-1.a_b"); err != nil {
		t.Fatalf("valid id refused: %v", err)
	}
	err := ValidateID("task id", "a b")
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, vocab.ErrInvalidID) {
		t.Fatalf("err = %v, want both ErrInvalid and vocab.ErrInvalidID", err)
	}
	if got, want := err.Error(), `task id "a b": not a valid id`; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got := HintOf(err); got != vocab.IDRule {
		t.Errorf("hint = %q, want %q", got, vocab.IDRule)
	}
}
