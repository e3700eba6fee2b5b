#!/bin/sh
# Writes the files compose.yaml reads as secrets into ./secrets: random passwords for
# PostgreSQL, ClickHouse and MinIO, the DSNs svc connects with, the token secrets every node
# shares and the admin token. Files that exist are kept (PostgreSQL and ClickHouse only take a
# password at their first start), so it is safe to run again; delete ./secrets and the volumes
# (docker compose down -v) to start over.
#
# The directory is 0700 (only you on this host); the files in it are 0644 because compose
# bind-mounts them as they are, and the containers read them as their own users
# (svc 10001, postgres 999, clickhouse 101).
set -eu
cd "$(dirname "$0")"
mkdir -p secrets
chmod 700 secrets

random() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

# put NAME VALUE: write secrets/NAME unless it holds something already.
put() {
	if [ ! -s "secrets/$1" ]; then
		printf '%s\n' "$2" >"secrets/$1"
		chmod 644 "secrets/$1"
		echo "secrets.sh: wrote secrets/$1"
	fi
}

for name in postgres_password clickhouse_password s3_secret_key access_token_secret refresh_token_secret admin_token; do
	put "$name" "$(random)"
done

# Derived from the passwords above: rewritten every run so they always agree with them.
pg=$(cat secrets/postgres_password)
ch=$(cat secrets/clickhouse_password)
rm -f secrets/postgres_dsn secrets/clickhouse_dsn secrets/clickhouse-users.xml
put postgres_dsn "postgres://svc:$pg@postgres:5432/svc?sslmode=disable"
put clickhouse_dsn "clickhouse://svc:$ch@clickhouse:9000/svc"
put clickhouse-users.xml "<clickhouse>
  <users>
    <svc>
      <password_sha256_hex>$(printf '%s' "$ch" | sha256sum | cut -d' ' -f1)</password_sha256_hex>
      <networks><ip>::/0</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </svc>
  </users>
</clickhouse>"
