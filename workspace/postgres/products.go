package postgres

import (
	"context"
	"encoding/json"

	"github.com/workspaced/workspaced/workspace"
)

func (s *Store) ReadPlan(taskID string, version int) (*workspace.Plan, error) {
	return nil, notYet("read plan")
}
func (s *Store) ReadTaskDoc(taskID, name string) (json.RawMessage, error) {
	return nil, notYet("read task doc")
}
func (s *Store) ReadProduct(taskID, outputFile string) (workspace.Product, error) {
	return workspace.Product{}, notYet("read product")
}
func (s *Store) ValidateProduct(taskID, outputFile string) error { return notYet("validate product") }
func (s *Store) ListReviews(taskID string) ([]workspace.Review, []workspace.Skipped, error) {
	return nil, nil, notYet("list reviews")
}
func (s *Store) ReadTaskFile(taskID, name string, max int64) ([]byte, error) {
	return nil, notYet("read task file")
}
func (s *Store) WritePlan(ctx context.Context, taskID, agent string, data []byte) (workspace.Plan, error) {
	return workspace.Plan{}, notYet("write plan")
}
func (s *Store) WriteOutput(taskID, subtaskID, agent string, data []byte) (string, error) {
	return "", notYet("write output")
}
func (s *Store) WriteReview(taskID, reviewID, agent string, data []byte) (string, error) {
	return "", notYet("write review")
}
func (s *Store) WriteClaim(taskID, agent, subtaskID string) (string, error) {
	return "", notYet("claim")
}
func (s *Store) WriteDone(req workspace.DoneRequest) (string, error) { return "", notYet("done") }
