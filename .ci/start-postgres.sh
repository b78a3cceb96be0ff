#!/usr/bin/env bash
# Starts a private, throwaway PostgreSQL on 127.0.0.1 for the PostgreSQL ledger's tests and exports
# DATABASE_URL. Source it: `source .ci/start-postgres.sh` (installs PostgreSQL with apt on first use).
# Each run gets its own data folder (mktemp) and a free port, so two runs on one machine, or a run and CI,
# never share a server. It stops only the server it started: when the shell that sourced it exits, or
# earlier with `.ci/stop-postgres.sh`. It never stops or deletes anything else.
# No `set -e` here: this file is sourced, and must not change the options of the caller's shell.

retrysafe_pg_start() {
  local pgbin dir port tries=0
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || return 1
  fi
  pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/retrysafe-pg.XXXXXX") || return 1
  # initdb refuses to run as root: the server then runs as the postgres user.
  local as=()
  if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir" && as=(runuser -u postgres --); fi
  "${as[@]}" "$pgbin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null || { rm -rf "$dir"; return 1; }
  # A free port is asked from the kernel; another process may take it before the server binds, so retry.
  while :; do
    port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
    if "${as[@]}" "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null; then break; fi
    tries=$((tries + 1))
    if [ "$tries" -ge 5 ]; then echo "PostgreSQL did not start; see $dir/server.log" >&2; return 1; fi
  done
  "$pgbin/psql" -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE retrysafe" || return 1
  # The marker says this folder's server was started here; stop-postgres.sh stops nothing without it.
  echo "$port" > "$dir/started-by-retrysafe"
  export RETRYSAFE_PG_DIR=$dir
  export DATABASE_URL=postgres://postgres@127.0.0.1:$port/retrysafe
  # Stop the server when the shell that sourced this file exits (a CI leg's subshell, a terminal).
  local owner=${BASHPID:-$$} stop
  stop="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/stop-postgres.sh"
  (trap '' INT HUP; while kill -0 "$owner" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done; "$stop" "$dir") >/dev/null 2>&1 &
  disown 2>/dev/null || true
  echo "PostgreSQL ready at $DATABASE_URL (data in $dir; stops when this shell exits, or run .ci/stop-postgres.sh)"
}

retrysafe_pg_start
