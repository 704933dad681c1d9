package ops

import (
	"context"
	"errors"
	"testing"

	"github.com/workspaced/workspaced/workspace"
)

// cancelOnEntry is a store that ignores the caller's context, as the file
// tree does for most reads, and whose first entry read is where the
// caller gives up: it cancels the context, then reads as if nothing
// happened.
type cancelOnEntry struct {
	Backend
	cancel context.CancelFunc
}

func (s cancelOnEntry) GetEntry(ctx context.Context, sc workspace.Scope, key string) (workspace.Entry, error) {
	s.cancel()
	return s.Backend.GetEntry(context.WithoutCancel(ctx), sc, key)
}

func (s cancelOnEntry) ListEntries(ctx context.Context, sc workspace.Scope) ([]workspace.ManifestItem, error) {
	return s.Backend.ListEntries(context.WithoutCancel(ctx), sc)
}

// TestOpsStopWhenContextEnds checks that every shared operation given a
// context that has ended returns its error, writes nothing, and that a
// context ending in the middle of an assembly is an error too, not a
// bundle with the reads it cut short left out.
func TestOpsStopWhenContextEnds(t *testing.T) {
	t.Parallel()
	w := provFixture(t)
	ops := Over(w)
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	cases := []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"context", func(ctx context.Context) error {
			_, err := ops.Context(ctx, "th_observer", ContextOptions{Unlimited: true})
			return err
		}},
		{"context of an agent", func(ctx context.Context) error {
			_, err := ops.Context(ctx, "", ContextOptions{Agent: "observer", Unlimited: true})
			return err
		}},
		{"preamble", func(ctx context.Context) error {
			_, err := ops.Preamble(ctx, "th_observer", PreambleOptions{TaskID: "training-001"})
			return err
		}},
		{"system context", func(ctx context.Context) error {
			_, err := ops.SystemContext(ctx, "observer", "training-001")
			return err
		}},
		{"capabilities", func(ctx context.Context) error { _, err := ops.Capabilities(ctx, "observer", ""); return err }},
		{"chain", func(ctx context.Context) error { _, err := ops.Chain(ctx, "training-001", "th_observer"); return err }},
		{"thread skills", func(ctx context.Context) error {
			_, err := ops.ThreadSkills(ctx, "training-001", "th_observer")
			return err
		}},
		{"active thread", func(ctx context.Context) error { _, err := ops.ActiveThread(ctx, "observer"); return err }},
		{"activate thread", func(ctx context.Context) error {
			_, err := ops.ActivateThread(ctx, "training-001", "th_terse", "")
			return err
		}},
	}
	for _, tc := range cases {
		if err := tc.op(ended); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with an ended context: got %v, want context.Canceled", tc.name, err)
		}
	}
	if th, err := w.GetThread(t.Context(), "training-001", "th_terse"); err != nil || th.Status != "pending" {
		t.Fatalf("th_terse after an activation with an ended context: status %q, %v; want it pending as it was", th.Status, err)
	}
	// The same calls with a live context succeed: the error above was
	// the context's.
	for _, tc := range cases {
		if err := tc.op(t.Context()); err != nil {
			t.Errorf("%s with a live context: %v", tc.name, err)
		}
	}

	t.Run("ended in the middle", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		b, err := Over(cancelOnEntry{Backend: w, cancel: cancel}).Context(ctx, "th_observer", ContextOptions{Unlimited: true})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got bundle with omitted %v and error %v, want context.Canceled", b.Omitted, err)
		}
	})
}
