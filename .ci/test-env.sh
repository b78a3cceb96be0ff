#!/usr/bin/env bash
# What the test suite needs beyond the packages, on a fresh machine of this kind (root, Debian):
# Debian's Chromium for the HTML report test (playwright-core drives /usr/bin/chromium; no browser
# download), strace, and a private, throwaway PostgreSQL on 127.0.0.1 for @retrysafe/ledger-postgres
# (exports DATABASE_URL; stops when this shell exits, see start-postgres.sh).
# Source it: `source .ci/test-env.sh && pnpm test`. The first time, apt installs take a few minutes.
command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
# strace counts a real process's fsync calls (a ledger test).
command -v strace >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; }
source "$(dirname "${BASH_SOURCE[0]}")/start-postgres.sh"
