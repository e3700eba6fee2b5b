// Package corpus finds the recorded SDK request bodies (shared/fixtures/measure) that tests,
// benchmarks and the load generator replay. It sits apart from package model so that model's
// own tests can use it.
package corpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns shared/fixtures/measure beside the repository that holds the working directory
// (CI clones the repository with shared/ next to it).
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("corpus: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("corpus: no go.mod above the working directory")
		}
		dir = parent
	}
	fx := filepath.Join(dir, "..", "shared", "fixtures", "measure")
	if _, err := os.Stat(fx); err != nil {
		return "", fmt.Errorf("corpus: fixtures not found beside the repository: %w", err)
	}
	return fx, nil
}
