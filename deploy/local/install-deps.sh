#!/usr/bin/env bash
# Installs what `make test` needs when it is missing: ClickHouse, PostgreSQL server binaries,
# protoc, etcd (cluster mode's etcd provider; Debian packages, as root) and versitygw, an
# S3-compatible server (Go module proxy).
# It says what it installs, shows apt-get's progress every few seconds and says when it is done.
set -euo pipefail

say() { echo "install-deps: $*" >&2; }

# apt_progress reads apt's machine-readable status lines (APT::Status-Fd) and prints one line
# when the step changes (downloading, then unpacking and setting up), then at most one every 5 s;
# when apt says nothing for 15 s (a long dpkg step), a line says it is still at it.
apt_progress() {
  local kind pkg pct text phase="starting" what="" last=$SECONDS begin=$SECONDS
  while :; do
    if IFS=: read -r -t 5 kind pkg pct text; then
      case "$kind" in
        dlstatus) kind=downloading ;;
        pmstatus) kind=installing ;;
        *) continue ;;
      esac
      what=$text
      if [ "$kind" != "$phase" ] || [ $((SECONDS - last)) -ge 5 ]; then
        phase=$kind last=$SECONDS
        printf 'install-deps: %s, %3.0f%% (%s)\n' "$kind" "${pct:-0}" "$text" >&2
      fi
    elif [ $? -gt 128 ]; then # no line within 5 s
      if [ $((SECONDS - last)) -ge 15 ]; then
        last=$SECONDS
        say "still ${phase}${what:+ (at: $what)}, $((SECONDS - begin)) s so far"
      fi
    else
      break # apt-get has ended
    fi
  done
}

missing=()
command -v clickhouse-server >/dev/null 2>&1 || [ -x /usr/sbin/clickhouse-server ] || command -v clickhouse >/dev/null 2>&1 \
  || missing+=(clickhouse-server clickhouse-client)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || missing+=(etcd-server)

installed=()
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    say "missing ${missing[*]}; run as root or: sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
  start=$SECONDS
  say "installing ${missing[*]} with apt-get (a few minutes the first time)"
  export DEBIAN_FRONTEND=noninteractive
  say "apt-get update: reading the package lists"
  apt-get update -qq
  say "apt-get install ${missing[*]}"
  # Status lines go to fd 3 and from there to apt_progress; apt's own chatter is dropped, its
  # errors stay on stderr.
  { apt-get install -y -qq -o APT::Status-Fd=3 "${missing[@]}" 3>&1 1>/dev/null; } | apt_progress
  say "done: ${missing[*]} installed in $((SECONDS - start)) s"
  installed+=("${missing[@]}")
fi

gobin="$(go env GOPATH)/bin"
if ! command -v versitygw >/dev/null 2>&1 && [ ! -x "$gobin/versitygw" ]; then
  start=$SECONDS
  say "go install versitygw (S3-compatible test server; downloads and compiles, ~2 min)"
  GOFLAGS= go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
  say "done: versitygw installed in $gobin in $((SECONDS - start)) s"
  installed+=(versitygw)
fi

if [ ${#installed[@]} -eq 0 ]; then
  say "ClickHouse, PostgreSQL, protoc, etcd and versitygw are installed"
fi
