package workspace

import (
	"context"

	"github.com/workspaced/workspaced/retention"
)

// RetentionSettings is the cleanup policy.
type RetentionSettings struct {
	FullDays    int `json:"full_days,omitempty"`
	SummaryDays int `json:"summary_days,omitempty"`
}

// PruneRequest asks for one retention run; its fields mean what the
// same fields of retention.Pruner mean.
type PruneRequest struct {
	Policy           retention.Policy
	DryRun           bool
	Agent            string
	OnProgress       func(retention.Decision)
	DiscardDecisions bool
}

// Retention carries out the retention policy: finished tasks are
// summarised, then removed, each under its task lock; busy tasks are
// skipped.
type Retention interface {
	Prune(ctx context.Context, req PruneRequest) (retention.Report, error)
}
