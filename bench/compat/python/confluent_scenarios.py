# The confluent-kafka (librdkafka) scenarios of the Python compat run (bench/compat/python.ts):
# what a user of that client does against booblik's Kafka listener, each scenario printing one
# RESULT line. `member <json>` runs one consumer-group member (a child process of the group
# scenario). Usage: python confluent_scenarios.py run <bootstrap> <log dir> [scenario words...]
import json
import sys
import time

import confluent_kafka as ck
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

import common
from common import BASE_TS_MS, Failed, check, compare, describe_diffs, make_records, observe, scenario

PREFIX = "py-ck"
CALL_S = 20
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def base_conf(ctx, **more):
    conf = {"bootstrap.servers": ctx["bootstrap"]}
    if ctx.get("debug"):
        conf["debug"] = ctx["debug"]
    conf.update(more)
    return conf


def admin(ctx):
    # One AdminClient for the run: a client that is garbage-collected while its futures are
    # pending fails them with _DESTROY, so it must outlive every call.
    if "admin" not in ctx:
        ctx["admin"] = AdminClient(base_conf(ctx))
    return ctx["admin"]


def create_topic(ctx, name, partitions, config=None):
    futures = admin(ctx).create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=CALL_S)
    futures[name].result(CALL_S)


def produce(ctx, topic, items, **conf):
    """items: [(partition or None, record)]; returns [(partition, offset)] in send order from the
    delivery reports; raises on any delivery error."""
    p = Producer(base_conf(ctx, **{"acks": "all", "linger.ms": 20, **conf}))
    reports = [None] * len(items)

    def report_for(i):
        def on_delivery(err, msg):
            reports[i] = err if err is not None else (msg.partition(), msg.offset())

        return on_delivery

    for i, (partition, r) in enumerate(items):
        kwargs = {} if partition is None else {"partition": partition}
        p.produce(
            topic,
            key=r["key"],
            value=r["value"],
            headers=r["headers"],
            timestamp=r["timestamp"],
            on_delivery=report_for(i),
            **kwargs,
        )
    left = p.flush(CALL_S)
    check(left == 0, f"{left} records not delivered within {CALL_S} s")
    errors = [e for e in reports if not isinstance(e, tuple)]
    check(not errors, f"delivery errors: {errors[:3]}")
    return reports


def consumer(ctx, **more):
    return Consumer(
        base_conf(
            ctx,
            **{
                "group.id": f"{PREFIX}-reader-{time.monotonic_ns()}",
                "enable.auto.commit": False,
                "check.crcs": True,
                "enable.partition.eof": True,
                **more,
            },
        )
    )


def as_record(msg):
    headers = [(k, v if v is not None else None) for k, v in (msg.headers() or [])]
    return {"key": msg.key(), "value": msg.value(), "headers": headers, "timestamp": msg.timestamp()[1]}


def read(ctx, topic, starts, **more):
    """Reads from each (partition, start offset) to the end of the partition (EOF events).
    starts: {partition: offset or OFFSET_BEGINNING}. Returns {(partition, offset): record}."""
    c = consumer(ctx, **more)
    got = {}
    try:
        c.assign([TopicPartition(topic, p, o) for p, o in starts.items()])
        at_end = set()
        deadline = time.monotonic() + CALL_S
        while at_end != set(starts) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == ck.KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                    continue
                raise Failed(f"consumer error: {m.error()}")
            check(m.timestamp()[0] == ck.TIMESTAMP_CREATE_TIME, f"timestamp type {m.timestamp()[0]}")
            got[(m.partition(), m.offset())] = as_record(m)
        check(at_end == set(starts), f"reached the end of {sorted(at_end)} of {sorted(starts)} in {CALL_S} s")
    finally:
        c.close()
    return got


def expected_from(items, reports):
    return {where: r for (_, r), where in zip(items, reports)}


@scenario("metadata: list_topics (broker, topics, partitions)")
def s_metadata(ctx):
    create_topic(ctx, f"{PREFIX}-meta", 3)
    md = admin(ctx).list_topics(timeout=CALL_S)
    brokers = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
    check(brokers == {1: ctx["bootstrap"]}, f"brokers {brokers}")
    t = md.topics.get(f"{PREFIX}-meta")
    check(t is not None and t.error is None, f"topic missing or in error: {t}")
    parts = {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in t.partitions.values()}
    check(parts == {i: (1, [1], [1]) for i in range(3)}, f"partitions {parts}")
    observe("cluster_id", md.cluster_id)
    observe("controller_id", md.controller_id)
    return f"broker 1 at {brokers[1]}, cluster {md.cluster_id}, 3 partitions led by 1; {len(md.topics)} topics"


