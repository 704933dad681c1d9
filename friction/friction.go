// Package friction keeps the workspace's cross-task friction log
// (friction/friction.json) and detects friction in the daemon's events.
//
// The package has a pure core and a thin shell. The detectors (Detect,
// DetectTimeouts) are pure functions over values: an observation of one
// event and the running Tally in, the new Tally and the findings out. The
// Log is the shell, the same over every store: a store keeps the log's
// one document (workspace.FrictionDoc: friction.json on files, a row in a
// database), and the Log reads it, applies findings or user-added entries
// under the document's lock, and writes it back canonically (Open gives a
// store's log).
//
// A repeat of a known pattern does not add an entry: an entry of the same
// type whose pattern (or, when it has none, description) matches a pending
// entry's, case and spacing aside, increments that entry's occurrences and
// adds the affected tasks to it. A pattern is matched as given: only the
// detectors normalise (Normalize) the patterns they derive from free text,
// so that "Line 12 fails" and "line 7 fails." are one friction, while
// "probe-1" and "probe-2" from a person stay two. Applied and dismissed
// entries are never merged into: friction that comes back after it was
// resolved becomes a new entry.
//
// friction.json also holds, under "tally", the detectors' running counts
// (review problems and failure causes seen, with their tasks), so that
// thresholds counted across tasks survive a daemon restart.
package friction

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Entry types.
const (
	TypeRepeatedRevision = "repeated_revision"
	TypeReviewerPattern  = "reviewer_pattern"
	TypeWorkerFailure    = "worker_failure"
	TypeTimeout          = "timeout"
	TypeEscalation       = "escalation"
)

// Entry statuses. Every entry starts pending; Resolve moves it to
// applied or dismissed.
const (
	StatusPending   = "pending"
	StatusApplied   = "applied"
	StatusDismissed = "dismissed"
)

// Types lists the entry types in a fixed order.
var Types = []string{TypeRepeatedRevision, TypeReviewerPattern, TypeWorkerFailure, TypeTimeout, TypeEscalation}

// Statuses lists the entry statuses in a fixed order.
var Statuses = []string{StatusPending, StatusApplied, StatusDismissed}

// Errors returned by this package.
var (
	// ErrNotFound reports a friction entry id that is not in the log.
	ErrNotFound = errors.New("friction entry not found")
	// ErrInvalid reports an entry, finding or status the log refuses (an
	// unknown type or status, an empty description, a malformed task id).
	ErrInvalid = errors.New("invalid friction entry")
	// ErrCorrupt reports a log file that does not parse or validate (or
	// is not a regular file). It is never overwritten: a person has to
	// fix or move it.
	ErrCorrupt = errors.New("friction log is invalid")
)

// IsType reports whether t is one of the five entry types.
func IsType(t string) bool { return slices.Contains(Types, t) }

// IsStatus reports whether s is one of the three entry statuses.
func IsStatus(s string) bool { return slices.Contains(Statuses, s) }

var listMarker = regexp.MustCompile(`^(?:[-*•]+|\(?[0-9]+[.)])\s+`)

// Normalize reduces a free-text problem, cause or reason to the form under
// which repeats are recognised: lower case, a leading list marker ("- ",
// "* ", "1. ", "2) ") dropped, whitespace runs collapsed to one space,
// punctuation and symbols other than "#" trimmed from both ends, and every run of digits
// replaced by one "#" ("Line 12 fails" and "line 7 fails." both give
// "line # fails"). Normalize is pure and idempotent.
func Normalize(s string) string {
	s = strings.Join(strings.Fields(strings.ToLower(s)), " ")
	for {
		t := listMarker.ReplaceAllString(s, "")
		t = strings.TrimFunc(t, func(r rune) bool {
			// "#" stays: it is what digits become, and keeping it makes
			// Normalize idempotent.
			return r != '#' && (unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsSpace(r))
		})
		if t == s {
			break
		}
		s = t
	}
	var b strings.Builder
	b.Grow(len(s))
	inDigits := false
	for _, r := range s {
		if unicode.IsDigit(r) {
			if !inDigits {
				b.WriteByte('#')
			}
			inDigits = true
			continue
		}
		inDigits = false
		b.WriteRune(r)
	}
	return b.String()
}

// dedupKey is what makes two entries "the same friction": the type and
// the pattern, or the description when there is no pattern, with case and
// spacing folded. Digits and punctuation count: a pattern is matched as
// given, and the detectors normalise the patterns they derive before they
// reach the log.
func dedupKey(typ, pattern, description string) string {
	k := foldSpace(pattern)
	if k == "" {
		k = foldSpace(description)
	}
	return typ + "\x00" + k
}

// foldSpace lower-cases s and collapses its runs of white space to one
// space, trimming both ends.
func foldSpace(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// mergeSorted returns the sorted union of a and b without duplicates and
// without empty strings. It never returns nil.
func mergeSorted(a []string, b ...string) []string {
	out := make([]string, 0, len(a)+len(b))
	for _, s := range a {
		if s != "" {
			out = append(out, s)
		}
	}
	for _, s := range b {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
