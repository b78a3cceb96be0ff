#!/usr/bin/env bash
# Stops the PostgreSQL that .ci/start-postgres.sh started and deletes its folder:
# `.ci/stop-postgres.sh [dir]` (default $RETRYSAFE_PG_DIR). A folder without start-postgres.sh's
# marker is left alone, so this never stops a server it did not start.
set -uo pipefail
dir=${1:-${RETRYSAFE_PG_DIR:-}}
if [ -z "$dir" ]; then echo "stop-postgres: no folder given and RETRYSAFE_PG_DIR is not set" >&2; exit 2; fi
if [ ! -d "$dir" ]; then exit 0; fi
if [ ! -f "$dir/started-by-retrysafe" ]; then echo "stop-postgres: $dir was not started by .ci/start-postgres.sh; left alone" >&2; exit 2; fi
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi
if [ -f "$dir/data/postmaster.pid" ]; then "${as[@]}" "$pgbin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null; fi
rm -rf "$dir"
