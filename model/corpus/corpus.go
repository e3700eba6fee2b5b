// Package corpus finds the recorded SDK request bodies (testdata/sdk at the top of the
// repository) that tests, fuzz seeds, benchmarks and the load generator replay. It sits apart
// from package model so that model's own tests can use it.
package corpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns testdata/sdk of the module that holds the working directory. Go runs a
// package's tests in the package's folder, so walking up to go.mod finds it from any test.
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
	fx := filepath.Join(dir, "testdata", "sdk")
	if _, err := os.Stat(fx); err != nil {
		return "", fmt.Errorf("corpus: recorded SDK bodies not found: %w", err)
	}
	return fx, nil
}
