package postgres

import (
	"context"

	"github.com/workspaced/workspaced/workspace"
)

func (s *Store) ListBackups(taskID string) ([]workspace.BackupInfo, error) {
	return nil, notYet("list backups")
}
func (s *Store) ReadBackup(taskID, name string) ([]byte, error) { return nil, notYet("read backup") }
func (s *Store) RestoreBackup(ctx context.Context, taskID, name string, valid func([]byte) error) (string, error) {
	return "", notYet("restore backup")
}
