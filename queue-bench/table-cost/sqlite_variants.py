"""What each part of the jobs table costs on SQLite: the insert, claim and completion of
sqlite.py on the jobs table as migrated and on variants of it that each give something up, next
to the baseline's table in the same round.

Usage: python3 queue-bench/table-cost/sqlite_variants.py [ROWS] [ROUNDS]"""
import os, re, sys, time, uuid
sys.dont_write_bytecode = True
from sqlite import (N, PAY, TMP, db, run, base_ddl, base_fill, base_claim, base_complete,
                    jobs_ddl, jobs_fill, jobs_claim, jobs_complete)

ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 2


def without_index(ddl, name):
    out, n = re.subn(r"CREATE INDEX IF NOT EXISTS " + name + r"\b[^;]*;", "", ddl)
    assert n == 1, name
    return out


# The columns a claim and a completion write that the queue's rules could do without: the
# worker's name, the version counter (a lease token already fences), the updated_at stamp.
def narrow(ddl):
    for col in ("worker", "version", "updated_at"):
        ddl, n = re.subn(r"\n\s*" + col + r"\s+[^\n]*,", "", ddl, count=1)
        assert n == 1, col
    return ddl


def narrow_fill():
    now = int(time.time() * 1e6)
    return ("INSERT INTO queue_jobs (id, queue, payload, priority, max_attempts, run_at, created_at) VALUES (?, 'q', ?, 0, 25, ?, ?)",
            [(uuid.UUID(int=(now << 64) | i).bytes, PAY, now - 1000 + i, now) for i in range(N)])


def narrow_claim_sql():
    s = jobs_claim.replace(", worker='w', version=version+1, updated_at=1", "")
    return s.replace(", worker, ", ", ").replace(", updated_at, finished_at", ", finished_at")


def narrow_complete(c, rows):
    vals = ",".join("(?, ?)" for _ in rows); args = [2]
    for r in rows: args += [r[0], r[8]]
    c.execute(f"""WITH p (now) AS (SELECT ?) UPDATE queue_jobs SET state='completed', finished_at=p.now, lease_token=NULL,
      lease_expires_at=NULL FROM p, (VALUES {vals}) AS leases
      WHERE queue_jobs.id = leases.column1 AND queue_jobs.lease_token = leases.column2 AND queue_jobs.state='running'""", args)


# A 64-bit integer key (the rowid itself) instead of the 16-byte UUID, which a rowid table keeps
# in an index of its own; job ids would no longer be made by the client.
def integer_key(ddl):
    out, n = re.subn(r"id\s+BLOB\s+NOT NULL PRIMARY KEY", "id INTEGER PRIMARY KEY", ddl, count=1)
    assert n == 1
    return out


def integer_fill():
    sql, rows = jobs_fill()
    return sql, [(i + 1,) + r[1:] for i, r in enumerate(rows)]


# The claim returning only what its completion needs (id and lease token), not the job: what
# returning the job's columns to the caller costs. A queue must return them.
# (NULLs keep the token where the completion reads it.)
short_claim = jobs_claim.split("RETURNING")[0] + "RETURNING id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, lease_token"


def delete_complete(c, rows):
    vals = ",".join("(?, ?)" for _ in rows); args = []
    for r in rows: args += [r[0], r[8]]
    c.execute(f"""DELETE FROM queue_jobs WHERE state='running' AND (id, lease_token) IN (VALUES {vals})""", args)


# Both completions read the lease token at position 8 of the claim's RETURNING list.
for claim in (jobs_claim, narrow_claim_sql(), short_claim):
    assert claim.split("RETURNING")[1].split(",")[8].strip() == "lease_token"


variants = [
    ("as migrated", jobs_ddl, jobs_fill, jobs_claim, jobs_complete),
    ("no finished index", without_index(jobs_ddl, "queue_jobs_finished"), jobs_fill, jobs_claim, jobs_complete),
    ("no lease index", without_index(jobs_ddl, "queue_jobs_lease"), jobs_fill, jobs_claim, jobs_complete),
    ("no finished, no lease",
     without_index(without_index(jobs_ddl, "queue_jobs_finished"), "queue_jobs_lease"), jobs_fill, jobs_claim, jobs_complete),
    ("narrow row", narrow(jobs_ddl), narrow_fill, narrow_claim_sql(), narrow_complete),
    ("delete on completion", jobs_ddl, jobs_fill, jobs_claim, delete_complete),
    ("integer key", integer_key(jobs_ddl), integer_fill, jobs_claim, jobs_complete),
    ("claim returns id, token", jobs_ddl, jobs_fill, short_claim, jobs_complete),
]

for i in range(ROUNDS):
    run(f"round {i + 1} baseline table         ", db(os.path.join(TMP, "base.db")), base_ddl, base_fill, base_claim, base_complete)
    for name, ddl, fill, claim, complete in variants:
        run(f"round {i + 1} {name:<23}", db(os.path.join(TMP, "jobs.db")), ddl, fill, claim, complete)
