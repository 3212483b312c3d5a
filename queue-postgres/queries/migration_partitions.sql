-- name: migration_partitions
-- The functions of finished partitions, (re)created by a migration that turns them on (sent
-- as a simple query: no bound values). Identifiers are quoted by format(%I) and bounds by
-- format(%L) inside the functions, from their arguments and the catalogue; the statements that
-- call them bind every value.
--
-- finished_partitions_enable(secs): turns them on with an interval of `secs` seconds, once:
-- jobs_done (empty until now) becomes a table partitioned by state (completed, dead,
-- cancelled), each state by range of finish time, with a default partition per state for a
-- finish no range holds; then the ranges of every state for now and the next two intervals
-- are made. Again with the same interval it does nothing; with another, it fails (22023) and
-- changes nothing. Its locks are waited for at most 10 s, as the migrations' are.
--
-- finished_partitions_ensure(since, states): makes the missing ranges of `states` from the
-- interval holding `since` (retention passes now(); a history loaded by hand may ask for
-- older ones) to the second after the current one. A range whose times the default partition
-- already holds rows of is left out (those rows stay there, deleted by rows), as is one
-- another process made meanwhile. How many it made. Retention makes ranges only for the
-- states it has a rule for: a state kept for ever finishes into its default partition rather
-- than into a range a day that nothing would drop.
--
-- finished_partitions_prune(state, older_than_us, queue, lim, retention): the jobs_done part
-- of job_prune. Without a queue, drops the ranges of `state` that ended at or before now() -
-- older_than_us, oldest first, at most 8 a call (the engine calls again while it deletes a
-- chunk's worth), each counted by its row estimate (pg_class.reltuples, or exactly when it
-- was never analyzed). Then, for retention, up to `lim` rows of the state's default partition
-- that finished before the cutoff; for an operator's prune (of one queue, or of any age), up
-- to `lim` rows of the state older than that, of `queue` when not null, wherever they are.
-- For retention a rule shorter than the interval fails (22023): whole ranges cannot honour it.
-- How many jobs went.
--
-- Each attach and drop waits at most 200 ms for its locks; one that times out is left for
-- the next round. An attach takes the state's table in share update exclusive mode and its
-- default partition in access exclusive mode (and reads that partition); a drop takes the
-- state's table in access exclusive mode, which holds back that state's completions and every
-- read of jobs_all; either keeps its locks until the call's transaction ends. Bounds are
-- written as UTC text, whatever the session's DateStyle and TimeZone.
CREATE OR REPLACE FUNCTION {schema}.finished_partitions_ensure(since timestamptz, states text[])
RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    secs   bigint;
    first  bigint;
    last   bigint;
    made   integer := 0;
    s      text;
    lo     timestamptz;
    hi     timestamptz;
    leaf   text;
    taken  boolean;
