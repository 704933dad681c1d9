// Package vocab owns the words every room of the workspace shares: the
// grammar of ids, the task statuses state.json records, and how a
// duration is written for people.
//
// It imports nothing of this module, so the lowest rooms (friction,
// retention) can use it as well as workspace and its state machine. The
// embedded JSON Schemas carry IDPattern in their $defs; nothing else
// spells the grammar out.
package vocab

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// IDPattern is the pattern every id (task, subtask, thread, agent, review,
// plan) matches.
const IDPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`

// MaxIDBytes bounds an id.
const MaxIDBytes = 128

// IDRule says IDPattern in words, for a hint beside an invalid id.
const IDRule = "ids are 1–128 characters of letters, digits, '.', '_' and '-', starting with a letter or digit"

// ErrInvalidID is matched (errors.Is) by every error ValidateID returns.
var ErrInvalidID = errors.New("not a valid id")

// ValidID reports whether id matches IDPattern. It reads the bytes
// directly rather than through a regexp, so it is cheap enough to call on
// every name of a large directory.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValidateID returns nil for a valid id, and otherwise an error matching
// ErrInvalidID that names the id: what says which id it is ("task id"),
// and an id over 40 bytes is shown cut short.
func ValidateID(what, id string) error {
	if ValidID(id) {
		return nil
	}
	shown := id
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	return fmt.Errorf("%s %q: %w", what, shown, ErrInvalidID)
}

// Task statuses, as state.json records them. A task starts planning, moves
// to executing once its plan is approved, and ends in one of the three
// finished statuses.
const (
	StatusPlanning  = "planning"
	StatusExecuting = "executing"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Finished reports whether a task status is final: completed, failed or
// cancelled. A finished task refuses every further record.
func Finished(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// Active reports whether a task status is one a task has before it
// finishes: planning or executing. A status that is neither Active nor
// Finished is not one state.json may hold.
func Active(status string) bool {
	return status == StatusPlanning || status == StatusExecuting
}

// Duration writes d for people as Go writes durations, without the zero
// units that end it and without digits nobody reads: 1m47s, 2h30m, 24h,
// 1.5s, 250ms.
func Duration(d time.Duration) string {
	switch {
	case d >= time.Minute || d <= -time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second || d <= -time.Second:
		d = d.Round(10 * time.Millisecond)
	case d >= time.Millisecond || d <= -time.Millisecond:
		d = d.Round(time.Millisecond)
	}
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}