@scenario("admin: create_topics (3 partitions, a config), an existing one, delete_topics")
def s_admin_topics(ctx):
    a = admin(ctx)
    name = f"{PREFIX}-admin"
    f = a.create_topics([NewTopic(name, 3, 1, config={"retention.ms": "3600000"})], operation_timeout=CALL_S)
    f[name].result(CALL_S)
    md = a.list_topics(name, timeout=CALL_S)
    check(len(md.topics[name].partitions) == 3, f"partitions {len(md.topics[name].partitions)}")
    again = a.create_topics([NewTopic(name, 3, 1)], operation_timeout=CALL_S)[name]
    try:
        again.result(CALL_S)
        raise Failed("creating an existing topic succeeded")
    except ck.KafkaException as e:
        code = e.args[0].code()
        check(code == ck.KafkaError.TOPIC_ALREADY_EXISTS, f"existing topic: {e}")
    d = a.delete_topics([name], operation_timeout=CALL_S)
    d[name].result(CALL_S)
    gone = common.wait_for(lambda: name not in a.list_topics(timeout=CALL_S).topics, "the topic to be gone", 10)
    return f"created with 3 partitions; again: TOPIC_ALREADY_EXISTS; deleted, gone from list_topics ({gone})"


@scenario("admin: describe_configs of a topic")
def s_describe_configs(ctx):
    name = f"{PREFIX}-configs"
    create_topic(ctx, name, 1, {"retention.ms": "3600000"})
    res = ConfigResource(ResourceType.TOPIC, name)
    configs = admin(ctx).describe_configs([res], request_timeout=CALL_S)[res].result(CALL_S)
    observe("describe_configs", {k: (v.value, v.source) for k, v in configs.items()})
    r = configs.get("retention.ms")
    check(r is not None and r.value == "3600000", f"retention.ms {r}")
    check(r.source == ck.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value, f"retention.ms source {r.source}")
    check("max.message.bytes" in configs, "no max.message.bytes")
    return f"{len(configs)} entries; retention.ms=3600000 (DYNAMIC_TOPIC_CONFIG)"


def codec_scenario(codec):
    def run(ctx):
        topic = f"{PREFIX}-codec-{codec}"
        create_topic(ctx, topic, 3)
        records = make_records(codec, 30)
        items = [(None, r) for r in records]
        # Two sends of 15, so that each partition holds more than one batch.
        reports = produce(ctx, topic, items[:15], **{"compression.type": codec})
        reports += produce(ctx, topic, items[15:], **{"compression.type": codec})
        expected = expected_from(items, reports)
        return common.check_codec_round_trip(
            ctx, topic, items, reports, expected, lambda starts: read(ctx, topic, starts), ck.OFFSET_BEGINNING, codec
        )

    return run


for _codec in CODECS:
    scenario(f"produce+consume: compression {_codec}, acks=all, keys, headers, timestamps, check.crcs")(codec_scenario(_codec))


@scenario("bulk: 3000 records (lz4, batches of 100) over 3 partitions, read back in fetches of 16 KiB per partition with check.crcs")
def s_bulk(ctx):
    topic = f"{PREFIX}-bulk"
    create_topic(ctx, topic, 3)
    items = [(None, r) for r in make_records("bulk", 3000)]
    reports = produce(ctx, topic, items, **{"compression.type": "lz4", "linger.ms": 50, "batch.num.messages": 100})
    # Small fetches, so that reading takes many Fetch requests (each ends inside the partition).
    limits = {"max.partition.fetch.bytes": 16384, "fetch.max.bytes": 32768, "message.max.bytes": 32768}
    got = read(ctx, topic, {p: ck.OFFSET_BEGINNING for p in range(3)}, **limits)
    diffs = compare(expected_from(items, reports), got)
    check(not diffs, describe_diffs(diffs))
    batches = sum(len(common.stored_batches(ctx["bootstrap"], topic, p)) for p in range(3))
    return f"3000 records in {batches}+ stored batches (the first 4 MiB of each partition counted), read back exactly"


