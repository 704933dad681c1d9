package workspace

import (
	"errors"
	"strings"
	"testing"
)

// TestParseScopeOldNames: the scope names of every door are taken; the old
// spellings are refused, the hint naming the new one.
func TestParseScopeOldNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]ScopeKind{"thread": ScopeThread, "session": ScopeSession, "agent": ScopeAgent, "global": ScopeGlobal} {
		if got, err := ParseScope(name); err != nil || got != want {
			t.Errorf("ParseScope(%q) = %q, %v", name, got, err)
		}
	}
	for old, hint := range map[string]string{"po": "use the scope agent", "env": "use the scope global", "env_data": "use the scope thread", "planet": "use one of thread, session, agent, global"} {
		_, err := ParseScope(old)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(HintOf(err), hint) {
			t.Errorf("ParseScope(%q) = %v (hint %q), want a hint with %q", old, err, HintOf(err), hint)
		}
	}
}
