#!/usr/bin/env bash
# What each part of the jobs table costs on MariaDB: the table-cost cycle of mariadb.sh (claims
# of 100, 16 sessions) and its 500-row insert (8 sessions), on the jobs table as migrated and on
# variants of it that each give something up, next to the baseline's table in the same round.
# Usage: queue-bench/table-cost/mariadb_variants.sh [ROUNDS] [mysql client options]
# (default: 2 rounds, -uroot -h127.0.0.1).
set -euo pipefail
rounds=${1:-2}; shift || true
opts=("$@"); [ ${#opts[@]} -eq 0 ] && opts=(-uroot -h127.0.0.1)
here=$(dirname "$0")
payload='{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'

# Each variant: statements ended by //, run after mariadb.sql created the tables and procedures.
declare -A ddl
variants=(as-migrated no-finished-index no-lease-index no-finished-no-lease narrow-row delete-on-completion)
ddl[as-migrated]=''
ddl[no-finished-index]='ALTER TABLE jobs DROP INDEX finished //'
ddl[no-lease-index]='ALTER TABLE jobs DROP INDEX lease_expiry //'
ddl[no-finished-no-lease]='ALTER TABLE jobs DROP INDEX finished, DROP INDEX lease_expiry //'
# The cycle of mariadb.sql with the claim's extra columns ($1) and the completion ($2) given.
cycle() {
  cat <<EOF_SQL
DROP PROCEDURE jobs_cycle //
CREATE PROCEDURE jobs_cycle(n INT)
BEGIN
  CREATE TEMPORARY TABLE IF NOT EXISTS c (id BINARY(16) PRIMARY KEY, tok BINARY(16)) ENGINE=MEMORY; DELETE FROM c;
  SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  INSERT INTO c SELECT id, NULL FROM jobs WHERE queue = 'q' AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
     ORDER BY claim_priority, run_at, id LIMIT n FOR UPDATE SKIP LOCKED;
  UPDATE c SET tok = UNHEX(REPLACE(UUID(), '-', ''));
  UPDATE jobs FORCE INDEX (PRIMARY) JOIN c USING (id) SET jobs.lease_token = c.tok,
     jobs.lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 30 SECOND, jobs.attempts = jobs.attempts + 1$1, jobs.state = 'running';
  COMMIT;
  $2 WHERE jobs.lease_token = c.tok AND jobs.state = 'running';
END //
EOF_SQL
}
# The columns a claim and a completion write that the queue's rules could do without: the
# worker's name, the version counter (a lease token already fences), the updated_at stamp.
ddl[narrow-row]="ALTER TABLE jobs DROP COLUMN worker, DROP COLUMN version, DROP COLUMN updated_at //
$(cycle '' "UPDATE jobs FORCE INDEX (PRIMARY) JOIN c USING (id) SET jobs.lease_token = NULL, jobs.lease_expires_at = NULL,
     jobs.finished_at = UTC_TIMESTAMP(6), jobs.state = 'completed'")"
# A completed job is deleted instead of kept (no history of completed jobs).
ddl[delete-on-completion]=$(cycle ", jobs.worker = 'w', jobs.version = jobs.version + 1, jobs.updated_at = UTC_TIMESTAMP(6)" \
  "DELETE jobs FROM jobs FORCE INDEX (PRIMARY) JOIN c USING (id)")

seconds() { mysqlslap "${opts[@]}" --create-schema=exp --iterations=1 "$@" 2>&1 | awk '/Average number of seconds/ {print $(NF-1)}'; }
run() { # variant
  local v=$1 t=jobs cols="id, queue, payload, priority, state, max_attempts, run_at, created_at, updated_at"
  local vals="'q', '$payload', 0, 'pending', 25, UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)"
  mysql "${opts[@]}" < "$here/mariadb.sql"
  if [ "$v" = baseline-table ]; then t=base; else [ -n "${ddl[$v]}" ] && printf 'DELIMITER //\n%s\n' "${ddl[$v]}" | mysql "${opts[@]}" exp; fi
  if [ "$v" = narrow-row ]; then
    cols="id, queue, payload, priority, state, max_attempts, run_at, created_at"
    vals="'q', '$payload', 0, 'pending', 25, UTC_TIMESTAMP(6) - INTERVAL 1 SECOND, UTC_TIMESTAMP(6)"
  fi
  mysql "${opts[@]}" exp -e "TRUNCATE base; TRUNCATE jobs;
    INSERT INTO base (payload) SELECT '$payload' FROM seq_1_to_200000;
    INSERT INTO jobs ($cols) SELECT UNHEX(LPAD(HEX(seq), 32, '0')), $vals FROM seq_1_to_200000;
    ANALYZE TABLE base, jobs;" >/dev/null
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  local s; s=$(seconds --concurrency=16 --number-of-queries=2000 --query="CALL ${t}_cycle(100)")
  local left; left=$(mysql "${opts[@]}" -N exp -e "SELECT count(*) FROM $t WHERE state IN ('pending', 'running')")
  mysql "${opts[@]}" exp -e "TRUNCATE base; TRUNCATE jobs"
  local q="INSERT INTO jobs ($cols) SELECT UNHEX(LPAD(HEX(UUID_SHORT()), 32, '0')), $vals FROM seq_1_to_500"
  [ "$t" = base ] && q="INSERT INTO base (payload) SELECT '$payload' FROM seq_1_to_500"
  local si; si=$(seconds --concurrency=8 --number-of-queries=400 --query="$q")
  printf 'round %d %-22s cycle 16 sessions: %8.0f jobs/s (load %s; %s left unfinished); insert 8 sessions: %8.0f rows/s\n' \
    "$round" "$v" "$(awk -v s="$s" 'BEGIN {print 200000 / s}')" "$load" "$left" "$(awk -v s="$si" 'BEGIN {print 200000 / s}')"
}
for round in $(seq 1 "$rounds"); do
  for v in baseline-table "${variants[@]}"; do run "$v"; done
done
mysql "${opts[@]}" -e "DROP DATABASE exp"
