#!/usr/bin/env bash
# Installs (if needed) and starts a throwaway PostgreSQL on 127.0.0.1 for @retrysafe/ledger-postgres
# tests, then exports DATABASE_URL. Source it: `source .ci/start-postgres.sh`. From shared/TOOLCHAIN.md.
set -euo pipefail
PGPORT=${PGPORT:-54329}; PGDATA=${PGDATA:-/tmp/retrysafe-pg}
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
if [ -f "$PGDATA/postmaster.pid" ]; then runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast stop >/dev/null 2>&1 || true; fi
rm -rf "$PGDATA" && mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 30 -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGDATA -c max_connections=200" start >/dev/null
"$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -qc "CREATE DATABASE retrysafe"
export DATABASE_URL=postgres://postgres@127.0.0.1:$PGPORT/retrysafe
echo "PostgreSQL ready at $DATABASE_URL"
