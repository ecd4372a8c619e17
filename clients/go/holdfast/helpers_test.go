package holdfast

import (
	"os"
	"path/filepath"
	"testing"
)

// repoRoot finds the repository root (the directory holding protos/) from
// the package directory go test runs in.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "protos", "holdfast", "v1", "holdfast.proto")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (protos/holdfast/v1/holdfast.proto) above the test directory")
		}
		dir = parent
	}
}
