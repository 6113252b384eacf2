// The Java client (kafka-clients 4.x) scenario of `bun run compat`: a producer with default settings
// and with idempotence off, every compression codec, a consumer group that rebalances when a second
// member joins and resumes from its commit, and the AdminClient calls a tool or UI makes. Every
// scenario ends in a line `COMPAT<TAB>name<TAB>PASS|FAIL<TAB>reason`; observed values (offsets,
// timestamps, error names) are printed as `OBSERVE<TAB>key<TAB>value` for the differential run
// against Apache Kafka. The program never waits without a bound: every client call has a timeout.
//
// Usage: java -cp <jars>:<classes> Compat <bootstrap host:port> <run id>
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.*;

public class Compat {
  static final List<String[]> results = new ArrayList<>();
  static String bootstrap;
  static String run;
  /** Records in compat-main once the producers ran (a failed producer scenario leaves fewer). */
  static long mainTotal;

  interface Scenario {
    String run() throws Exception;
  }

  static void check(String name, Scenario scenario) {
    String status;
    String reason;
    try {
      reason = scenario.run();
      status = "PASS";
    } catch (Throwable error) {
      Throwable cause = error;
      while ((cause instanceof ExecutionException || cause instanceof CompletionException) && cause.getCause() != null)
        cause = cause.getCause();
      status = "FAIL";
      reason = cause.getClass().getSimpleName() + ": " + String.valueOf(cause.getMessage()).split("\n")[0];
      Throwable root = cause;
      while (root.getCause() != null && root.getCause() != root) root = root.getCause();
      if (root != cause)
        reason += " (cause: " + root.getClass().getSimpleName() + ": " + String.valueOf(root.getMessage()).split("\n")[0] + ")";
    }
    results.add(new String[] {name, status, reason});
    System.out.println("COMPAT\t" + name + "\t" + status + "\t" + reason.replace('\t', ' '));
    System.out.flush();
  }

  static void observe(String key, Object value) {
    System.out.println("OBSERVE\t" + key + "\t" + value);
  }

  static void require(boolean condition, String what) {
    if (!condition) throw new IllegalStateException(what);
  }

  static Properties common() {
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("request.timeout.ms", "10000");
    props.put("default.api.timeout.ms", "20000");
    return props;
  }

  static Admin admin() {
    return Admin.create(common());
  }

  static KafkaProducer<String, String> producer(Map<String, String> extra) {
    Properties props = common();
    props.put("key.serializer", StringSerializer.class.getName());
    props.put("value.serializer", StringSerializer.class.getName());
    props.put("max.block.ms", "15000");
    props.put("delivery.timeout.ms", "20000");
    props.put("linger.ms", "5");
    props.putAll(extra);
    return new KafkaProducer<>(props);
  }

  static KafkaConsumer<String, String> consumer(String group, String clientId) {
    return consumer(group, clientId, Map.of());
  }

  static KafkaConsumer<String, String> consumer(String group, String clientId, Map<String, String> extra) {
    Properties props = common();
    props.put("group.id", group);
    props.put("client.id", clientId);
    props.put("group.protocol", "classic");
    props.put("key.deserializer", StringDeserializer.class.getName());
    props.put("value.deserializer", StringDeserializer.class.getName());
    props.put("auto.offset.reset", "earliest");
    props.put("enable.auto.commit", "false");
    props.put("session.timeout.ms", "10000");
    props.put("heartbeat.interval.ms", "1000");
    props.put("max.poll.interval.ms", "20000");
    props.putAll(extra);
    return new KafkaConsumer<>(props);
  }

