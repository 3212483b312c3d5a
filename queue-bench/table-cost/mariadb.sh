#!/usr/bin/env bash
# The table-cost experiment on MariaDB: mysqlslap runs the same claim-and-complete cycle (claims of
# 100, 16 sessions) and the same 500-row insert (8 sessions) on the baseline's table and on the
# queue's jobs table. Usage: queue-bench/table-cost/mariadb.sh [mysql client options]
# (default: -uroot -h127.0.0.1).
set -euo pipefail
opts=("$@"); [ ${#opts[@]} -eq 0 ] && opts=(-uroot -h127.0.0.1)
here=$(dirname "$0")
payload='{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
mysql "${opts[@]}" < "$here/mariadb.sql"
fill="TRUNCATE base; TRUNCATE jobs;
INSERT INTO base (payload) SELECT '$payload' FROM seq_1_to_200000;
INSERT INTO jobs (id, queue, payload, priority, state, max_attempts, run_at, created_at, updated_at)
  SELECT UNHEX(LPAD(HEX(seq), 32, '0')), 'q', '$payload', 0, 'pending', 25,
         UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM seq_1_to_200000;
ANALYZE TABLE base, jobs;"
seconds() { mysqlslap "${opts[@]}" --create-schema=exp --iterations=1 "$@" 2>&1 | awk '/Average number of seconds/ {print $(NF-1)}'; }
for t in base jobs; do
  mysql "${opts[@]}" exp -e "$fill" >/dev/null
  load=$(cut -d' ' -f1 /proc/loadavg)
  s=$(seconds --concurrency=16 --number-of-queries=2000 --query="CALL ${t}_cycle(100)")
  left=$(mysql "${opts[@]}" -N exp -e "SELECT count(*) FROM $t WHERE state IN ('pending', 'running')")
  printf 'drain  %-4s 16 sessions: %8.0f jobs/s  (load %s; %s jobs left unfinished)\n' "$t" "$(awk -v s="$s" 'BEGIN {print 200000 / s}')" "$load" "$left"
done
for t in base jobs; do
  mysql "${opts[@]}" exp -e "TRUNCATE base; TRUNCATE jobs"
  if [ "$t" = base ]; then
    q="INSERT INTO base (payload) SELECT '$payload' FROM seq_1_to_500"
  else
    q="INSERT INTO jobs (id, queue, payload, priority, state, max_attempts, run_at, created_at, updated_at) SELECT UNHEX(LPAD(HEX(UUID_SHORT()), 32, '0')), 'q', '$payload', 0, 'pending', 25, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM seq_1_to_500"
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  s=$(seconds --concurrency=8 --number-of-queries=400 --query="$q")
  printf 'insert %-4s  8 sessions: %8.0f rows/s  (load %s)\n' "$t" "$(awk -v s="$s" 'BEGIN {print 200000 / s}')" "$load"
done
mysql "${opts[@]}" -e "DROP DATABASE exp"
