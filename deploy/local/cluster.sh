#!/usr/bin/env bash
# make cluster: three svc nodes on this machine as one cluster (etcd provider). Run it through
# cmd/testenv -serve, which starts throwaway ClickHouse, PostgreSQL, S3 and etcd servers and
# hands them over in SVC_CLICKHOUSE_DSN, SVC_POSTGRES_DSN, SVC_S3_* and SVC_ETCD_ENDPOINTS:
#
#   go run ./cmd/testenv -serve -only clickhouse,postgres,s3,etcd -- bash deploy/local/cluster.sh
#
# Node N listens on 127.0.0.1:808N (public), 127.0.0.1:919N (admin) and 127.0.0.1:700x
# (remoting: 7001, 7003, 7005, leaving each port+1 free for the static provider), with its data
# in data/cluster/nodeN. The token secrets and the admin token are generated once into
# data/cluster and shared by the three. Ctrl-C or SIGTERM stops all three; so does any node
# exiting (the others are stopped and the script exits with that node's status).
# SVC_BIN runs another binary (default ./bin/svc, built when missing).
set -uo pipefail
cd "$(dirname "$0")/../.."

say() { echo "cluster: $*" >&2; }

bin=${SVC_BIN:-./bin/svc}
if [ ! -x "$bin" ]; then
	say "building $bin"
	go build -o "$bin" ./cmd/svc || exit 1
fi
for v in SVC_CLICKHOUSE_DSN SVC_POSTGRES_DSN SVC_S3_ENDPOINT SVC_ETCD_ENDPOINTS; do
	if [ -z "${!v:-}" ]; then
		say "$v is not set: run this through make cluster (cmd/testenv -serve) or set it"
		exit 2
	fi
done
export SVC_S3_USE_SSL=${SVC_S3_USE_SSL:-false} # the throwaway S3 server speaks plain HTTP

dir=data/cluster
mkdir -p "$dir" || exit 1
# secret NAME: data/cluster/NAME, holding a random value written the first time.
secret() {
	local f="$dir/$1"
	if [ ! -s "$f" ]; then
		(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$f") || exit 1
	fi
	echo "$f"
}
SVC_ACCESS_TOKEN_SECRET_FILE=$(secret access-token-secret) || exit 1
SVC_REFRESH_TOKEN_SECRET_FILE=$(secret refresh-token-secret) || exit 1
SVC_ADMIN_TOKEN_FILE=$(secret admin-token) || exit 1
export SVC_ACCESS_TOKEN_SECRET_FILE SVC_REFRESH_TOKEN_SECRET_FILE SVC_ADMIN_TOKEN_FILE
export SVC_CLUSTER_NAME=${SVC_CLUSTER_NAME:-svc-local} SVC_CLUSTER_PROVIDER=etcd

pids=()
names=()
stopping=0

# stop_all: SIGTERM to every node still running, then wait for each (a node drains and flushes
# for up to its --shutdown-timeout, 30s); one still there after 45s gets SIGKILL.
stop_all() {
	[ "$stopping" = 1 ] && return
	stopping=1
	trap '' INT TERM
	local p deadline=$((SECONDS + 45))
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		while kill -0 "$p" 2>/dev/null; do
			if [ "$SECONDS" -ge "$deadline" ]; then
				say "pid $p did not stop in 45s; killing it"
				kill -KILL "$p" 2>/dev/null
			fi
			sleep 0.2
		done
	done
	wait 2>/dev/null
}
trap 'say "stopping the nodes"; stop_all; exit 130' INT
trap 'say "stopping the nodes"; stop_all; exit 143' TERM
trap 'stop_all' EXIT

for i in 1 2 3; do
	data="$dir/node$i"
	mkdir -p "$data" || exit 1
	remoting="127.0.0.1:$((6999 + 2 * i))"
	# Each node's log lines go to this terminal prefixed with its name. The prefixing loop
	# ignores Ctrl-C and SIGTERM: it must outlive its node, whose writes to a closed pipe
	# would kill it (SIGPIPE) in the middle of its shutdown flush. It ends when the node does.
	"$bin" serve \
		--addr "127.0.0.1:808$i" \
		--admin-addr "127.0.0.1:919$i" \
		--data-dir "$data" \
		--cluster-name "$SVC_CLUSTER_NAME" \
		--cluster-provider etcd \
		--cluster-addr "$remoting" \
		> >(trap '' INT TERM; while IFS= read -r line; do printf 'node%s | %s\n' "$i" "$line"; done) 2>&1 &
	pids+=("$!")
	names+=("node$i")
	say "node$i (pid $!): http://127.0.0.1:808$i  admin 127.0.0.1:919$i  remoting $remoting  data $data"
done
say "etcd: $SVC_ETCD_ENDPOINTS  cluster: $SVC_CLUSTER_NAME"
say "admin API (any node): SVC_ADMIN_TOKEN=\$(cat $SVC_ADMIN_TOKEN_FILE) $bin admin --admin-addr 127.0.0.1:9191 create-user --email ada@example.com --name Ada"
say "health: curl http://127.0.0.1:8081/readyz   Ctrl-C stops all three"

# Until a node exits. The sleep runs in the background so that a trapped signal ends the wait
# at once.
while :; do
	for k in "${!pids[@]}"; do
		if ! kill -0 "${pids[$k]}" 2>/dev/null; then
			wait "${pids[$k]}"
			code=$?
			say "${names[$k]} exited with status $code; stopping the others"
			stop_all
			[ "$code" = 0 ] && code=1 # a node is not meant to stop by itself
			exit "$code"
		fi
	done
	sleep 1 &
	wait $!
done