BEGIN
    SELECT interval_s INTO secs FROM {schema}.finished_partitions;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    first := floor(extract(epoch FROM least(since, now())) / secs)::bigint * secs;
    last := floor(extract(epoch FROM now()) / secs)::bigint * secs + 2 * secs;
    FOREACH s IN ARRAY states LOOP
        FOR i IN 0..((last - first) / secs) LOOP
            lo := to_timestamp(first + i * secs);
            hi := to_timestamp(first + (i + 1) * secs);
            leaf := format('jobs_done_%s_%s', s, to_char(lo AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS'));
            CONTINUE WHEN to_regclass(format('{schema}.%I', leaf)) IS NOT NULL;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM {schema}.%I WHERE finished_at >= $1 AND finished_at < $2)',
                           'jobs_done_' || s || '_default')
                INTO taken USING lo, hi;
            CONTINUE WHEN taken;
            BEGIN
                PERFORM set_config('lock_timeout', '200ms', true);
                EXECUTE format('CREATE TABLE {schema}.%I (LIKE {schema}.%I INCLUDING DEFAULTS)',
                               leaf, 'jobs_done_' || s);
                EXECUTE format('ALTER TABLE {schema}.%I ATTACH PARTITION {schema}.%I FOR VALUES FROM (%L) TO (%L)',
                               'jobs_done_' || s, leaf,
                               to_char(lo AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00',
                               to_char(hi AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00');
                made := made + 1;
            EXCEPTION WHEN lock_not_available OR check_violation OR duplicate_table THEN
                -- Busy, a row of the range committed into the default partition meanwhile, or
                -- another process made it: left as it is, for the next round.
                NULL;
            END;
        END LOOP;
    END LOOP;
    RETURN made;
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.finished_partitions_enable(secs bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    have bigint;
    s    text;
BEGIN
    PERFORM set_config('lock_timeout', '10s', true);
    SELECT interval_s INTO have FROM {schema}.finished_partitions;
    IF FOUND THEN
        IF have <> secs THEN
            RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
                'finished_partitions: the finished jobs of this schema are partitioned by %s s already, not %s s (the interval is chosen once)',
                have, secs);
        END IF;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM {schema}.jobs_done) THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'finished_partitions: jobs_done holds rows but no partitioning is recorded';
    END IF;
    DROP VIEW {schema}.jobs_all;
    DROP TABLE {schema}.jobs_done;
    CREATE TABLE {schema}.jobs_done (LIKE {schema}.jobs INCLUDING DEFAULTS) PARTITION BY LIST (state);
    ALTER TABLE {schema}.jobs_done ALTER COLUMN finished_at SET NOT NULL;
    ALTER TABLE {schema}.jobs_done ADD CONSTRAINT jobs_done_pkey PRIMARY KEY (id, state, finished_at);
    CREATE INDEX jobs_done_queue_idx ON {schema}.jobs_done (queue, state, finished_at);
    FOREACH s IN ARRAY ARRAY['completed', 'dead', 'cancelled'] LOOP
        EXECUTE format('CREATE TABLE {schema}.%I PARTITION OF {schema}.jobs_done FOR VALUES IN (%L) PARTITION BY RANGE (finished_at)',
                       'jobs_done_' || s, s);
        EXECUTE format('CREATE TABLE {schema}.%I PARTITION OF {schema}.%I DEFAULT',
                       'jobs_done_' || s || '_default', 'jobs_done_' || s);
        EXECUTE format('CREATE INDEX ON {schema}.%I (finished_at)', 'jobs_done_' || s || '_default');
    END LOOP;
    CREATE VIEW {schema}.jobs_all AS
        SELECT * FROM {schema}.jobs
        UNION ALL
        SELECT * FROM {schema}.jobs_done;
    INSERT INTO {schema}.finished_partitions (interval_s) VALUES (secs);
    PERFORM {schema}.finished_partitions_ensure(now(), ARRAY['completed', 'dead', 'cancelled']);
END
$fn$;

CREATE OR REPLACE FUNCTION {schema}.finished_partitions_prune(
    st text, older_than_us bigint, q text, lim bigint, retention boolean)
RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE
    secs    bigint;
    cutoff  timestamptz;
    gone    bigint := 0;
    n       bigint;
    leaf    record;
    lo      timestamptz;
    stamp   text;
    dropped integer := 0;
BEGIN
    SELECT interval_s INTO secs FROM {schema}.finished_partitions;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    cutoff := now() - older_than_us * interval '1 microsecond';
    IF retention AND older_than_us < secs * 1000000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format(
            'retention.%s: must be at least the finished partitions'' interval (%s s), as a partition is dropped whole',
            st, secs);
    END IF;
    IF retention THEN
        PERFORM {schema}.finished_partitions_ensure(now(), ARRAY[st]);
    END IF;
    -- Whole partitions, when every queue is pruned: those whose range ended by the cutoff,
    -- oldest first, at most 8 a call (each holds its locks until the call ends).
    IF q IS NULL THEN
        FOR leaf IN
            SELECT c.relname, c.reltuples
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = to_regclass(format('{schema}.%I', 'jobs_done_' || st))
              AND c.relname <> 'jobs_done_' || st || '_default'
            ORDER BY c.relname
        LOOP
            EXIT WHEN dropped >= 8;
            stamp := right(leaf.relname, 15);
            lo := make_timestamptz(substr(stamp, 1, 4)::int, substr(stamp, 5, 2)::int,
                                   substr(stamp, 7, 2)::int, substr(stamp, 10, 2)::int,
                                   substr(stamp, 12, 2)::int, substr(stamp, 14, 2)::int, 'UTC');
            EXIT WHEN lo + secs * interval '1 second' > cutoff;
            BEGIN
                PERFORM set_config('lock_timeout', '200ms', true);
                IF leaf.reltuples >= 0 THEN
                    n := leaf.reltuples::bigint;
                ELSE
                    EXECUTE format('SELECT count(*) FROM {schema}.%I', leaf.relname) INTO n;
                END IF;
                EXECUTE format('DROP TABLE {schema}.%I', leaf.relname);
                gone := gone + n;
                dropped := dropped + 1;
            EXCEPTION WHEN lock_not_available THEN
                EXIT;
            END;
        END LOOP;
    END IF;
    IF retention THEN
        -- What no range holds: the old rows of the default partition, along its index.
        EXECUTE format('WITH d AS (DELETE FROM {schema}.%1$I WHERE id = ANY(ARRAY(
                            SELECT id FROM {schema}.%1$I WHERE finished_at < $1
                            ORDER BY finished_at LIMIT $2))
                          AND finished_at < $1 RETURNING 1)
                        SELECT count(*) FROM d',
                       'jobs_done_' || st || '_default')
            INTO n USING cutoff, lim;
    ELSE
        -- An operator's prune: rows of any age, of one queue (along jobs_done_queue_idx) or of
        -- the range the cutoff falls in and the default partition.
        EXECUTE 'WITH d AS (DELETE FROM {schema}.jobs_done WHERE id = ANY(ARRAY(
                     SELECT id FROM {schema}.jobs_done
                     WHERE state = $1 AND finished_at < $2 AND ($3::text IS NULL OR queue = $3)
                     LIMIT $4))
                   AND state = $1 AND finished_at < $2 RETURNING 1)
                 SELECT count(*) FROM d'
            INTO n USING st, cutoff, q, lim;
    END IF;
    RETURN gone + n;
END
$fn$;
