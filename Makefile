# The commands a newcomer needs: `make run` (serve, embedded, no services), `make demo` (data to
# look at: a user, an app, the recorded SDK batches and a dashboard query) and `make test`.
GO      ?= go
FUZZTIME ?= 10s
BIN     := bin/svc
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build run demo demo-stop test fuzz stack cluster bench bench-quick bench-go generate vendor-docs-viewer deps vet clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/svc

## run: build and serve with the embedded stores (no external service); data in ./data.
## It holds the terminal until Ctrl-C: run `./bin/svc admin …` and curl in a second one.
run: build
	./$(BIN) serve

## demo: load every recorded SDK batch (testdata/sdk, times moved to now) into a new app and
## print a dashboard query that shows crash groups, and its token. Uses the node make run serves;
## when none answers on :8080, starts one in the background (./data, log data/demo-node.log)
## that keeps running until `make demo-stop`. Each run adds an app; the user demo@example.com
## is reused.
demo: build
	$(GO) build -o bin/demo ./cmd/demo
	./bin/demo -svc ./$(BIN)

## demo-stop: stop the node make demo started in the background (its data stays in ./data)
demo-stop:
	$(GO) build -o bin/demo ./cmd/demo
	./bin/demo -stop

## deps: install what the tests need (ClickHouse, PostgreSQL, protoc, an S3 server) when missing
deps:
	bash deploy/local/install-deps.sh

## test: every test (-v, so each conformance subtest names its backend), with throwaway
## ClickHouse, PostgreSQL and S3 servers on free local ports. cmd/testsum prints go test's
## -json stream as plain -v text and ends with `make test: N passed, M failed` (packages);
## the exit status is go test's (both tools are built first: `go run` would add its own
## "exit status 1" line after the summary).
test: deps vet
	$(GO) build -o bin/testsum ./cmd/testsum
	$(GO) build -o bin/testenv ./cmd/testenv
	./bin/testenv -- ./bin/testsum -- $(GO) test -json -count=1 -timeout 45m -v ./...

## fuzz: every go fuzz target of the repository for FUZZTIME (default 10s) each; CI runs it
## after make test. Inputs that fail are kept in the package's testdata/fuzz/ to replay.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash deploy/local/fuzz.sh

## vet: go vet and gofmt; and vet for macOS too (it type-checks every package and test there),
## since README's `make run` is meant to work on a Mac and this machine is Linux.
vet:
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

## stack: serve with a local ClickHouse and PostgreSQL started on free ports (stopped on exit)
stack: build deps
	$(GO) run ./cmd/testenv -serve -only clickhouse,postgres -- ./$(BIN) serve

## cluster: three nodes as one cluster (etcd provider) on :8081-:8083 (admin 127.0.0.1:9191-9193),
## with throwaway ClickHouse, PostgreSQL, S3 and etcd; data in ./data/cluster/nodeN, token secrets
## and admin token shared from ./data/cluster. Ctrl-C stops all three (deploy/local/cluster.sh)
cluster: build deps
	$(GO) run ./cmd/testenv -serve -only clickhouse,postgres,s3,etcd -- bash deploy/local/cluster.sh

## bench: ingest, memory and profiles of this machine in one go; the table goes to docs/benchmarks.md
## (BENCH_FLAGS=-seconds=10 for shorter loadgen runs; profiles in bench-out/)
bench: deps
	$(GO) run ./cmd/testenv -serve -only clickhouse,postgres -- $(GO) run ./cmd/bench $(BENCH_FLAGS)

## bench-quick: make bench with 10 s loadgen runs, 1M events and 10k sessions; the table goes to
## bench-out/benchmarks-quick.md (gitignored), not into docs/benchmarks.md
bench-quick:
	$(MAKE) bench BENCH_FLAGS='-seconds=10 -query-events 1000000 -sessions 10000 -out bench-out/benchmarks-quick.md $(BENCH_FLAGS)'

## bench-go: every go test benchmark of the repository, with throwaway servers
bench-go: deps
	$(GO) run ./cmd/testenv -- $(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

## generate: protobuf code for actor and cluster messages (committed; a test fails when stale)
generate:
	$(GO) build -o bin/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	protoc --plugin=protoc-gen-go=bin/protoc-gen-go --proto_path=actors/actorpb \
		--go_out=actors/actorpb --go_opt=paths=source_relative actors/actorpb/messages.proto
	protoc --plugin=protoc-gen-go=bin/protoc-gen-go --proto_path=. \
		--go_out=. --go_opt=paths=source_relative cluster/clusterpb/cluster.proto

## vendor-docs-viewer: fetch the /docs viewer (swagger-ui-dist, with npm pack) into
## http/apidoc/viewer, committed and embedded; DOCS_VIEWER_VERSION=x.y.z pins it (default: latest)
vendor-docs-viewer:
	bash http/apidoc/vendor.sh $(DOCS_VIEWER_VERSION)

clean:
	rm -rf bin
