# Shared by the Python compat scenarios (bench/compat/python.ts runs them): the scenario registry
# and its one-line results, the records every producer scenario sends, the comparison of what a
# consumer read against what was acknowledged, and the consumer-group member child processes.
# Kept apart from the client files so that confluent-kafka and kafka-python are judged alike.
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback

# Every scenario has this bound (seconds); each client call inside has its own, shorter one.
SCENARIO_S_MAX = 120
# Bound of one wait for a condition (a rebalance, records arriving).
WAIT_S_MAX = 60

_scenarios = []


def scenario(name):
    """Registers a scenario; it returns a reason string (PASS) or raises (FAIL)."""

    def register(fn):
        _scenarios.append((name, fn))
        return fn

    return register


class Failed(Exception):
    pass


class Known(Exception):
    """A documented gap (docs/kafka.md): the scenario saw exactly the documented refusal. Reported
    as KNOWN, not counted as a failure; any other outcome is a FAIL (or a PASS once it works)."""


def check(condition, message):
    if not condition:
        raise Failed(message)


def _alarm(signum, frame):
    raise TimeoutError(f"scenario bound of {SCENARIO_S_MAX} s reached")


def run_all(ctx, only=None):
    """Runs the registered scenarios in order; prints one RESULT line (JSON) per scenario."""
    signal.signal(signal.SIGALRM, _alarm)
    failed = 0
    for name, fn in _scenarios:
        if only and not any(word in name for word in only):
            continue
        started = time.monotonic()
        signal.alarm(SCENARIO_S_MAX)
        status = "PASS"
        try:
            reason = fn(ctx)
        except Known as known:
            status, reason = "KNOWN", str(known)
        except Exception as error:  # noqa: BLE001 - every failure becomes a FAIL line
            status = "FAIL"
            reason = f"{type(error).__name__}: {error}"
            print(f"TRACE {name}\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        finally:
            signal.alarm(0)
        if status == "FAIL":
            failed += 1
        result = {"scenario": name, "status": status, "reason": str(reason), "seconds": round(time.monotonic() - started, 2)}
        print("RESULT " + json.dumps(result), flush=True)
    return failed


def observe(what, value):
    """A value seen, for the log (not judged)."""
    print(f"OBSERVE {what} = {value}", flush=True)


def wait_for(condition, what, timeout=WAIT_S_MAX, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise Failed(f"timed out after {timeout} s waiting for {what}")


# --- The records: keyed, with headers and CreateTime timestamps -------------------------------

# CreateTime of the first record: a fixed time in the past, whole seconds, so that every record's
# timestamp is known before it is sent (and distinct from the broker's clock).
BASE_TS_MS = 1_700_000_000_000


def make_records(tag, count, ts_base=BASE_TS_MS):
    """count records: key k<i % 7> (so keys repeat and land on several partitions), a value naming
    the tag, two headers (one repeated name, one empty value) and a timestamp 1 s apart."""
    records = []
    for i in range(count):
        records.append(
            {
                "key": f"k{i % 7}".encode(),
                "value": f"{tag} value {i} ".encode() + bytes(range(256)) * (i % 3),
                "headers": [("h-index", str(i).encode()), ("h-tag", tag.encode()), ("h-index", b"")],
                "timestamp": ts_base + i * 1000,
            }
        )
    return records


def compare(expected, got):
    """expected: {(partition, offset): record}, got: the same from a consumer. Returns a list of
    differences (empty when they agree exactly)."""
    diffs = []
    for where in sorted(set(expected) | set(got)):
        e, g = expected.get(where), got.get(where)
        if e is None:
            diffs.append(f"{where}: read but not sent: {g}")
        elif g is None:
            diffs.append(f"{where}: sent but not read")
        else:
            for field in ("key", "value", "headers", "timestamp"):
                if e[field] != g[field]:
                    diffs.append(f"{where}: {field} sent {e[field]!r:.80} read {g[field]!r:.80}")
    return diffs


def describe_diffs(diffs):
    return f"{len(diffs)} differences, first: " + "; ".join(diffs[:3])


# --- Consumer-group members in child processes ---------------------------------------------------


class Member:
    """A group member running in a child process (`<script> member <json args>`): it prints one
    JSON event per line (assign, revoke, record, commit, commit_error, closed) and closes
    (leaving the group) when it reads `stop` on stdin."""

    def __init__(self, script, args):
        self.name = args["name"]
        self.events = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, script, "member", json.dumps(args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(os.path.join(args["log_dir"], f"member-{self.name}.log"), "w"),
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(event)

    def of(self, kind):
        with self.lock:
            return [e for e in self.events if e["ev"] == kind]

    def assignment(self):
        """The partitions of the last assign event after the last revoke, or None."""
        with self.lock:
            current = None
            for e in self.events:
                if e["ev"] == "assign":
                    current = sorted(e["partitions"])
                elif e["ev"] == "revoke":
                    current = []
            return current

    def records(self):
        return [(e["partition"], e["offset"]) for e in self.of("record")]

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failed(f"member {self.name} did not close within {timeout} s")
        self._reader.join(5)
        return self.of("closed")


def member_stdin_watcher():
    """In a member process: an Event set when `stop` arrives on stdin (or stdin closes)."""
    stop = threading.Event()

    def watch():
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    return stop


def emit(event, **fields):
    print(json.dumps({"ev": event, **fields}), flush=True)


def run_group_scenario(script, ctx, create_topic, produce_to, committed_offsets, prefix):
    """The two-process group scenario, common to both clients.

    create_topic(name, partitions); produce_to(topic, [(partition, record)]) -> [(partition, offset)];
    committed_offsets(group, topic, partitions) -> {partition: offset} read through the admin API.
    Steps: A joins and gets all three partitions; B joins, the three partitions split between them
    (disjoint, both non-empty); 30 records (10 per partition) are produced and each member reads
    exactly its partitions' records (from the beginning: no commits yet, auto.offset.reset earliest);
    B leaves (close: LeaveGroup), A gets all three, 15 more records are read once by A only; A
    leaves; committed offsets read back are 15 per partition; 3 more records; a new member C (the
    restart) reads exactly those 3."""
    topic, group = f"{prefix}-group-topic", f"{prefix}-group"
    create_topic(topic, 3)
    base = {"bootstrap": ctx["bootstrap"], "group": group, "topic": topic, "log_dir": ctx["log_dir"], "debug": ctx.get("debug")}
    a = Member(script, {**base, "name": "A"})
    b = None
    members = [a]
    try:
        wait_for(lambda: a.assignment() == [0, 1, 2], "A's first assignment (all three partitions)")
        b = Member(script, {**base, "name": "B"})
        members.append(b)

        def split():
            sa, sb = a.assignment(), b.assignment()
            if not sa or not sb:
                return None
            return (sa, sb) if sorted(sa + sb) == [0, 1, 2] else None

        sa, sb = wait_for(split, "A and B to split the three partitions")
        # Produced once the group is stable, so that each member reads its own partitions' records.
        produce_to(topic, [(p, r) for p in range(3) for r in make_records(f"g1p{p}", 10)])
        read = lambda: a.records() + b.records()  # noqa: E731
        wait_for(lambda: len(set(read())) >= 30, "the 30 records to be read by A and B")
        check(len(read()) == len(set(read())), f"records read twice: {len(read()) - len(set(read()))}")
        for member, parts in ((a, sa), (b, sb)):
            got = sorted(member.records())
            want = sorted((p, o) for p in parts for o in range(10))
            check(got == want, f"{member.name} (partitions {parts}) read {got}")
        errors = a.of("commit_error") + b.of("commit_error")
        check(not errors, f"commit errors: {errors[:3]}")
        split_reason = f"A {sa} B {sb} ({len(a.records())} + {len(b.records())} records)"

        closed = b.stop()
        check(closed, "B did not report close")
        wait_for(lambda: a.assignment() == [0, 1, 2], "A to take over all three partitions after B left")
        before = len(a.records())
        second = [(p, r) for p in range(3) for r in make_records(f"g2p{p}", 5, ts_base=BASE_TS_MS + 100_000)]
        produce_to(topic, second)
        wait_for(lambda: len(set(read())) >= 45, "the 15 new records to be read by A")
        check(len(read()) == len(set(read())), "records read twice after the takeover")
        taken = a.records()[before:]
        check(sorted(taken) == sorted((p, o) for p in range(3) for o in range(10, 15)), f"A read after takeover: {taken}")
        a.stop()
        members = []

        committed = committed_offsets(group, topic, [0, 1, 2])
        check(committed == {0: 15, 1: 15, 2: 15}, f"committed offsets read back: {committed}")

        produce_to(topic, [(p, r) for p in range(3) for r in make_records(f"g3p{p}", 1, ts_base=BASE_TS_MS + 200_000)])
        c = Member(script, {**base, "name": "C"})
        members = [c]
        wait_for(lambda: len(c.records()) >= 3, "C (the restart) to read the 3 new records")
        c_records = sorted(c.records())
        c.stop()
        members = []
        check(c_records == [(0, 15), (1, 15), (2, 15)], f"C read {c_records}, wanted only offset 15 of each")
        return f"split {split_reason}; B left, A took [0, 1, 2] and read 15 new once; committed 15/15/15 read back; a new member resumed at 15"
    finally:
        for m in members:
            try:
                m.stop(10)
            except Failed:
                pass


# --- The stored batches, read with a raw Fetch v4 (independent of the clients under test) ------------

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def check_codec_round_trip(ctx, topic, items, reports, expected, read_from, beginning, codec_name):
    """What both clients' codec scenarios check once their records are produced: every key on one
    partition; the records read back exactly from the beginning and from offset 1 of the fullest
    partition (inside its first batch); every stored batch carrying the codec. `read_from(starts)`
    reads {partition: offset} with the client under test, `beginning` is its offset for the start.
    Returns the scenario's summary."""
    by_key = {}
    for (_, r), (p, _) in zip(items, reports):
        by_key.setdefault(r["key"], set()).add(p)
    check(all(len(ps) == 1 for ps in by_key.values()), f"a key on two partitions: {by_key}")
    diffs = compare(expected, read_from({p: beginning for p in range(3)}))
    check(not diffs, describe_diffs(diffs))
    counts = {p: sum(1 for (q, _) in expected if q == p) for p in range(3)}
    fullest = max(counts, key=counts.get)
    want1 = {w: r for w, r in expected.items() if w[0] == fullest and w[1] >= 1}
    diffs = compare(want1, read_from({fullest: 1}))
    check(not diffs, "from offset 1: " + describe_diffs(diffs))
    batches = [b for p in range(3) for b in stored_batches(ctx["bootstrap"], topic, p)]
    # librdkafka sends a batch uncompressed when the compressed bytes are larger
    # (rdkafka_msgset_writer.c, rd_kafka_msgset_writer_compress: "throw it away and send as
    # uncompressed"), which a batch of one small record can be when the linger timing cuts it so
    # (seen once with lz4 on a loaded machine, 2026-12-03): such a batch may be "none"; every batch
    # of more records must carry the codec.
    codecs = sorted({b[2] for b in batches if codec_name == "none" or b[1] > 1 or b[2] != "none"})
    check(codecs == [codec_name], f"stored batches' codecs {codecs} (batches {[(b[1], b[2]) for b in batches]})")
    return (
        f"30 records, per partition {counts}, {len(batches)} batches stored as {codec_name}; "
        f"read back exactly from the beginning and from offset 1 of partition {fullest}"
    )


def stored_batches(bootstrap, topic, partition, offset=0):
    """[(base_offset, record_count, codec name, producer_id)] of the batches a Fetch v4 from offset
    returns (up to 4 MiB): what the broker stored, so a scenario can say that a codec really was
    used and whether the producer was idempotent."""
    import socket
    import struct

    host, port = bootstrap.rsplit(":", 1)
    t = topic.encode()
    client = b"compat-raw"
    body = struct.pack(">iiiib", -1, 100, 1, 4 << 20, 0)
    body += struct.pack(">ih", 1, len(t)) + t + struct.pack(">iiqi", 1, partition, offset, 4 << 20)
    header = struct.pack(">hhih", 1, 4, 7, len(client)) + client
    frame = header + body
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)

        def exactly(n):
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    raise Failed("the broker closed the raw Fetch connection")
                data += chunk
            return data

        (size,) = struct.unpack(">i", exactly(4))
        r = exactly(size)
    pos = 4 + 4  # correlation id, throttle_time_ms
    (topics,) = struct.unpack_from(">i", r, pos)
    pos += 4
    check(topics == 1, f"raw fetch: {topics} topics")
    (tlen,) = struct.unpack_from(">h", r, pos)
    pos += 2 + tlen
    (parts,) = struct.unpack_from(">i", r, pos)
    pos += 4
    _, error, _, _ = struct.unpack_from(">ihqq", r, pos)
    pos += 4 + 2 + 8 + 8
    check(error == 0, f"raw fetch of {topic}/{partition}: error {error}")
    (aborted,) = struct.unpack_from(">i", r, pos)
    pos += 4 + max(aborted, 0) * 16
    (rlen,) = struct.unpack_from(">i", r, pos)
    pos += 4
    end = pos + max(rlen, 0)
    batches = []
    while pos + 61 <= end:
        base, blen = struct.unpack_from(">qi", r, pos)
        if pos + 12 + blen > end:
            break
        attributes = struct.unpack_from(">h", r, pos + 21)[0]
        producer_id = struct.unpack_from(">q", r, pos + 43)[0]
        count = struct.unpack_from(">i", r, pos + 57)[0]
        batches.append((base, count, CODEC_NAMES.get(attributes & 7, attributes & 7), producer_id))
        pos += 12 + blen
    return batches