@scenario("consume by timestamp: offsets_for_times, and get_watermark_offsets")
def s_by_time(ctx):
    topic = f"{PREFIX}-time"
    create_topic(ctx, topic, 1)
    records = make_records("time", 10)
    reports = produce(ctx, topic, [(0, r) for r in records[:5]])
    reports += produce(ctx, topic, [(0, r) for r in records[5:]], **{"compression.type": "gzip"})
    check([o for _, o in reports] == list(range(10)), f"offsets {reports}")
    c = consumer(ctx)
    try:
        found = {}
        for i in (0, 3, 7):
            tp = c.offsets_for_times([TopicPartition(topic, 0, records[i]["timestamp"])], CALL_S)[0]
            found[i] = tp.offset
        between = c.offsets_for_times([TopicPartition(topic, 0, records[3]["timestamp"] - 1)], CALL_S)[0].offset
        after = c.offsets_for_times([TopicPartition(topic, 0, records[9]["timestamp"] + 1)], CALL_S)[0].offset
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), CALL_S)
    finally:
        c.close()
    check(found == {0: 0, 3: 3, 7: 7}, f"offsets for the records' timestamps: {found}")
    check(between == 3, f"offset for a time between records 2 and 3: {between}")
    check(after == ck.OFFSET_END, f"offset for a time after the last record: {after}")
    check((low, high) == (0, 10), f"watermarks {(low, high)}")
    got = read(ctx, topic, {0: found[7]})
    diffs = compare({(0, o): records[o] for o in range(7, 10)}, got)
    check(not diffs, describe_diffs(diffs))
    return f"times of offsets 0, 3, 7 -> {found}; between -> 3; after the last -> OFFSET_END; watermarks 0/10; read from 7 (gzip batch) exact"


@scenario("idempotent producer: enable.idempotence=True (lz4), every record once at consecutive offsets")
def s_idempotent(ctx):
    topic = f"{PREFIX}-idempotent"
    create_topic(ctx, topic, 3)
    records = make_records("idem", 60)
    items = [(None, r) for r in records]
    p = Producer(base_conf(ctx, **{"enable.idempotence": True, "compression.type": "lz4", "linger.ms": 5}))
    reports = [None] * len(items)
    for i, (_, r) in enumerate(items):

        def on_delivery(err, msg, i=i):
            reports[i] = err if err is not None else (msg.partition(), msg.offset())

        p.produce(topic, key=r["key"], value=r["value"], headers=r["headers"], timestamp=r["timestamp"], on_delivery=on_delivery)
        if i % 20 == 19:
            p.poll(0)
            check(p.flush(CALL_S) == 0, "records not delivered")
    check(p.flush(CALL_S) == 0, "records not delivered")
    errors = [e for e in reports if not isinstance(e, tuple)]
    check(not errors, f"delivery errors: {errors[:3]}")
    per = {}
    for part, off in reports:
        per.setdefault(part, []).append(off)
    check(all(sorted(v) == list(range(len(v))) for v in per.values()), f"offsets not consecutive: {per}")
    got = read(ctx, topic, {q: ck.OFFSET_BEGINNING for q in range(3)})
    diffs = compare(expected_from(items, reports), got)
    check(not diffs, describe_diffs(diffs))
    batches = [b for q in range(3) for b in common.stored_batches(ctx["bootstrap"], topic, q)]
    pids = sorted({b[3] for b in batches})
    check(len(pids) == 1 and pids[0] >= 0, f"producer ids of the stored batches: {pids}")
    return f"producer id {pids[0]}; 60 records in 3 flushes, offsets 0..n-1 per partition {({k: len(v) for k, v in sorted(per.items())})}, read back exactly"


@scenario("producer defaults: is enable.idempotence on by default?")
def s_defaults(ctx):
    # librdkafka documents enable.idempotence default false (CONFIGURATION.md); the stored batch
    # says what this build did: producer id -1 is a plain producer, >= 0 an idempotent one.
    topic = f"{PREFIX}-defaults"
    create_topic(ctx, topic, 1)
    p = Producer(base_conf(ctx))
    p.produce(topic, key=b"k", value=b"default")
    check(p.flush(CALL_S) == 0, "not delivered")
    batches = common.stored_batches(ctx["bootstrap"], topic, 0)
    check(len(batches) == 1, f"batches {batches}")
    pid = batches[0][3]
    return f"delivered; the default producer is {'idempotent' if pid >= 0 else 'not idempotent'} (stored producer id {pid})"