  static void createTopic(String name, int partitions, Map<String, String> configs) throws Exception {
    try (Admin admin = admin()) {
      admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs))).all().get(30, TimeUnit.SECONDS);
    }
  }

  /** Sends `count` keyed records with a header to partition 0..partitions-1 in turn; their offsets. */
  static List<Long> produce(KafkaProducer<String, String> producer, String topic, int partitions, int count, long timestampMs)
      throws Exception {
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ProducerRecord<String, String> record =
          new ProducerRecord<>(topic, i % partitions, timestampMs + i, "key-" + i, "value-" + i);
      record.headers().add(new RecordHeader("h", ("header-" + i).getBytes()));
      sent.add(producer.send(record));
    }
    producer.flush();
    List<Long> offsets = new ArrayList<>();
    for (Future<RecordMetadata> future : sent) offsets.add(future.get(30, TimeUnit.SECONDS).offset());
    return offsets;
  }

  static List<ConsumerRecord<String, String>> pollUntil(KafkaConsumer<String, String> consumer, int count) {
    List<ConsumerRecord<String, String>> got = new ArrayList<>();
    long deadline = System.currentTimeMillis() + 30_000;
    while (got.size() < count && System.currentTimeMillis() < deadline)
      for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) got.add(record);
    require(got.size() == count, "polled " + got.size() + " of " + count + " records in 30 s");
    return got;
  }


  interface Call {
    Object call() throws Exception;
  }

  /** "ok" or the name of the exception a call ends in (unwrapped from ExecutionException). */
  static String errorOf(Call call) {
    try {
      call.call();
      return "ok";
    } catch (Throwable error) {
      Throwable cause = error;
      while ((cause instanceof ExecutionException || cause instanceof CompletionException) && cause.getCause() != null)
        cause = cause.getCause();
      return cause.getClass().getSimpleName();
    }
  }

  static String describeGroup(Admin admin, String group) throws Exception {
    ConsumerGroupDescription description =
        admin.describeConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS).get(group);
    return description.groupState() + " members=" + description.members().size() + " assignor=" + description.partitionAssignor();
  }

  public static void main(String[] args) throws Exception {
    bootstrap = args[0];
    run = args.length > 1 ? args[1] : String.valueOf(System.currentTimeMillis());
    final long baseTimestampMs = 1_700_000_000_000L;

    check("admin: create topics (3 partitions, configs)", () -> {
      createTopic("compat-main", 2, Map.of());
      createTopic("compat-admin", 3, Map.of("retention.ms", "3600000", "max.message.bytes", "100000"));
      try (Admin admin = admin()) {
        // Kafka answers CreateTopics once its controller created the topics; its broker's metadata
        // can lag behind by a moment (a run on 2026-12-02 listed only compat-main right after), so
        // the listing is asked for until both are there, for 10 s at most.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Set<String> names = admin.listTopics().names().get(20, TimeUnit.SECONDS);
        while (!names.containsAll(Set.of("compat-main", "compat-admin")) && System.nanoTime() < deadline) {
          Thread.sleep(100);
          names = admin.listTopics().names().get(20, TimeUnit.SECONDS);
        }
        require(names.containsAll(Set.of("compat-main", "compat-admin")), "listTopics: " + names);
        TopicDescription description =
            admin.describeTopics(List.of("compat-admin")).allTopicNames().get(20, TimeUnit.SECONDS).get("compat-admin");
        require(description.partitions().size() == 3, "partitions: " + description.partitions().size());
        observe("admin.describeTopics.partitions", description.partitions().size());
        return "listTopics and describeTopics agree";
      }
    });

    check("admin: create an existing topic", () -> {
      try {
        createTopic("compat-admin", 1, Map.of());
        throw new IllegalStateException("accepted");
      } catch (ExecutionException error) {
        observe("admin.createTopics.existing", error.getCause().getClass().getSimpleName());
        require(error.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException, "got " + error.getCause());
        return "TopicExistsException";
      }
    });

    check("producer: default settings (idempotence on, acks=all)", () -> {
      // A topic of its own, so that a failure here changes nothing the later scenarios count.
      createTopic("compat-default", 1, Map.of());
      try (KafkaProducer<String, String> producer = producer(Map.of())) {
        List<Long> offsets = produce(producer, "compat-default", 1, 5, baseTimestampMs);
        observe("producer.default.offsets", offsets);
        require(offsets.equals(List.of(0L, 1L, 2L, 3L, 4L)), "offsets " + offsets);
        return "5 records at offsets 0-4";
      }
    });

    check("producer: enable.idempotence=false, acks=all", () -> {
      try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "false"))) {
        List<Long> offsets = produce(producer, "compat-main", 2, 10, baseTimestampMs + 100);
        observe("producer.plain.offsets", offsets);
        return "10 records, offsets " + offsets;
      }
    });

    for (String codec : List.of("gzip", "snappy", "lz4", "zstd")) {
      check("producer: compression.type=" + codec + " (idempotence off)", () -> {
        String topic = "compat-" + codec;
        createTopic(topic, 1, Map.of());
        try (KafkaProducer<String, String> producer =
            producer(Map.of("enable.idempotence", "false", "compression.type", codec))) {
          List<Long> offsets = produce(producer, topic, 1, 20, baseTimestampMs);
          require(offsets.get(19) == 19L, "offsets " + offsets);
        }
        try (KafkaConsumer<String, String> consumer = consumer("compat-" + codec + "-" + run, "c")) {
          consumer.assign(List.of(new TopicPartition(topic, 0)));
          consumer.seek(new TopicPartition(topic, 0), 7);
          List<ConsumerRecord<String, String>> got = pollUntil(consumer, 13);
          ConsumerRecord<String, String> first = got.get(0);
          require(first.offset() == 7 && first.key().equals("key-7") && first.value().equals("value-7"), "first " + first);
          require(first.timestamp() == baseTimestampMs + 7, "timestamp " + first.timestamp());
          require(new String(first.headers().lastHeader("h").value()).equals("header-7"), "header");
          observe("consume." + codec + ".first", first.offset() + " " + first.key() + " " + first.timestamp());
        }
        return "20 records; read back from offset 7 (mid-batch) with key, value, header, timestamp";
      });
    }

    String group = "compat-group-" + run;
    check("consumer group: subscribe, poll, commitSync, committed()", () -> {
      try (KafkaConsumer<String, String> consumer = consumer(group, "first")) {
        mainTotal = 0;
        for (long end : consumer.endOffsets(List.of(new TopicPartition("compat-main", 0), new TopicPartition("compat-main", 1)),
            Duration.ofSeconds(20)).values()) mainTotal += end;
        consumer.subscribe(List.of("compat-main"));
        List<ConsumerRecord<String, String>> got = pollUntil(consumer, (int) mainTotal);
        consumer.commitSync(Duration.ofSeconds(20));
        Set<TopicPartition> partitions = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(partitions, Duration.ofSeconds(20));
        long total = 0;
        for (OffsetAndMetadata offset : committed.values()) total += offset.offset();
        observe("group.committed.total", total);
        require(total == mainTotal, "committed offsets sum to " + total + ": " + committed);
        return got.size() + " records from " + partitions.size() + " partitions, commits sum to " + total;
      }
    });

    check("consumer group: a second member joins, the group rebalances, each resumes from the commit", () -> {
      try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "false"))) {
        produce(producer, "compat-main", 2, 4, baseTimestampMs + 1000);
      }
      try (KafkaConsumer<String, String> a = consumer(group, "a"); KafkaConsumer<String, String> b = consumer(group, "b")) {
        // a alone: both partitions, the 4 records after the commit, committed again.
        a.subscribe(List.of("compat-main"));
        int fromA = 0;
        long deadline = System.currentTimeMillis() + 20_000;
        while ((a.assignment().size() < 2 || fromA < 4) && System.currentTimeMillis() < deadline)
          fromA += a.poll(Duration.ofMillis(200)).count();
        require(a.assignment().size() == 2 && fromA == 4, "a alone has " + a.assignment() + " and read " + fromA);
        a.commitSync(Duration.ofSeconds(20));
        // b joins: one partition each, and nothing is read again.
        b.subscribe(List.of("compat-main"));
        int again = 0;
        deadline = System.currentTimeMillis() + 40_000;
        while ((a.assignment().size() != 1 || b.assignment().size() != 1) && System.currentTimeMillis() < deadline) {
          again += a.poll(Duration.ofMillis(100)).count();
          again += b.poll(Duration.ofMillis(100)).count();
        }
        require(a.assignment().size() == 1 && b.assignment().size() == 1,
            "after b joined: a " + a.assignment() + ", b " + b.assignment());
        try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "false"))) {
          produce(producer, "compat-main", 2, 2, baseTimestampMs + 2000);
        }
        int newA = 0;
        int newB = 0;
        deadline = System.currentTimeMillis() + 10_000;
        while ((newA < 1 || newB < 1) && System.currentTimeMillis() < deadline) {
          newA += a.poll(Duration.ofMillis(100)).count();
          newB += b.poll(Duration.ofMillis(100)).count();
        }
        observe("group.rebalance.records", again + " " + newA + " " + newB);
        require(again == 0 && newA == 1 && newB == 1,
            "after the rebalance " + again + " records were read again; then a read " + newA + " and b " + newB + " of 1 each");
        a.commitSync(Duration.ofSeconds(20));
        b.commitSync(Duration.ofSeconds(20));
        // What an admin may not do to a group with live members.
        try (Admin admin = admin()) {
          observe("error.deleteConsumerGroups.live", errorOf(() -> admin.deleteConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS)));
          observe("error.deleteConsumerGroupOffsets.subscribed", errorOf(() ->
              admin.deleteConsumerGroupOffsets(group, Set.of(new TopicPartition("compat-main", 0))).all().get(20, TimeUnit.SECONDS)));
          observe("describeConsumerGroups.live", describeGroup(admin, group));
        }
        return "a " + a.assignment() + ", b " + b.assignment() + "; nothing read twice, one new record each";
      }
    });

    check("consumer group: static members (group.instance.id) restart without a rebalance; an admin removes one by instance id", () -> {
      createTopic("compat-static", 2, Map.of());
      String staticGroup = "compat-static-" + run;
      // Callbacks on a: every assignment and revocation it is told of, after the first split.
      List<String> aEvents = Collections.synchronizedList(new ArrayList<>());
      ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
          aEvents.add("revoked " + partitions.size());
        }
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
          aEvents.add("assigned " + partitions.size());
        }
      };
      try (KafkaConsumer<String, String> a = consumer(staticGroup, "sa", Map.of("group.instance.id", "static-a"))) {
        a.subscribe(List.of("compat-static"), listener);
        Set<TopicPartition> bHad;
        try (KafkaConsumer<String, String> b = consumer(staticGroup, "sb", Map.of("group.instance.id", "static-b"))) {
          b.subscribe(List.of("compat-static"));
          long deadline = System.currentTimeMillis() + 40_000;
          while ((a.assignment().size() != 1 || b.assignment().size() != 1) && System.currentTimeMillis() < deadline) {
            a.poll(Duration.ofMillis(100));
            b.poll(Duration.ofMillis(100));
          }
          require(a.assignment().size() == 1 && b.assignment().size() == 1, "split: a " + a.assignment() + ", b " + b.assignment());
          bHad = new HashSet<>(b.assignment());
        } // a static member's close sends no LeaveGroup: b keeps its place for its session
        aEvents.clear();
        Set<TopicPartition> b2Has;
        try (KafkaConsumer<String, String> b2 = consumer(staticGroup, "sb", Map.of("group.instance.id", "static-b"))) {
          b2.subscribe(List.of("compat-static"));
          long deadline = System.currentTimeMillis() + 30_000;
          while (b2.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
            a.poll(Duration.ofMillis(100));
            b2.poll(Duration.ofMillis(100));
          }
          for (int i = 0; i < 10; i++) a.poll(Duration.ofMillis(100)); // a would learn of a rebalance here
          b2Has = new HashSet<>(b2.assignment());
        }
        String restart = "b again has its partition: " + b2Has.equals(bHad) + "; a was told: " + aEvents;
        observe("group.static.restart", restart);
        require(b2Has.equals(bHad) && aEvents.isEmpty(), restart);
        // Both incarnations of b are closed, still a member: an admin removes it by instance id.
        try (Admin admin = admin()) {
          admin.removeMembersFromConsumerGroup(staticGroup, new RemoveMembersFromConsumerGroupOptions(
              List.of(new MemberToRemove("static-b")))).all().get(20, TimeUnit.SECONDS);
          observe("group.static.removeUnknown", errorOf(() -> admin.removeMembersFromConsumerGroup(staticGroup,
              new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("nobody")))).all().get(20, TimeUnit.SECONDS)));
        }
        long deadline = System.currentTimeMillis() + 30_000;
        while (a.assignment().size() != 2 && System.currentTimeMillis() < deadline) a.poll(Duration.ofMillis(100));
        require(a.assignment().size() == 2, "after removing static-b, a has " + a.assignment());
        return restart + "; after removing static-b by instance id, a has both partitions";
      }
    });

    check("admin: describeCluster", () -> {
      try (Admin admin = admin()) {
        DescribeClusterResult cluster = admin.describeCluster();
        Collection<Node> nodes = cluster.nodes().get(20, TimeUnit.SECONDS);
        String clusterId = cluster.clusterId().get(20, TimeUnit.SECONDS);
        Node controller = cluster.controller().get(20, TimeUnit.SECONDS);
        require(nodes.size() == 1, "nodes " + nodes);
        return "cluster " + clusterId + ", nodes " + nodes + ", controller " + controller.id();
      }
    });

    check("admin: describeConfigs of a topic", () -> {
      try (Admin admin = admin()) {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "compat-admin");
        Config config = admin.describeConfigs(List.of(resource)).all().get(20, TimeUnit.SECONDS).get(resource);
        ConfigEntry retention = config.get("retention.ms");
        require(retention != null && retention.value().equals("3600000"), "retention.ms " + retention);
        observe("describeConfigs.retention.ms", retention.value() + " " + retention.source());
        observe("describeConfigs.max.message.bytes", config.get("max.message.bytes").value());
        return config.entries().size() + " entries; retention.ms=" + retention.value() + " (" + retention.source() + ")";
      }
    });

    check("admin: incrementalAlterConfigs (SET, DELETE) then describeConfigs", () -> {
      try (Admin admin = admin()) {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "compat-admin");
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE))))
            .all().get(20, TimeUnit.SECONDS);
        Config config = admin.describeConfigs(List.of(resource)).all().get(20, TimeUnit.SECONDS).get(resource);
        require(config.get("retention.ms").value().equals("7200000"), "retention.ms " + config.get("retention.ms"));
        observe("alterConfigs.max.message.bytes", config.get("max.message.bytes").value() + " " + config.get("max.message.bytes").source());
        return "retention.ms=7200000, max.message.bytes back to " + config.get("max.message.bytes").value();
      }
    });

    check("admin: listOffsets earliest, latest, by timestamp", () -> {
      try (Admin admin = admin()) {
        TopicPartition partition = new TopicPartition("compat-gzip", 0);
        long earliest = admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).partitionResult(partition).get(20, TimeUnit.SECONDS).offset();
        long latest = admin.listOffsets(Map.of(partition, OffsetSpec.latest())).partitionResult(partition).get(20, TimeUnit.SECONDS).offset();
        ListOffsetsResult.ListOffsetsResultInfo byTime = admin.listOffsets(Map.of(partition, OffsetSpec.forTimestamp(baseTimestampMs + 5)))
            .partitionResult(partition).get(20, TimeUnit.SECONDS);
        observe("listOffsets", earliest + " " + latest + " " + byTime.offset() + " " + byTime.timestamp());
        require(earliest == 0 && latest == 20 && byTime.offset() == 5, "earliest " + earliest + ", latest " + latest + ", by time " + byTime);
        return "0, 20, and offset 5 for its timestamp";
      }
    });

    check("admin: listConsumerGroups and describeConsumerGroups", () -> {
      try (Admin admin = admin()) {
        Collection<ConsumerGroupListing> groups = admin.listConsumerGroups().all().get(20, TimeUnit.SECONDS);
        boolean listed = groups.stream().anyMatch(listing -> listing.groupId().equals(group));
        require(listed, "listConsumerGroups: " + groups);
        ConsumerGroupDescription description =
            admin.describeConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS).get(group);
        observe("describeConsumerGroups.state", description.groupState());
        return groups.size() + " groups; " + group + " is " + description.groupState();
      }
    });

    check("admin: listConsumerGroupOffsets", () -> {
      try (Admin admin = admin()) {
        Map<TopicPartition, OffsetAndMetadata> offsets =
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
        long total = 0;
        for (OffsetAndMetadata offset : offsets.values()) total += offset.offset();
        observe("listConsumerGroupOffsets.total", total);
        require(total == mainTotal + 6, "offsets sum to " + total + ", not " + (mainTotal + 6) + ": " + offsets);
        return offsets.size() + " partitions, offsets sum to " + total;
      }
    });

    check("admin: deleteConsumerGroupOffsets", () -> {
      try (Admin admin = admin()) {
        TopicPartition partition = new TopicPartition("compat-main", 1);
        admin.deleteConsumerGroupOffsets(group, Set.of(partition)).all().get(20, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetAndMetadata> offsets =
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
        require(offsets.get(partition) == null, "still committed: " + offsets);
        return "compat-main/1 no longer committed; left " + offsets.keySet();
      }
    });

    check("admin: deleteConsumerGroups", () -> {
      try (Admin admin = admin()) {
        admin.deleteConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS);
        try {
          admin.deleteConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS);
          throw new IllegalStateException("deleted twice");
        } catch (ExecutionException error) {
          observe("deleteConsumerGroups.again", error.getCause().getClass().getSimpleName());
          return "deleted; again: " + error.getCause().getClass().getSimpleName();
        }
      }
    });

    check("admin: deleteRecords", () -> {
      try (Admin admin = admin()) {
        TopicPartition partition = new TopicPartition("compat-snappy", 0);
        long low = admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(10))).lowWatermarks().get(partition)
            .get(20, TimeUnit.SECONDS).lowWatermark();
        long earliest = admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).partitionResult(partition).get(20, TimeUnit.SECONDS).offset();
        observe("deleteRecords", low + " " + earliest);
        require(earliest == 10, "earliest after deleteRecords(10) is " + earliest);
        return "low watermark " + low + ", earliest " + earliest;
      }
    });

    check("refusals: the exception each wrong request ends in (compared by the differential run)", () -> {
      try (Admin admin = admin()) {
        observe("error.createTopics.replicationFactor3", errorOf(() ->
            admin.createTopics(List.of(new NewTopic("compat-rf3", 1, (short) 3))).all().get(20, TimeUnit.SECONDS)));
        observe("error.createTopics.badName", errorOf(() ->
            admin.createTopics(List.of(new NewTopic("bad name!", 1, (short) 1))).all().get(20, TimeUnit.SECONDS)));
        observe("error.createTopics.badConfig", errorOf(() ->
            admin.createTopics(List.of(new NewTopic("compat-bad-config", 1, (short) 1).configs(Map.of("no.such.config", "1"))))
                .all().get(20, TimeUnit.SECONDS)));
        observe("error.createPartitions.fewer", errorOf(() ->
            admin.createPartitions(Map.of("compat-main", NewPartitions.increaseTo(1))).all().get(20, TimeUnit.SECONDS)));
        createTopic("compat-grow", 1, Map.of());
        observe("createPartitions.increaseTo3", errorOf(() ->
            admin.createPartitions(Map.of("compat-grow", NewPartitions.increaseTo(3))).all().get(20, TimeUnit.SECONDS)));
        observe("createPartitions.described", admin.describeTopics(List.of("compat-grow")).allTopicNames()
            .get(20, TimeUnit.SECONDS).get("compat-grow").partitions().size());
        observe("error.describeConfigs.unknownTopic", errorOf(() -> admin.describeConfigs(
            List.of(new ConfigResource(ConfigResource.Type.TOPIC, "compat-missing"))).all().get(20, TimeUnit.SECONDS)));
        observe("error.describeConfigs.broker", errorOf(() -> admin.describeConfigs(
            List.of(new ConfigResource(ConfigResource.Type.BROKER, "1"))).all().get(20, TimeUnit.SECONDS)));
        observe("error.alterConfigs.unknownName", errorOf(() -> admin.incrementalAlterConfigs(Map.of(
            new ConfigResource(ConfigResource.Type.TOPIC, "compat-main"),
            List.of(new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get(20, TimeUnit.SECONDS)));
        observe("error.describeTopics.unknown", errorOf(() ->
            admin.describeTopics(List.of("compat-missing")).allTopicNames().get(20, TimeUnit.SECONDS)));
        observe("error.deleteTopics.unknown", errorOf(() -> admin.deleteTopics(List.of("compat-missing")).all().get(20, TimeUnit.SECONDS)));
        observe("describeConsumerGroups.unknown", errorOf(() -> describeGroup(admin, "compat-no-such-group")) + " "
            + (errorOf(() -> describeGroup(admin, "compat-no-such-group")).equals("ok") ? describeGroup(admin, "compat-no-such-group") : ""));
        TopicPartition gzip = new TopicPartition("compat-gzip", 0);
        ListOffsetsResult.ListOffsetsResultInfo future = admin.listOffsets(Map.of(gzip, OffsetSpec.forTimestamp(baseTimestampMs + 1_000_000)))
            .partitionResult(gzip).get(20, TimeUnit.SECONDS);
        observe("listOffsets.afterLastTimestamp", future.offset() + " " + future.timestamp());
        Call max = () -> {
          ListOffsetsResult.ListOffsetsResultInfo info =
              admin.listOffsets(Map.of(gzip, OffsetSpec.maxTimestamp())).partitionResult(gzip).get(20, TimeUnit.SECONDS);
          observe("listOffsets.maxTimestamp.answer", info.offset() + " " + info.timestamp());
          return info;
        };
        observe("listOffsets.maxTimestamp", errorOf(max));
        // ListOffsets v8 (earliest local, KIP-405) and v9 (latest tiered, KIP-1005) on a broker
        // without tiered storage.
        for (Map.Entry<String, OffsetSpec> spec : Map.of("earliestLocal", OffsetSpec.earliestLocal(),
            "latestTiered", OffsetSpec.latestTiered()).entrySet()) {
          Call call = () -> {
            ListOffsetsResult.ListOffsetsResultInfo info =
                admin.listOffsets(Map.of(gzip, spec.getValue())).partitionResult(gzip).get(20, TimeUnit.SECONDS);
            observe("listOffsets." + spec.getKey() + ".answer", info.offset() + " " + info.timestamp() + " " + info.leaderEpoch());
            return info;
          };
          observe("listOffsets." + spec.getKey(), errorOf(call));
        }
      }
      createTopic("compat-small", 1, Map.of("max.message.bytes", "1000"));
      try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "false"))) {
        observe("error.produce.tooLarge", errorOf(() ->
            producer.send(new ProducerRecord<>("compat-small", 0, null, "x".repeat(5000))).get(20, TimeUnit.SECONDS)));
      }
      try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "false", "max.block.ms", "3000"))) {
        observe("error.produce.unknownTopic", errorOf(() ->
            producer.send(new ProducerRecord<>("compat-missing", 0, null, "x")).get(20, TimeUnit.SECONDS)));
      }
      Properties props = common();
      props.put("key.deserializer", StringDeserializer.class.getName());
      props.put("value.deserializer", StringDeserializer.class.getName());
      props.put("auto.offset.reset", "none");
      try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
        TopicPartition gzip = new TopicPartition("compat-gzip", 0);
        consumer.assign(List.of(gzip));
        consumer.seek(gzip, 1000);
        observe("error.fetch.beyondEnd", errorOf(() -> {
          long deadline = System.currentTimeMillis() + 10_000;
          while (System.currentTimeMillis() < deadline) consumer.poll(Duration.ofMillis(200));
          return null;
        }));
      }
      return "every call ended (see the OBSERVE lines)";
    });

    check("LogAppendTime topic: the broker's time replaces the producer's", () -> {
      createTopic("compat-append-time", 1, Map.of("message.timestamp.type", "LogAppendTime"));
      long before = System.currentTimeMillis();
      try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "false"))) {
        RecordMetadata metadata = producer.send(new ProducerRecord<>("compat-append-time", 0, baseTimestampMs, "k", "v")).get(20, TimeUnit.SECONDS);
        observe("appendTime.produceResponse", metadata.timestamp() >= before ? "broker time" : "other: " + metadata.timestamp());
      }
      try (KafkaConsumer<String, String> consumer = consumer("compat-append-time-" + run, "c")) {
        TopicPartition partition = new TopicPartition("compat-append-time", 0);
        consumer.assign(List.of(partition));
        consumer.seekToBeginning(List.of(partition));
        ConsumerRecord<String, String> record = pollUntil(consumer, 1).get(0);
        observe("appendTime.consumed", record.timestampType() + " " + (record.timestamp() >= before ? "broker time" : "other: " + record.timestamp()));
        require(record.timestampType() == org.apache.kafka.common.record.TimestampType.LOG_APPEND_TIME && record.timestamp() >= before,
            record.timestampType() + " " + record.timestamp());
        return "LogAppendTime, the broker's clock, in the produce response and the fetched record";
      }
    });

    check("admin: deleteTopics", () -> {
      try (Admin admin = admin()) {
        // A group's commit on the topic: Kafka deletes it with the topic (onPartitionsDeleted), so a
        // topic created again under the name does not start the group at the old offset.
        String committedGroup = "compat-deleted-topic-group";
        TopicPartition first = new TopicPartition("compat-admin", 0);
        admin.alterConsumerGroupOffsets(committedGroup, Map.of(first, new OffsetAndMetadata(0))).all()
            .get(20, TimeUnit.SECONDS);
        admin.deleteTopics(List.of("compat-admin")).all().get(30, TimeUnit.SECONDS);
        long deadline = System.currentTimeMillis() + 10_000;
        Set<String> names;
        do names = admin.listTopics().names().get(20, TimeUnit.SECONDS);
        while (names.contains("compat-admin") && System.currentTimeMillis() < deadline);
        require(!names.contains("compat-admin"), "still listed");
        // Kafka removes them once the deletion reaches its coordinator: wait up to 10 s.
        Map<TopicPartition, OffsetAndMetadata> left;
        long commitDeadline = System.currentTimeMillis() + 10_000;
        while (true) {
          left = admin.listConsumerGroupOffsets(committedGroup).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
          if (!left.containsKey(first) || System.currentTimeMillis() > commitDeadline) break;
          Thread.sleep(100);
        }
        observe("deleteTopics.committedOffsets", left.containsKey(first) ? "kept at " + left.get(first).offset() : "deleted");
        return "gone from listTopics; the group's commit on it " + (left.containsKey(first) ? "kept" : "deleted");
      }
    });

    int failed = 0;
    System.out.println();
    System.out.printf("%-80s %-5s %s%n", "scenario", "", "reason");
    for (String[] result : results) {
      System.out.printf("%-80s %-5s %s%n", result[0], result[1], result[2]);
      if (result[1].equals("FAIL")) failed++;
    }
    System.out.println((results.size() - failed) + " passed, " + failed + " failed");
    System.exit(0);
  }
}
