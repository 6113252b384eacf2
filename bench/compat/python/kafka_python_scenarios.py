# The kafka-python scenarios of the Python compat run (bench/compat/python.ts): the same user
# actions as confluent_scenarios.py, through the pure-Python client, each printing one RESULT line.
# `member <json>` runs one consumer-group member (a child process of the group scenario).
# Usage: python kafka_python_scenarios.py run <bootstrap> <log dir> [scenario words...]
import json
import logging
import os
import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.errors import TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

import common
from common import Failed, check, compare, describe_diffs, make_records, observe, scenario

PREFIX = "py-kp"
CALL_S = 20
CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


def admin(ctx):
    if "admin" not in ctx:
        ctx["admin"] = KafkaAdminClient(bootstrap_servers=ctx["bootstrap"], request_timeout_ms=CALL_S * 1000)
    return ctx["admin"]


def create_topic(ctx, name, partitions, configs=None):
    admin(ctx).create_topics(
        {name: {"num_partitions": partitions, "replication_factor": 1, "configs": configs or {}}},
        timeout_ms=CALL_S * 1000,
    )


def produce(ctx, topic, items, **conf):
    """items: [(partition or None, record)]; returns [(partition, offset)] in send order."""
    p = KafkaProducer(bootstrap_servers=ctx["bootstrap"], acks="all", linger_ms=20, **conf)
    try:
        futures = [
            p.send(
                topic,
                key=r["key"],
                value=r["value"],
                headers=r["headers"],
                timestamp_ms=r["timestamp"],
                partition=partition,
            )
            for partition, r in items
        ]
        p.flush(CALL_S)
        reports = []
        for f in futures:
            md = f.get(CALL_S)
            reports.append((md.partition, md.offset))
        return reports
    finally:
        p.close(CALL_S)


def consumer(ctx, **more):
    return KafkaConsumer(
        bootstrap_servers=ctx["bootstrap"],
        enable_auto_commit=False,
        check_crcs=True,
        auto_offset_reset="earliest",
        request_timeout_ms=CALL_S * 1000,
        **more,
    )


def as_record(m):
    return {"key": m.key, "value": m.value, "headers": list(m.headers), "timestamp": m.timestamp}


def read(ctx, topic, starts, **more):
    """Reads from each (partition, start offset or None = the beginning) to the partition's end
    offset at the time of the call. Returns {(partition, offset): record}."""
    c = consumer(ctx, **more)
    got = {}
    try:
        tps = {p: TopicPartition(topic, p) for p in starts}
        c.assign(list(tps.values()))
        for p, o in starts.items():
            if o is None:
                c.seek_to_beginning(tps[p])
            else:
                c.seek(tps[p], o)
        ends = {tp.partition: off for tp, off in c.end_offsets(list(tps.values())).items()}
        deadline = time.monotonic() + CALL_S
        while time.monotonic() < deadline and any(c.position(tps[p]) < ends[p] for p in starts):
            for tp, records in c.poll(timeout_ms=500).items():
                for m in records:
                    check(m.timestamp_type == 0, f"timestamp type {m.timestamp_type}")
                    got[(tp.partition, m.offset)] = as_record(m)
        left = {p: (c.position(tps[p]), ends[p]) for p in starts if c.position(tps[p]) < ends[p]}
        check(not left, f"not at the end after {CALL_S} s: {left}")
    finally:
        c.close()
    return got


def expected_from(items, reports):
    return {where: r for (_, r), where in zip(items, reports)}


@scenario("metadata: list_topics, describe_topics, describe_cluster")
def s_metadata(ctx):
    name = f"{PREFIX}-meta"
    create_topic(ctx, name, 3)
    a = admin(ctx)
    topics = a.list_topics()
    check(name in topics, f"{name} not in {topics}")
    desc = a.describe_topics([name])
    observe("describe_topics", desc)
    parts = sorted((p["partition_index"], p["leader_id"], list(p["replica_nodes"]), list(p["isr_nodes"])) for p in desc[0]["partitions"])
    check(parts == [(i, 1, [1], [1]) for i in range(3)], f"partitions {parts}")
    cluster = a.describe_cluster()
    observe("describe_cluster", cluster)
    brokers = [f"{b['broker_id']}@{b['host']}:{b['port']}" for b in cluster["brokers"]]
    check(brokers == [f"1@{ctx['bootstrap']}"], f"brokers {brokers}")
    # The consumer's view too.
    c = consumer(ctx)
    try:
        parts_c = c.partitions_for_topic(name)
    finally:
        c.close()
    check(parts_c == {0, 1, 2}, f"partitions_for_topic {parts_c}")
    return f"{len(topics)} topics; {name}: 3 partitions led by 1; cluster {cluster.get('cluster_id')}, brokers {brokers}"