@scenario("admin: list_offsets (earliest, latest, by time), incremental_alter_configs, create_partitions, delete_records")
def s_admin_more(ctx):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, NewPartitions, OffsetSpec

    a = admin(ctx)
    topic = f"{PREFIX}-admin-more"
    create_topic(ctx, topic, 1)
    records = make_records("more", 10)
    produce(ctx, topic, [(0, r) for r in records])
    tp = TopicPartition(topic, 0)

    def offset(spec):
        return a.list_offsets({tp: spec}, request_timeout=CALL_S)[tp].result(CALL_S)

    got = (offset(OffsetSpec.earliest()).offset, offset(OffsetSpec.latest()).offset, offset(OffsetSpec.for_timestamp(records[4]["timestamp"])).offset)
    check(got == (0, 10, 4), f"earliest, latest, by time: {got}")
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res], request_timeout=CALL_S)[res].result(CALL_S)
    plain = ConfigResource(ResourceType.TOPIC, topic)
    retention = a.describe_configs([plain], request_timeout=CALL_S)[plain].result(CALL_S)["retention.ms"].value
    check(retention == "7200000", f"retention.ms after the change: {retention}")
    a.create_partitions([NewPartitions(topic, 3)], operation_timeout=CALL_S)[topic].result(CALL_S)
    n = len(a.list_topics(topic, timeout=CALL_S).topics[topic].partitions)
    check(n == 3, f"partitions after create_partitions: {n}")
    low = a.delete_records([TopicPartition(topic, 0, 4)], request_timeout=CALL_S)[TopicPartition(topic, 0, 4)].result(CALL_S).low_watermark
    earliest = offset(OffsetSpec.earliest()).offset
    check((low, earliest) == (4, 4), f"low watermark {low}, earliest {earliest}")
    return "earliest 0, latest 10, by time 4; retention.ms set to 7200000; 1 -> 3 partitions; delete_records to 4: earliest 4"


@scenario("admin: list_offsets max_timestamp (KIP-734)")
def s_max_timestamp(ctx):
    from confluent_kafka.admin import OffsetSpec

    topic = f"{PREFIX}-max-ts"
    create_topic(ctx, topic, 1)
    produce(ctx, topic, [(0, r) for r in make_records("maxts", 5)])
    tp = TopicPartition(topic, 0)
    # booblik answers -3 since 2026-12-02 (before: INVALID_REQUEST, reported as KNOWN).
    got = admin(ctx).list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=CALL_S)[tp].result(CALL_S)
    check((got.offset, got.timestamp) == (4, BASE_TS_MS + 4000), f"max timestamp: offset {got.offset}, timestamp {got.timestamp}")
    return "offset 4 with the last record's timestamp"


@scenario("admin: alter_consumer_group_offsets, list_consumer_group_offsets, delete_consumer_groups of an offsets-only group")
def s_group_offsets_admin(ctx):
    from confluent_kafka import ConsumerGroupTopicPartitions

    a = admin(ctx)
    topic, group = f"{PREFIX}-offsets-admin", f"{PREFIX}-offsets-only"
    create_topic(ctx, topic, 2)
    produce(ctx, topic, [(p, r) for p in range(2) for r in make_records("oa", 5)])
    want = [TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 5)]
    a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, want)], request_timeout=CALL_S)[group].result(CALL_S)
    listed = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=CALL_S)[group].result(CALL_S)
    got = sorted((tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions)
    check(got == [(topic, 0, 3), (topic, 1, 5)], f"listed {got}")
    a.delete_consumer_groups([group], request_timeout=CALL_S)[group].result(CALL_S)
    again = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=CALL_S)[group].result(CALL_S)
    left = [(tp.partition, tp.offset) for tp in again.topic_partitions if tp.offset >= 0]
    check(not left, f"offsets left after delete: {left}")
    return "set 3 and 5, listed back (all partitions of the group), deleted: nothing left"


