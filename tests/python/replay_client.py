"""A workload no respbench code makes, for tests/tests/replay.rs: the `redis` client library
against the server at 127.0.0.1:PORT, with pipelines, MULTI/EXEC, SELECT 2 and binary values.
Deterministic: the same commands on every run. Prints the commands it asked for."""

import sys

import redis

port = int(sys.argv[1])
sent = 0

# A pipeline without a transaction, in db 0.
plain = redis.Redis(port=port, single_connection_client=True)
for batch in range(20):
    p = plain.pipeline(transaction=False)
    for i in range(10):
        k = batch * 10 + i
        p.set(f"str:{k}", f"value {k} with \"quotes\" and \\ backslash")
        p.hset(f"hash:{k % 7}", f"field{k}", k)
        p.lpush("list:plain", b"\x00\xff\r\n\t" + bytes([k % 256]))
        p.incr("counter:plain")
        sent += 4
    p.execute()

# MULTI/EXEC blocks, in db 0.
tx = redis.Redis(port=port, single_connection_client=True)
for i in range(30):
    p = tx.pipeline(transaction=True)
    p.incr("counter:tx")
    p.sadd("set:tx", f"member{i % 11}")
    p.zadd("zset:tx", {f"m{i}": i})
    p.execute()
    sent += 5  # MULTI, three commands, EXEC

# SELECT 2 on one connection, then commands in db 2 (a pipeline and plain calls).
other = redis.Redis(port=port, single_connection_client=True)
other.execute_command("SELECT", 2)
sent += 1
for i in range(50):
    other.set(f"db2:str:{i}", b"binary \x01\x02 value")
    other.rpush("db2:list", i)
    sent += 2
p = other.pipeline(transaction=False)
for i in range(40):
    p.hset("db2:hash", f"f{i}", "v")
    sent += 1
p.execute()

# A client opened on db 2 (redis-py sends SELECT 2 itself), with a transaction.
db2 = redis.Redis(port=port, db=2, single_connection_client=True)
for i in range(10):
    p = db2.pipeline(transaction=True)
    p.sadd("db2:set", i)
    p.expire("db2:set", 3600)
    p.execute()
    sent += 4
print(sent)