@scenario("admin: create_topics (3 partitions, a config), an existing one, delete_topics")
def s_admin_topics(ctx):
    a = admin(ctx)
    name = f"{PREFIX}-admin"
    create_topic(ctx, name, 3, {"retention.ms": "3600000"})
    desc = a.describe_topics([name])
    check(len(desc[0]["partitions"]) == 3, f"partitions {desc}")
    try:
        create_topic(ctx, name, 3)
        raise Failed("creating an existing topic succeeded")
    except TopicAlreadyExistsError:
        pass
    a.delete_topics([name], timeout_ms=CALL_S * 1000)
    common.wait_for(lambda: name not in a.list_topics(), "the topic to be gone", 10)
    return "created with 3 partitions; again: TopicAlreadyExistsError; deleted, gone from list_topics"


@scenario("admin: describe_configs of a topic")
def s_describe_configs(ctx):
    name = f"{PREFIX}-configs"
    create_topic(ctx, name, 1, {"retention.ms": "3600000"})
    res = admin(ctx).describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)], config_filter="all")
    observe("describe_configs", res)
    configs = res["topic"][name]
    r = configs.get("retention.ms")
    check(r is not None and r["value"] == "3600000", f"retention.ms {r}")
    check("max.message.bytes" in configs, f"no max.message.bytes in {sorted(configs)}")
    modified = admin(ctx).describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
    check(sorted(modified) == ["retention.ms"], f"modified configs {sorted(modified)}")
    return f"{len(configs)} entries; retention.ms=3600000; the default filter (modified) lists only retention.ms"


def codec_scenario(codec):
    def run(ctx):
        name = codec or "none"
        topic = f"{PREFIX}-codec-{name}"
        create_topic(ctx, topic, 3)
        records = make_records(name, 30)
        items = [(None, r) for r in records]
        reports = produce(ctx, topic, items[:15], compression_type=codec)
        reports += produce(ctx, topic, items[15:], compression_type=codec)
        expected = expected_from(items, reports)
        return common.check_codec_round_trip(
            ctx, topic, items, reports, expected, lambda starts: read(ctx, topic, starts), None, name
        )

    return run


for _codec in CODECS:
    scenario(f"produce+consume: compression {_codec or 'none'}, acks=all, keys, headers, timestamps, check_crcs")(codec_scenario(_codec))


@scenario("bulk: 3000 records (lz4, default batching) over 3 partitions, read back in fetches of 16 KiB per partition with check_crcs")
def s_bulk(ctx):
    topic = f"{PREFIX}-bulk"
    create_topic(ctx, topic, 3)
    items = [(None, r) for r in make_records("bulk", 3000)]
    reports = produce(ctx, topic, items, compression_type="lz4")
    # Small fetches, so that reading takes many Fetch requests (each ends inside the partition).
    got = read(ctx, topic, {p: None for p in range(3)}, max_partition_fetch_bytes=16384, fetch_max_bytes=32768)
    diffs = compare(expected_from(items, reports), got)
    check(not diffs, describe_diffs(diffs))
    batches = sum(len(common.stored_batches(ctx["bootstrap"], topic, p)) for p in range(3))
    return f"3000 records in {batches}+ stored batches (the first 4 MiB of each partition counted), read back exactly"


@scenario("consume by timestamp: offsets_for_times, beginning_offsets, end_offsets")
def s_by_time(ctx):
    topic = f"{PREFIX}-time"
    create_topic(ctx, topic, 1)
    records = make_records("time", 10)
    reports = produce(ctx, topic, [(0, r) for r in records[:5]])
    reports += produce(ctx, topic, [(0, r) for r in records[5:]], compression_type="gzip")
    check([o for _, o in reports] == list(range(10)), f"offsets {reports}")
    tp = TopicPartition(topic, 0)
    c = consumer(ctx)
    try:
        found = {}
        for i in (0, 3, 7):
            found[i] = c.offsets_for_times({tp: records[i]["timestamp"]})[tp].offset
        between = c.offsets_for_times({tp: records[3]["timestamp"] - 1})[tp]
        after = c.offsets_for_times({tp: records[9]["timestamp"] + 1})[tp]
        low = c.beginning_offsets([tp])[tp]
        high = c.end_offsets([tp])[tp]
    finally:
        c.close()
    check(found == {0: 0, 3: 3, 7: 7}, f"offsets for the records' timestamps: {found}")
    check(between is not None and between.offset == 3 and between.timestamp == records[3]["timestamp"], f"between: {between}")
    check(after is None, f"offset for a time after the last record: {after}")
    check((low, high) == (0, 10), f"beginning/end {(low, high)}")
    got = read(ctx, topic, {0: found[7]})
    diffs = compare({(0, o): records[o] for o in range(7, 10)}, got)
    check(not diffs, describe_diffs(diffs))
    return f"times of offsets 0, 3, 7 -> {found}; between -> 3 (with its timestamp); after the last -> None; 0/10; read from 7 (gzip batch) exact"


