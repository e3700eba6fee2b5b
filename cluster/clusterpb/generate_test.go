package clusterpb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestGeneratedCodeIsFresh regenerates cluster.pb.go with protoc and the protoc-gen-go version
// pinned in go.mod, and fails when the committed file differs. To regenerate by hand (from the
// repository root):
//
//	go build -o bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
//	protoc --plugin=protoc-gen-go=bin/protoc-gen-go --proto_path=. \
//		--go_out=. --go_opt=paths=source_relative cluster/clusterpb/cluster.proto
//
// The proto path is the repository root so that the file registers under its full path (see
// cluster.proto).
func TestGeneratedCodeIsFresh(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Fatalf("protoc not installed (apt-get install -y protobuf-compiler): %v", err)
	}
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Dir(self)
	root := filepath.Join(dir, "..", "..")
	tmp := t.TempDir()
	plugin := filepath.Join(tmp, "protoc-gen-go")
	build := exec.Command("go", "build", "-o", plugin, "google.golang.org/protobuf/cmd/protoc-gen-go")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build protoc-gen-go: %v\n%s", err, out)
	}
	gen := exec.Command(protoc, "--plugin=protoc-gen-go="+plugin, "--proto_path=.",
		"--go_out="+tmp, "--go_opt=paths=source_relative", "cluster/clusterpb/cluster.proto")
	gen.Dir = root
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(tmp, "cluster", "clusterpb", "cluster.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "cluster.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("cluster/clusterpb/cluster.pb.go is stale: regenerate it (see this test's comment) and commit the result")
	}
}
