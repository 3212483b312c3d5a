#!/usr/bin/env bash
# The table-cost experiment on PostgreSQL: pgbench runs the same claim-and-complete cycle (claims
# of 100) and the same 500-row insert on the baseline's table and on the queue's jobs table.
# Usage: queue-bench/table-cost/postgres.sh [URL]   (default: the local test database)
set -euo pipefail
url=${1:-postgres://postgres@127.0.0.1:5432/test}
here=$(dirname "$0")
psql -q "$url" -f "$here/postgres.sql" 2>/dev/null
payload='{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo 'CALL exp.base_cycle(100);' > "$tmp/base.pgb"
echo 'CALL exp.jobs_cycle(100);' > "$tmp/jobs.pgb"
echo "INSERT INTO exp.base (payload) SELECT '$payload'::jsonb FROM generate_series(1, 500);" > "$tmp/base_ins.pgb"
echo "INSERT INTO exp.jobs (id, queue, payload, max_attempts, run_at) SELECT lpad(to_hex(nextval('exp.ids')), 32, '0')::uuid, 'q', '$payload'::json, 25, now() FROM generate_series(1, 500);" > "$tmp/jobs_ins.pgb"
rate() { pgbench -n "$@" "$url" 2>&1 | awk '/^tps/ {print $3}'; }
for clients in 1 4 16; do
  for t in base jobs; do
    psql -q "$url" -v ON_ERROR_STOP=1 -v n=200000 -f "$here/postgres_fill.sql" >/dev/null 2>&1 \
      || { echo "the fill failed" >&2; exit 1; }
    load=$(cut -d' ' -f1 /proc/loadavg)
    tps=$(rate -c "$clients" -j "$(( clients > 1 ? 2 : 1 ))" -t $(( 2000 / clients )) -f "$tmp/$t.pgb")
    printf 'drain  %-4s %2d sessions: %8.0f jobs/s  (load %s)\n' "$t" "$clients" "$(awk -v t="$tps" 'BEGIN {print t * 100}')" "$load"
  done
done
for t in base jobs; do
  psql -q "$url" -c "TRUNCATE exp.base, exp.jobs" -c CHECKPOINT
  load=$(cut -d' ' -f1 /proc/loadavg)
  tps=$(rate -c 8 -j 2 -t 50 -f "$tmp/${t}_ins.pgb")
  printf 'insert %-4s  8 sessions: %8.0f rows/s  (load %s)\n' "$t" "$(awk -v t="$tps" 'BEGIN {print t * 500}')" "$load"
done
psql -q "$url" -c "SET client_min_messages = warning" -c "DROP SCHEMA exp CASCADE"