@scenario("idempotent producer: enable_idempotence=True (lz4), every record once at consecutive offsets")
def s_idempotent(ctx):
    topic = f"{PREFIX}-idempotent"
    create_topic(ctx, topic, 3)
    records = make_records("idem", 60)
    items = [(None, r) for r in records]
    reports = []
    for chunk in range(3):
        reports += produce(ctx, topic, items[chunk * 20 : chunk * 20 + 20], enable_idempotence=True, compression_type="lz4")
    per = {}
    for part, off in reports:
        per.setdefault(part, []).append(off)
    check(all(sorted(v) == list(range(len(v))) for v in per.values()), f"offsets not consecutive: {per}")
    got = read(ctx, topic, {q: None for q in range(3)})
    diffs = compare(expected_from(items, reports), got)
    check(not diffs, describe_diffs(diffs))
    batches = [b for q in range(3) for b in common.stored_batches(ctx["bootstrap"], topic, q)]
    pids = sorted({b[3] for b in batches})
    check(len(pids) == 3 and all(p >= 0 for p in pids), f"producer ids of the stored batches (3 producers): {pids}")
    return f"producer ids {pids} (one per producer); 60 records, offsets 0..n-1 per partition {({k: len(v) for k, v in sorted(per.items())})}, read back exactly"


@scenario("producer defaults: is enable_idempotence on by default?")
def s_defaults(ctx):
    topic = f"{PREFIX}-defaults"
    create_topic(ctx, topic, 1)
    p = KafkaProducer(bootstrap_servers=ctx["bootstrap"])
    try:
        md = p.send(topic, key=b"k", value=b"default").get(CALL_S)
        observe("producer config", {k: p.config[k] for k in ("enable_idempotence", "acks", "compression_type")})
    finally:
        p.close(CALL_S)
    batches = common.stored_batches(ctx["bootstrap"], topic, 0)
    check(len(batches) == 1, f"batches {batches}")
    pid = batches[0][3]
    return f"delivered at {md.offset}; the default producer is {'idempotent' if pid >= 0 else 'not idempotent'} (stored producer id {pid})"


@scenario("admin: list_partition_offsets, alter_configs (incremental), create_partitions, delete_records")
def s_admin_more(ctx):
    from kafka.admin import OffsetSpec

    a = admin(ctx)
    topic = f"{PREFIX}-admin-more"
    create_topic(ctx, topic, 1)
    records = make_records("more", 10)
    produce(ctx, topic, [(0, r) for r in records])
    tp = TopicPartition(topic, 0)

    def offset(spec):
        return a.list_partition_offsets({tp: spec})[tp].offset

    got = (offset(OffsetSpec.EARLIEST), offset(OffsetSpec.LATEST), offset(records[4]["timestamp"]))
    check(got == (0, 10, 4), f"earliest, latest, by time: {got}")
    altered = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "7200000"})], incremental=True)
    check(altered == {"topic": {topic: "OK"}}, f"alter_configs {altered}")
    retention = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])["topic"][topic]["retention.ms"]["value"]
    check(retention == "7200000", f"retention.ms after the change: {retention}")
    a.create_partitions({topic: 3})
    n = len(a.describe_topics([topic])[0]["partitions"])
    check(n == 3, f"partitions after create_partitions: {n}")
    low = a.delete_records({tp: 4})[tp]["low_watermark"]
    check((low, offset(OffsetSpec.EARLIEST)) == (4, 4), f"low watermark {low}")
    return "earliest 0, latest 10, by time 4; retention.ms set to 7200000; 1 -> 3 partitions; delete_records to 4: earliest 4"


@scenario("admin: list_partition_offsets MAX_TIMESTAMP (KIP-734)")
def s_max_timestamp(ctx):
    from kafka.admin import OffsetSpec

    topic = f"{PREFIX}-max-ts"
    create_topic(ctx, topic, 1)
    produce(ctx, topic, [(0, r) for r in make_records("maxts", 5)])
    tp = TopicPartition(topic, 0)
    # kafka-python asks at ListOffsets v7+, served since 2026-12-02 (before: IncompatibleBrokerVersion, KNOWN).
    got = admin(ctx).list_partition_offsets({tp: OffsetSpec.MAX_TIMESTAMP})[tp]
    check(got.offset == 4, f"max timestamp: {got}")
    return "offset 4"


