package ops

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/workspaced/workspaced/workspace"
)

// SystemMemoryMaxBytes bounds the memory manifest of a system context: the
// lines listing keys stop before they would pass it, and a last line says
// how many keys were not listed.
const SystemMemoryMaxBytes = 2048

// SystemMemoryDescriptionBytes cuts each description in the manifest.
const SystemMemoryDescriptionBytes = 160

// memorySection is the "What you remember" part of a system context: the
// agent's own memory, then the global memory, one line a key (key and
// description, never the value), by key, within SystemMemoryMaxBytes. When
// both scopes do not fit, each gets half the bound and what one leaves is
// the other's (memoryShares), so a crowded scope never hides the other; a
// last line says how many keys of a scope were not listed. A scope that
// cannot be listed says so on its line; it never fails the block.
func (w Ops) memorySection(ctx context.Context, agent string) string {
	type scope struct {
		title string
		items []workspace.ManifestItem
		err   error
	}
	scopes := []scope{{title: "Your memory (yours alone, kept across tasks)"}, {title: "Global memory (shared by every agent and task)"}}
	for i, s := range []workspace.Scope{{Kind: workspace.ScopeAgent, Agent: agent}, {Kind: workspace.ScopeGlobal}} {
		scopes[i].items, scopes[i].err = w.ListEntries(ctx, s)
	}
	var b strings.Builder
	b.WriteString("\n### What you remember\n")
	if scopes[0].err == nil && scopes[1].err == nil && len(scopes[0].items)+len(scopes[1].items) == 0 {
		b.WriteString("You have no memory entries yet, and there is no global memory.\n")
		return b.String()
	}
	b.WriteString("Keys and descriptions only: read a value when you need it.\n")
	lines := make([][]string, len(scopes))
	need := make([]int, len(scopes))
	for i, s := range scopes {
		for _, it := range s.items {
			line := "- " + memoryKey(it.Key)
			if d := workspace.CutText(oneLine(it.ShortDescription), SystemMemoryDescriptionBytes); d != "" {
				line += ": " + d
			}
			line += "\n"
			lines[i] = append(lines[i], line)
			need[i] += len(line)
		}
	}
	shares := memoryShares(need[0], need[1], SystemMemoryMaxBytes)
	for i, s := range scopes {
		fmt.Fprintf(&b, "%s:\n", s.title)
		switch {
		case s.err != nil:
			fmt.Fprintf(&b, "- (could not be listed: %s)\n", workspace.CutText(oneLine(workspace.ErrorMsg(s.err)), SystemMemoryDescriptionBytes))
			continue
		case len(s.items) == 0:
			b.WriteString("- (none)\n")
			continue
		}
		left := shares[i]
		for j, line := range lines[i] {
			if len(line) > left {
				fmt.Fprintf(&b, "- … and %d more not listed here\n", len(lines[i])-j)
				break
			}
			left -= len(line)
			b.WriteString(line)
		}
	}
	return b.String()
}

// memoryShares splits bound between two scopes needing a and b bytes:
// each whole when both fit, else half each, a scope needing less than
// half leaving the rest to the other.
func memoryShares(a, b, bound int) [2]int {
	half := bound / 2
	switch {
	case a+b <= bound:
		return [2]int{a, b}
	case a <= half:
		return [2]int{a, bound - a}
	case b <= half:
		return [2]int{bound - b, b}
	}
	return [2]int{half, bound - half}
}

// memoryKey shows a key on a manifest line: as it is when it is a plain
// word, quoted otherwise (a key may hold spaces, colons, anything printable).
func memoryKey(k string) string {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return strconv.Quote(k)
		}
	}
	return k
}
