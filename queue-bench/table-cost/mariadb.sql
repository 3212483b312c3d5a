-- Setup of the table-cost experiment on MariaDB/MySQL (mariadb.sh): the same hand-written claim and
-- completion on the bench's baseline table (queue-bench/src/mysql.rs) and on the queue's jobs table
-- (queue-mysql/migrations 0001 and 0002 applied). Drops and recreates database `exp`.
DROP DATABASE IF EXISTS exp; CREATE DATABASE exp; USE exp;
CREATE TABLE base (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload LONGTEXT NOT NULL, state VARCHAR(16) NOT NULL DEFAULT 'pending', attempts INT NOT NULL DEFAULT 0, KEY state_id (state, id)) ENGINE=InnoDB;
CREATE TABLE jobs (
    id BINARY(16) NOT NULL, queue VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, priority INT NOT NULL DEFAULT 0,
    state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, attempts INT UNSIGNED NOT NULL DEFAULT 0,
    max_attempts INT UNSIGNED NOT NULL, run_at DATETIME(6) NOT NULL, lease_token BINARY(16) NULL,
    lease_expires_at DATETIME(6) NULL, worker VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    last_error TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL, dedup_key VARBINARY(1020) NULL,
    dedup_live VARBINARY(1020) AS (IF(state IN ('pending', 'running'), dedup_key, NULL)) STORED,
    claim_priority BIGINT AS (-CAST(priority AS SIGNED)) STORED, version BIGINT NOT NULL DEFAULT 0,
    created_at DATETIME(6) NOT NULL, updated_at DATETIME(6) NOT NULL, finished_at DATETIME(6) NULL,
    PRIMARY KEY (id), UNIQUE KEY dedup_live (queue, dedup_live), KEY claim (queue, state, claim_priority, run_at, id),
    KEY lease_expiry (state, lease_expires_at), KEY finished (state, finished_at)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
DELIMITER //
CREATE PROCEDURE base_cycle(n INT)
BEGIN
  CREATE TEMPORARY TABLE IF NOT EXISTS c (id BIGINT PRIMARY KEY) ENGINE=MEMORY; DELETE FROM c;
  SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  INSERT INTO c SELECT id FROM base WHERE state = 'pending' ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED;
  UPDATE base JOIN c USING (id) SET base.state = 'running', base.attempts = base.attempts + 1;
  COMMIT;
  UPDATE base JOIN c USING (id) SET base.state = 'done';
END //
CREATE PROCEDURE jobs_cycle(n INT)
BEGIN
  CREATE TEMPORARY TABLE IF NOT EXISTS c (id BINARY(16) PRIMARY KEY, tok BINARY(16)) ENGINE=MEMORY; DELETE FROM c;
  SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  INSERT INTO c SELECT id, NULL FROM jobs WHERE queue = 'q' AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
     ORDER BY claim_priority, run_at, id LIMIT n FOR UPDATE SKIP LOCKED;
  UPDATE c SET tok = UNHEX(REPLACE(UUID(), '-', ''));
  UPDATE jobs FORCE INDEX (PRIMARY) JOIN c USING (id) SET jobs.lease_token = c.tok,
     jobs.lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 30 SECOND, jobs.worker = 'w', jobs.attempts = jobs.attempts + 1,
     jobs.version = jobs.version + 1, jobs.updated_at = UTC_TIMESTAMP(6), jobs.state = 'running';
  COMMIT;
  UPDATE jobs FORCE INDEX (PRIMARY) JOIN c USING (id) SET jobs.lease_token = NULL, jobs.lease_expires_at = NULL,
     jobs.finished_at = UTC_TIMESTAMP(6), jobs.updated_at = UTC_TIMESTAMP(6), jobs.version = jobs.version + 1, jobs.state = 'completed'
  WHERE jobs.lease_token = c.tok AND jobs.state = 'running';
END //
DELIMITER ;
