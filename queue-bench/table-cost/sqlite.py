"""The table-cost experiment on SQLite: the same hand-written insert, claim and completion on
the bench's baseline table and on the queue's jobs table (the DDL of
queue-sqlite/migrations/0001_init.sql, read from there). One connection (SQLite has one
writer), WAL, synchronous NORMAL, the rows (made before the clock starts) inserted in one
transaction, 500 per statement, claims of 100. Python's sqlite3 module:
both tables pay the same interpreter overhead per statement and per bound value.

Usage: python3 queue-bench/table-cost/sqlite.py [ROWS]"""
import atexit, os, shutil, sqlite3, sys, tempfile, time, uuid
sys.dont_write_bytecode = True  # sqlite_variants.py imports this file; no __pycache__ beside it
TMP = tempfile.mkdtemp()
atexit.register(shutil.rmtree, TMP, True)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
PAY = '{"n":1,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
def db(path):
    for s in ("", "-wal", "-shm"):
        try: os.remove(path + s)
        except FileNotFoundError: pass
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA synchronous=NORMAL")
    return c
def run(name, c, ddl, fill, claim, complete, batch=100):
    c.executescript(ddl)
    sql, rows = fill()  # the rows are made before the clock starts
    t = time.perf_counter(); c.execute("BEGIN")
    for k in range(0, N, 500):
        c.executemany(sql, rows[k:k + 500])
    c.execute("COMMIT"); ins = time.perf_counter() - t
    done = 0; t = time.perf_counter(); tc = 0.0
    while True:
        t0 = time.perf_counter()
        c.execute("BEGIN IMMEDIATE"); rows = c.execute(claim, (batch,)).fetchall(); c.execute("COMMIT")
        tc += time.perf_counter() - t0
        if not rows: break
        c.execute("BEGIN IMMEDIATE"); complete(c, rows); c.execute("COMMIT")
        done += len(rows)
    el = time.perf_counter() - t
    # Every claimed job was completed (or deleted): none is left pending or running.
    table = c.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('jobs', 'queue_jobs')").fetchone()[0]
    left = c.execute(f"SELECT count(*) FROM {table} WHERE state IN ('pending', 'running')").fetchone()[0]
    assert done == N and left == 0, (name, done, left)
    print(f"{name}: insert {N/ins:,.0f} rows/s; drain {done/el:,.0f} jobs/s (claim {tc/done*1e6:.1f} us/job, complete {(el-tc)/done*1e6:.1f} us/job)")
base_ddl = """CREATE TABLE jobs (id INTEGER PRIMARY KEY, payload TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0);
CREATE INDEX jobs_pending ON jobs (id) WHERE state = 'pending';"""
def base_fill():
    return "INSERT INTO jobs (payload) VALUES (?)", [(PAY,)] * N
base_claim = "UPDATE jobs SET state='running', attempts=attempts+1 WHERE id IN (SELECT id FROM jobs WHERE state='pending' ORDER BY id LIMIT ?) RETURNING id"
def base_complete(c, rows):
    ids = [r[0] for r in rows]
    c.execute(f"UPDATE jobs SET state='done' WHERE id IN ({','.join('?'*len(ids))})", ids)
MIGRATION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "queue-sqlite", "migrations", "0001_init.sql")
jobs_ddl = open(MIGRATION).read()
def jobs_fill():
    now = int(time.time() * 1e6)
    return ("INSERT INTO queue_jobs (id, queue, payload, priority, max_attempts, run_at, created_at, updated_at) VALUES (?, 'q', ?, 0, 25, ?, ?, ?)",
            [(uuid.UUID(int=(now << 64) | i).bytes, PAY, now - 1000 + i, now, now) for i in range(N)])
jobs_claim = """UPDATE queue_jobs SET state='running', attempts=attempts+1, lease_token=randomblob(16),
  lease_expires_at=CAST((julianday('now')-2440587.5)*86400000000 AS INTEGER)+30000000, worker='w', version=version+1, updated_at=1
WHERE rowid IN (SELECT rowid FROM queue_jobs WHERE queue='q' AND state='pending' AND run_at <= 9e18 ORDER BY priority DESC, run_at, id LIMIT ?)
RETURNING id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token, lease_expires_at, worker, last_error, dedup_key, created_at, updated_at, finished_at"""
def jobs_complete(c, rows):
    vals = ",".join("(?, ?)" for _ in rows); args = [2]
    for r in rows: args += [r[0], r[8]]
    c.execute(f"""WITH p (now) AS (SELECT ?) UPDATE queue_jobs SET state='completed', finished_at=p.now, lease_token=NULL,
      lease_expires_at=NULL, version=version+1, updated_at=p.now FROM p, (VALUES {vals}) AS leases
      WHERE queue_jobs.id = leases.column1 AND queue_jobs.lease_token = leases.column2 AND queue_jobs.state='running'""", args)
if __name__ == "__main__":
    print("sqlite", sqlite3.sqlite_version, "rows", N)
    for i in range(2):
        run("baseline table", db(os.path.join(TMP, "base.db")), base_ddl, base_fill, base_claim, base_complete)
        run("jobs table    ", db(os.path.join(TMP, "jobs.db")), jobs_ddl, jobs_fill, jobs_claim, jobs_complete)
