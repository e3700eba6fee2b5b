#!/usr/bin/env bash
# Installs what `make test` needs when it is missing: ClickHouse, PostgreSQL server binaries,
# protoc (Debian packages, as root) and versitygw, an S3-compatible server (Go module proxy).
set -euo pipefail

missing=()
command -v clickhouse-server >/dev/null 2>&1 || [ -x /usr/sbin/clickhouse-server ] || command -v clickhouse >/dev/null 2>&1 \
  || missing+=(clickhouse-server clickhouse-client)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: apt-get install ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

gobin="$(go env GOPATH)/bin"
if ! command -v versitygw >/dev/null 2>&1 && [ ! -x "$gobin/versitygw" ]; then
  echo "install-deps: go install versitygw (S3-compatible test server, ~2 min)" >&2
  GOFLAGS= go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
fi