@scenario("admin: alter_group_offsets, list_group_offsets, delete_group_offsets, delete_groups of an offsets-only group")
def s_group_offsets_admin(ctx):
    a = admin(ctx)
    topic, group = f"{PREFIX}-offsets-admin", f"{PREFIX}-offsets-only"
    create_topic(ctx, topic, 2)
    produce(ctx, topic, [(p, r) for p in range(2) for r in make_records("oa", 5)])
    t0, t1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    a.alter_group_offsets(group, {t0: OffsetAndMetadata(3, "m0", -1), t1: OffsetAndMetadata(5, "", -1)})
    got = {tp.partition: (om.offset, om.metadata) for tp, om in a.list_group_offsets(group)[group].items()}
    check(got == {0: (3, "m0"), 1: (5, "")}, f"listed {got}")
    a.delete_group_offsets(group, [t0])
    got = {tp.partition: om.offset for tp, om in a.list_group_offsets(group)[group].items()}
    check(got == {1: 5}, f"after delete_group_offsets of partition 0: {got}")
    deleted = a.delete_groups([group])
    check(deleted == {group: "OK"}, f"delete_groups {deleted}")
    return "set 3 (with metadata) and 5, listed back; partition 0 deleted; group deleted"


def _member(args):
    logging.basicConfig(level=logging.DEBUG if args.get("debug") else logging.INFO, stream=sys.stderr)
    stop = common.member_stdin_watcher()
    c = KafkaConsumer(
        bootstrap_servers=args["bootstrap"],
        group_id=args["group"],
        client_id=f"member-{args['name']}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        check_crcs=True,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            common.emit("assign", partitions=[tp.partition for tp in assigned])

        def on_partitions_revoked(self, revoked):
            common.emit("revoke", partitions=[tp.partition for tp in revoked])

    c.subscribe(topics=[args["topic"]], listener=Listener())
    while not stop.is_set():
        for tp, records in c.poll(timeout_ms=200).items():
            for m in records:
                common.emit("record", partition=tp.partition, offset=m.offset, value=m.value.decode(errors="replace")[:40])
                try:
                    c.commit({tp: OffsetAndMetadata(m.offset + 1, "", -1)})
                    common.emit("commit", partition=tp.partition, offset=m.offset + 1)
                except Exception as e:  # noqa: BLE001 - reported to the orchestrator
                    common.emit("commit_error", partition=tp.partition, offset=m.offset + 1, error=repr(e))
    c.close()
    common.emit("closed")


@scenario("consumer group: two processes split 3 partitions, commit, one leaves, the other takes over, a new member resumes at the commits")
def s_group(ctx):
    def committed_offsets(group, topic, partitions):
        res = admin(ctx).list_group_offsets(group)[group]
        via_admin = {tp.partition: om.offset for tp, om in res.items() if tp.topic == topic}
        c = consumer(ctx, group_id=group)
        try:
            via_consumer = {p: c.committed(TopicPartition(topic, p)) for p in partitions}
        finally:
            c.close()
        check(via_admin == via_consumer, f"list_group_offsets {via_admin} but committed() {via_consumer}")
        return via_admin

    return common.run_group_scenario(
        __file__, ctx, lambda name, n: create_topic(ctx, name, n), lambda t, items: produce(ctx, t, items), committed_offsets, PREFIX
    )


@scenario("admin: list_groups, describe_groups, delete_groups")
def s_groups_admin(ctx):
    group = f"{PREFIX}-group"
    a = admin(ctx)
    listed = a.list_groups()
    observe("list_groups", listed)
    ids = sorted(g["group_id"] for g in listed)
    check(group in ids, f"{group} not in {ids}")
    desc = a.describe_groups([group])
    observe("describe_groups", desc)
    d = desc[group]
    deleted = a.delete_groups([group])
    check(deleted == {group: "OK"}, f"delete_groups {deleted}")
    return f"listed {ids}; {group} state {d.get('group_state')}, {len(d.get('members', []))} members; deleted"


def main():
    if sys.argv[1] == "member":
        _member(json.loads(sys.argv[2]))
        return
    bootstrap, log_dir = sys.argv[2], sys.argv[3]
    only = sys.argv[4:]
    debug = os.environ.get("COMPAT_DEBUG")
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, stream=sys.stderr)
    ctx = {"bootstrap": bootstrap, "log_dir": log_dir, "debug": debug}
    print(f"VERSION kafka-python {kafka.__version__}, Python {sys.version.split()[0]}", flush=True)
    failed = common.run_all(ctx, only)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
