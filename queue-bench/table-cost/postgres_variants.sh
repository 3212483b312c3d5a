#!/usr/bin/env bash
# What each part of the jobs table costs on PostgreSQL: the table-cost cycle (claims of 100, two
# commits) and the 500-row insert of postgres.sh, on the jobs table as migrated and on variants
# of it that each give something up, next to the baseline's table in the same round.
# Usage: queue-bench/table-cost/postgres_variants.sh [URL] [ROUNDS]
set -euo pipefail
url=${1:-postgres://postgres@127.0.0.1:5432/test}
rounds=${2:-2}
here=$(dirname "$0")
payload='{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo 'CALL exp.base_cycle(100);' > "$tmp/base.pgb"
echo 'CALL exp.jobs_cycle(100);' > "$tmp/jobs.pgb"
echo "INSERT INTO exp.base (payload) SELECT '$payload'::jsonb FROM generate_series(1, 500);" > "$tmp/base_ins.pgb"

# Each variant: the DDL run after postgres.sql created the tables and procedures.
declare -A ddl
all_variants=(as-migrated no-finished-index no-lease-index no-finished-no-lease narrow-row delete-on-completion integer-key
  merged-finished-index history-table claim-table claim-table-finished-index)
# VARIANTS="a b" measures a subset (the baseline's table is always measured).
read -r -a variants <<< "${VARIANTS:-${all_variants[*]}}"
ddl[as-migrated]=''
ddl[no-finished-index]='DROP INDEX exp.jobs_finished_idx;'
ddl[no-lease-index]='DROP INDEX exp.jobs_lease_idx;'
ddl[no-finished-no-lease]='DROP INDEX exp.jobs_finished_idx; DROP INDEX exp.jobs_lease_idx;'
# The cycle of postgres.sql with the claim's extra columns ($1), the completion ($2) and the
# type of the key ($3, uuid unless given).
cycle() {
  cat <<EOF_SQL
CREATE OR REPLACE PROCEDURE exp.jobs_cycle(n int) LANGUAGE plpgsql AS \$\$
DECLARE ids ${3:-uuid}[]; toks uuid[];
BEGIN
  WITH c AS MATERIALIZED (SELECT id FROM exp.jobs WHERE queue = 'q' AND state = 'pending' AND run_at <= now()
                          ORDER BY priority DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED),
       u AS (UPDATE exp.jobs j SET state = 'running', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
                lease_expires_at = clock_timestamp() + interval '30 seconds'$1 FROM c WHERE j.id = c.id
             RETURNING j.id, j.lease_token)
  SELECT array_agg(id), array_agg(lease_token) INTO ids, toks FROM u;
  COMMIT;
  $2 AND j.state = (SELECT 'running');
  COMMIT;
END \$\$;
EOF_SQL
}
# The columns a claim and a completion write that the queue's rules could do without: the
# worker's name, the version counter (a lease token already fences), the updated_at stamp, and
# created_at (a UUIDv7 id carries its creation time).
ddl[narrow-row]="ALTER TABLE exp.jobs DROP COLUMN worker, DROP COLUMN version, DROP COLUMN updated_at, DROP COLUMN created_at;
$(cycle '' "UPDATE exp.jobs j SET state = 'completed', lease_token = NULL, lease_expires_at = NULL, finished_at = now()
  FROM UNNEST(ids, toks) AS a(id, tok) WHERE j.id = a.id AND j.lease_token = a.tok")"
# A 64-bit integer key from a sequence instead of the 16-byte UUID (the primary key and the
# claim index hold it); job ids would no longer be made by the client.
ddl[integer-key]="ALTER TABLE exp.jobs ALTER COLUMN id TYPE bigint USING 0;
$(cycle ", worker = 'w', version = j.version + 1, updated_at = now()" \
  "UPDATE exp.jobs j SET state = 'completed', lease_token = NULL, lease_expires_at = NULL, finished_at = now(),
         updated_at = now(), version = j.version + 1
  FROM UNNEST(ids, toks) AS a(id, tok) WHERE j.id = a.id AND j.lease_token = a.tok" bigint)"
# A completed job is deleted instead of kept (no history of completed jobs).
ddl[delete-on-completion]=$(cycle ", worker = 'w', version = j.version + 1, updated_at = now()" \
  "DELETE FROM exp.jobs j USING UNNEST(ids, toks) AS a(id, tok) WHERE j.id = a.id AND j.lease_token = a.tok")

# The two indexes of finished jobs (by finish time for pruning, by queue and state for the
# stats) as one, (queue, state, finished_at): a completion adds one index entry fewer; pruning
# walks it queue by queue and state by state. The table as PostgreSQL migration 14 left it.
ddl[merged-finished-index]='DROP INDEX exp.jobs_finished_idx; DROP INDEX exp.jobs_finished_queue_idx;
CREATE INDEX jobs_finished_idx ON exp.jobs (queue, state, finished_at) WHERE state IN ('"'"'completed'"'"', '"'"'dead'"'"', '"'"'cancelled'"'"');'
# A completion moves the job to a history table instead of rewriting it in place: the hot table
# loses the row (a delete adds no index entry) and holds no finished jobs, so its finished
# indexes go; the history table is append-only, keyed by id, with the stats' (queue, state)
# index and a BRIN index on finished_at for pruning (no entry per row).
ddl[history-table]="DROP INDEX exp.jobs_finished_idx; DROP INDEX exp.jobs_finished_queue_idx;
CREATE TABLE exp.jobs_done (LIKE exp.jobs INCLUDING DEFAULTS) WITH (autovacuum_vacuum_scale_factor = 0.02);
ALTER TABLE exp.jobs_done ADD PRIMARY KEY (id);
CREATE INDEX jobs_done_queue_idx ON exp.jobs_done (queue, state);
CREATE INDEX jobs_done_finished_idx ON exp.jobs_done USING brin (finished_at);
$(cycle ", worker = 'w', version = j.version + 1, updated_at = now()" \
  "WITH d AS (DELETE FROM exp.jobs j USING UNNEST(ids, toks) AS a(id, tok)
             WHERE j.id = a.id AND j.lease_token = a.tok AND j.state = (SELECT 'running') RETURNING j.*)
  INSERT INTO exp.jobs_done (id, queue, payload, priority, state, attempts, max_attempts, run_at, worker,
                             dedup_key, version, created_at, updated_at, finished_at, kind, meta)
  SELECT id, queue, payload, priority, 'completed', attempts, max_attempts, run_at, worker, dedup_key,
         version + 1, created_at, now(), now(), kind, meta FROM d j WHERE true")"
# A narrow table of live jobs beside the wide one: the claim index, the lease and the attempts
# live in exp.live (one row per pending or running job, made with the job); the claim rewrites
# only the narrow row, the completion deletes it and marks the wide row, which then has no
# index but its key on a column the completion changes, so the update is HOT. Finished jobs
# would be pruned by key (a UUIDv7 key is in creation order) and counted without an index.
claim_table="DROP INDEX exp.jobs_claim_idx; DROP INDEX exp.jobs_lease_idx; DROP INDEX exp.jobs_finished_idx;
DROP INDEX exp.jobs_finished_queue_idx; DROP INDEX exp.jobs_dedup_idx; DROP INDEX exp.jobs_unique_idx;
DROP INDEX exp.jobs_key_idx; DROP INDEX exp.jobs_waiting_idx;
CREATE TABLE exp.live (id uuid PRIMARY KEY, queue text NOT NULL, priority integer NOT NULL, run_at timestamptz NOT NULL,
  state text NOT NULL, attempts integer NOT NULL DEFAULT 0, lease_token uuid, lease_expires_at timestamptz)
  WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02);
CREATE INDEX live_claim_idx ON exp.live (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX live_lease_idx ON exp.live (lease_expires_at) WHERE state = 'running';
CREATE FUNCTION exp.live_add() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO exp.live (id, queue, priority, run_at, state) SELECT id, queue, priority, run_at, 'pending' FROM added;
RETURN NULL; END \$\$;
CREATE TRIGGER live_add AFTER INSERT ON exp.jobs REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION exp.live_add();
CREATE OR REPLACE PROCEDURE exp.jobs_cycle(n int) LANGUAGE plpgsql AS \$\$
DECLARE ids uuid[]; toks uuid[];
BEGIN
  WITH c AS MATERIALIZED (SELECT id FROM exp.live WHERE queue = 'q' AND state = 'pending' AND run_at <= now()
                          ORDER BY priority DESC, run_at, id LIMIT n FOR UPDATE SKIP LOCKED),
       u AS (UPDATE exp.live l SET state = 'running', attempts = l.attempts + 1, lease_token = gen_random_uuid(),
                lease_expires_at = clock_timestamp() + interval '30 seconds' FROM c WHERE l.id = c.id
             RETURNING l.id, l.lease_token)
  SELECT array_agg(id), array_agg(lease_token) INTO ids, toks FROM u;
  COMMIT;
  WITH d AS (DELETE FROM exp.live l USING UNNEST(ids, toks) AS a(id, tok)
             WHERE l.id = a.id AND l.lease_token = a.tok AND l.state = (SELECT 'running') RETURNING l.id, l.attempts)
  UPDATE exp.jobs j SET state = 'completed', attempts = d.attempts, finished_at = now(), updated_at = now(),
         worker = 'w', version = j.version + 1
  FROM d WHERE j.id = d.id;
  COMMIT;
END \$\$;"
ddl[claim-table]="$claim_table"
# The same with an index of finished jobs on the wide table (pruning and stats as today): the
# completion is no longer HOT.
ddl[claim-table-finished-index]="$claim_table
CREATE INDEX jobs_finished_idx ON exp.jobs (queue, state, finished_at) WHERE state IN ('completed', 'dead', 'cancelled');"

rate() { pgbench -n "$@" "$url" 2>&1 | awk '/^tps/ {print $3}'; }
# The jobs table's insert and fill, with the variant's key.
key_of() { if [ "$1" = integer-key ]; then echo "$2"; else echo "$3"; fi; }
jobs_insert() { # variant
  echo "INSERT INTO exp.jobs (id, queue, payload, max_attempts, run_at) SELECT $(key_of "$1" "nextval('exp.ids')" "lpad(to_hex(nextval('exp.ids')), 32, '0')::uuid"), 'q', '$payload'::json, 25, now() FROM generate_series(1, 500);" > "$tmp/jobs_ins.pgb"
}
measure() { # table clients
  psql -q "$url" -v ON_ERROR_STOP=1 -v n=200000 -v id="$(key_of "$v" i "lpad(to_hex(i), 32, '0')::uuid")" \
    -f "$here/postgres_fill.sql" >/dev/null 2>&1 || true
  # A fill that failed would leave an empty table, and the cycle would time empty claims.
  local filled; filled=$(psql -qtA "$url" -c "SELECT count(*) FROM exp.$1 WHERE state = 'pending'")
  if [ "$filled" != 200000 ]; then printf 'FILL FAILED (%s rows)' "$filled"; return; fi
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  [ -n "$pss" ] && psql -qtA "$url" -c "SELECT pg_stat_statements_reset()" >/dev/null
  local tps; tps=$(rate -c "$2" -j 2 -t $(( 2000 / $2 )) -f "$tmp/$1.pgb")
  # Every claimed job was completed (or deleted): none is left pending or running.
  local left; left=$(psql -qtA "$url" -c "SELECT count(*) FROM exp.$1 WHERE state IN ('pending', 'running')")
  printf '%8.0f jobs/s (load %s; %s left unfinished)' "$(awk -v t="$tps" 'BEGIN {print t * 100}')" "$load" "$left"
  [ -n "$pss" ] && statement_costs
}
# With pg_stat_statements loaded (shared_preload_libraries, pg_stat_statements.track = all): the
# server's execution time per job of the cycle's claim and completion, in microseconds (a claim
# that returns one row per call, its arrays, is counted as 100 jobs). With more sessions than
# cores, execution time includes time spent waiting for a core.
pss=$(psql -qtA "$url" -c "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'
  AND current_setting('pg_stat_statements.track', true) = 'all'" 2>/dev/null || true)
statement_costs() {
  psql -qtA "$url" -c "SELECT string_agg(format('%s %s us/row', CASE WHEN query ~* '^\s*WITH c AS' THEN 'claim' ELSE 'completion' END,
      round((total_exec_time * 1000 / CASE WHEN rows = calls THEN calls * 100 ELSE rows END)::numeric, 1)), ', ' ORDER BY query)
    FROM pg_stat_statements WHERE query ~ 'exp\.(jobs|live|base)' AND query !~* 'CALL|generate_series|count\(' AND rows > 0" |
    sed 's/^/ [/; s/$/]/' | tr -d '\n'
}
measure_insert() { # table
  psql -q "$url" -c "TRUNCATE exp.base, exp.jobs" -c CHECKPOINT >/dev/null
  local tps; tps=$(rate -c 8 -j 2 -t 50 -f "$tmp/$1_ins.pgb")
  printf '%8.0f rows/s' "$(awk -v t="$tps" 'BEGIN {print t * 500}')"
}
for round in $(seq 1 "$rounds"); do
  for v in baseline-table "${variants[@]}"; do
    psql -q "$url" -f "$here/postgres.sql" >/dev/null 2>&1
    if [ "$v" = baseline-table ]; then t=base; else t=jobs; psql -q "$url" -c "${ddl[$v]:-SELECT 1}" >/dev/null; fi
    jobs_insert "$v"
    printf 'round %d %-22s cycle 4 sessions: %s; 16 sessions: %s; insert 8 sessions: %s\n' "$round" "$v" \
      "$(measure "$t" 4)" "$(measure "$t" 16)" "$(measure_insert "$t")"
  done
done
psql -q "$url" -c "SET client_min_messages = warning" -c "DROP SCHEMA exp CASCADE"