def _member(args):
    stop = common.member_stdin_watcher()
    c = Consumer(
        {
            "bootstrap.servers": args["bootstrap"],
            "group.id": args["group"],
            "client.id": f"member-{args['name']}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "check.crcs": True,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            **({"debug": args["debug"]} if args.get("debug") else {}),
        }
    )

    def on_assign(consumer, parts):
        common.emit("assign", partitions=[p.partition for p in parts])

    def on_revoke(consumer, parts):
        common.emit("revoke", partitions=[p.partition for p in parts])

    c.subscribe([args["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    while not stop.is_set():
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            common.emit("error", error=str(m.error()))
            continue
        common.emit("record", partition=m.partition(), offset=m.offset(), value=m.value().decode(errors="replace")[:40])
        try:
            c.commit(message=m, asynchronous=False)
            common.emit("commit", partition=m.partition(), offset=m.offset() + 1)
        except ck.KafkaException as e:
            common.emit("commit_error", partition=m.partition(), offset=m.offset() + 1, error=str(e))
    c.close()
    common.emit("closed")


@scenario("consumer group: two processes split 3 partitions, commit, one leaves, the other takes over, a new member resumes at the commits")
def s_group(ctx):
    def produce_to(topic, items):
        return produce(ctx, topic, items)

    def committed_offsets(group, topic, partitions):
        from confluent_kafka import ConsumerGroupTopicPartitions

        req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])
        res = admin(ctx).list_consumer_group_offsets([req], request_timeout=CALL_S)[group].result(CALL_S)
        via_admin = {tp.partition: tp.offset for tp in res.topic_partitions}
        # And through a consumer of the group (committed()), which must agree.
        c = Consumer(base_conf(ctx, **{"group.id": group, "enable.auto.commit": False}))
        try:
            via_consumer = {tp.partition: tp.offset for tp in c.committed([TopicPartition(topic, p) for p in partitions], CALL_S)}
        finally:
            c.close()
        check(via_admin == via_consumer, f"list_consumer_group_offsets {via_admin} but committed() {via_consumer}")
        return via_admin

    return common.run_group_scenario(
        __file__, ctx, lambda name, n: create_topic(ctx, name, n), produce_to, committed_offsets, PREFIX
    )


@scenario("admin: list_consumer_groups, describe_consumer_groups, delete_consumer_groups")
def s_groups_admin(ctx):
    group = f"{PREFIX}-group"
    a = admin(ctx)
    listed = a.list_consumer_groups(request_timeout=CALL_S).result(CALL_S)
    ids = sorted(g.group_id for g in listed.valid)
    observe("list_consumer_groups", ids)
    check(group in ids, f"{group} not in {ids} (errors {listed.errors})")
    desc = a.describe_consumer_groups([group], request_timeout=CALL_S)[group].result(CALL_S)
    observe("describe_consumer_groups", (desc.state, desc.members, desc.partition_assignor))
    deleted = a.delete_consumer_groups([group], request_timeout=CALL_S)[group].result(CALL_S)
    return f"listed {len(ids)} groups; {group} state {desc.state}, {len(desc.members)} members; deleted ({deleted})"


@scenario("admin: describe_cluster")
def s_cluster(ctx):
    desc = admin(ctx).describe_cluster(request_timeout=CALL_S).result(CALL_S)
    nodes = [f"{n.id}@{n.host}:{n.port}" for n in desc.nodes]
    check(nodes == [f"1@{ctx['bootstrap']}"], f"nodes {nodes}")
    return f"cluster {desc.cluster_id}, controller {desc.controller.id}, nodes {nodes}"


@scenario("admin: describe_topics")
def s_describe_topics(ctx):
    from confluent_kafka import TopicCollection

    name = f"{PREFIX}-meta"
    desc = admin(ctx).describe_topics(TopicCollection([name]), request_timeout=CALL_S)[name].result(CALL_S)
    parts = [(p.id, p.leader.id) for p in desc.partitions]
    check(parts == [(0, 1), (1, 1), (2, 1)], f"partitions {parts}")
    return f"{name}: 3 partitions led by 1"


def main():
    if sys.argv[1] == "member":
        _member(json.loads(sys.argv[2]))
        return
    bootstrap, log_dir = sys.argv[2], sys.argv[3]
    only = sys.argv[4:]
    import os

    ctx = {"bootstrap": bootstrap, "log_dir": log_dir, "debug": os.environ.get("COMPAT_DEBUG")}
    version = ck.version() if isinstance(ck.version(), str) else ck.version()[0]
    print(f"VERSION confluent-kafka {version} (librdkafka {ck.libversion()[0]}), Python {sys.version.split()[0]}", flush=True)
    failed = common.run_all(ctx, only)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
