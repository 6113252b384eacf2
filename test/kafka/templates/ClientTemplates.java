// The Java side of test/kafka/capture-client-templates.ts (the fuzzer's templates). Two modes:
//
//   capture <bootstrap> <sasl bootstrap>
//     A kafka-clients 4.1.1 session that uses every API the Java AdminClient, producer and consumer
//     send to booblik, at the highest version both sides support (what a Java user's requests look
//     like). The TypeScript side records the frames through a proxy. Topic names start with `tpl-`,
//     group names with `tpl` (see capture-fuzz-templates.ts). The second bootstrap is a broker with
//     users: an idempotent producer logs in with SCRAM-SHA-256 (SaslHandshake, SaslAuthenticate).
//
//   reencode
//     stdin: lines `<target version> <hex of a request frame without its size>`; stdout: one line
//     each, the same request written at the target version by Kafka's own generated message classes
//     (the request header too), or `ERR <reason>` when a field the frame sets has no place in that
//     version. This gives frames of the versions no client here sends (Fetch 0-10, Produce 0-7, ...)
//     with the values a real client chose.
//
// Every client call has a timeout: the program never waits without a bound.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.acl.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.RequestUtils;
import org.apache.kafka.common.resource.*;
import org.apache.kafka.common.serialization.*;

public class ClientTemplates {
  static final long T = 15;

  public static void main(String[] args) throws Exception {
    if (args[0].equals("reencode")) reencode();
    else capture(args[1], args[2]);
  }

  static void reencode() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) continue;
      String[] parts = line.trim().split(" ");
      short to = Short.parseShort(parts[0]);
      try {
        ByteBuffer buf = ByteBuffer.wrap(HexFormat.of().parseHex(parts[1]));
        short from = buf.getShort(2);
        ApiKeys api = ApiKeys.forId(buf.getShort(0));
        // Kafka 4.x dropped old versions of many APIs (KIP-896): its classes would write another
        // version's layout without complaint. Those are hand-built on the TypeScript side.
        if (!api.isVersionSupported(to) || !api.isVersionSupported(from))
          throw new IllegalArgumentException(api + " v" + to + " is outside kafka-clients' versions " + api.oldestVersion() + "-" + api.latestVersion());
        RequestHeader header = RequestHeader.parse(buf);
        ApiMessage message = ApiMessageType.fromApiKey(header.apiKey().id).newRequest();
        message.read(new ByteBufferAccessor(buf), from);
        RequestHeader target = new RequestHeader(header.apiKey(), to, header.clientId(), header.correlationId());
        ByteBuffer out = RequestUtils.serialize(target.data(), target.headerVersion(), message, to);
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        System.out.println(HexFormat.of().formatHex(bytes));
      } catch (Exception error) {
        System.out.println("ERR " + error.getClass().getSimpleName() + ": " + String.valueOf(error.getMessage()).replace('\n', ' '));
      }
    }
  }

  static Properties common(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", "tpl-java");
    p.put("request.timeout.ms", "15000");
    p.put("default.api.timeout.ms", "20000");
    return p;
  }

  static void capture(String bootstrap, String saslBootstrap) throws Exception {
    try (Admin admin = Admin.create(common(bootstrap))) {
      admin.createTopics(List.of(
          new NewTopic("tpl-a", 2, (short) 1).configs(Map.of("retention.ms", "60000")),
          new NewTopic("tpl-b", 1, (short) 1))).all().get(T, TimeUnit.SECONDS);
      admin.createPartitions(Map.of("tpl-b", NewPartitions.increaseTo(2))).all().get(T, TimeUnit.SECONDS);
      admin.describeTopics(List.of("tpl-a")).allTopicNames().get(T, TimeUnit.SECONDS);
      admin.describeConfigs(List.of(
          new ConfigResource(ConfigResource.Type.TOPIC, "tpl-a"),
          new ConfigResource(ConfigResource.Type.BROKER, "1")),
          new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true)).all().get(T, TimeUnit.SECONDS);
      admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "tpl-a"),
          List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "120000"), AlterConfigOp.OpType.SET))))
          .all().get(T, TimeUnit.SECONDS);
      admin.describeCluster().nodes().get(T, TimeUnit.SECONDS);
      admin.describeLogDirs(List.of(1)).allDescriptions().get(T, TimeUnit.SECONDS);
      admin.electLeaders(ElectionType.PREFERRED, Set.of(new TopicPartition("tpl-a", 0))).partitions().get(T, TimeUnit.SECONDS);

      try (Producer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
        for (int i = 0; i < 4; i++)
          producer.send(new ProducerRecord<>("tpl-a", i % 2, "k" + i, "v" + i)).get(T, TimeUnit.SECONDS);
      }
      admin.listOffsets(Map.of(
          new TopicPartition("tpl-a", 0), OffsetSpec.latest(),
          new TopicPartition("tpl-a", 1), OffsetSpec.maxTimestamp())).all().get(T, TimeUnit.SECONDS);
      admin.listOffsets(Map.of(new TopicPartition("tpl-a", 0), OffsetSpec.forTimestamp(1_700_000_000_000L)),
          new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get(T, TimeUnit.SECONDS);

      Properties c = common(bootstrap);
      c.put("group.id", "tpl-java-group");
      c.put("auto.offset.reset", "earliest");
      c.put("enable.auto.commit", "false");
      c.put("heartbeat.interval.ms", "100");
      // A JoinGroup re-encoded from this member's waits for it to rejoin (the rebalance timeout,
      // max.poll.interval.ms) when the capture script checks it: short, so that the check is.
      c.put("session.timeout.ms", "6000");
      c.put("max.poll.interval.ms", "6000");
      c.put("key.deserializer", StringDeserializer.class.getName());
      c.put("value.deserializer", StringDeserializer.class.getName());
      try (Consumer<String, String> consumer = new KafkaConsumer<>(c)) {
        consumer.subscribe(List.of("tpl-a"));
        int seen = 0;
        long deadline = System.currentTimeMillis() + 30_000;
        while (seen < 4 && System.currentTimeMillis() < deadline) seen += consumer.poll(Duration.ofMillis(200)).count();
        if (seen < 4) throw new IllegalStateException("the consumer saw " + seen + " records");
        // Long enough for a few heartbeats (every 100 ms) and an empty Fetch.
        long until = System.currentTimeMillis() + 700;
        while (System.currentTimeMillis() < until) consumer.poll(Duration.ofMillis(100));
        consumer.commitSync(Duration.ofSeconds(T));
        consumer.committed(Set.of(new TopicPartition("tpl-a", 0)), Duration.ofSeconds(T));
      }
      admin.listGroups().all().get(T, TimeUnit.SECONDS);
      admin.describeConsumerGroups(List.of("tpl-java-group")).all().get(T, TimeUnit.SECONDS);
      admin.listConsumerGroupOffsets("tpl-java-group").partitionsToOffsetAndMetadata().get(T, TimeUnit.SECONDS);
      admin.alterConsumerGroupOffsets("tpl-java-group", Map.of(new TopicPartition("tpl-a", 1), new OffsetAndMetadata(1, "meta")))
          .all().get(T, TimeUnit.SECONDS);
      admin.deleteConsumerGroupOffsets("tpl-java-group", Set.of(new TopicPartition("tpl-a", 1))).all().get(T, TimeUnit.SECONDS);
      admin.deleteRecords(Map.of(new TopicPartition("tpl-a", 0), RecordsToDelete.beforeOffset(1))).all().get(T, TimeUnit.SECONDS);

      AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "tpl-", PatternType.PREFIXED),
          new AccessControlEntry("User:tpl", "*", AclOperation.READ, AclPermissionType.ALLOW));
      admin.createAcls(List.of(acl)).all().get(T, TimeUnit.SECONDS);
      admin.describeAcls(AclBindingFilter.ANY).values().get(T, TimeUnit.SECONDS);
      admin.deleteAcls(List.of(acl.toFilter())).all().get(T, TimeUnit.SECONDS);
      admin.deleteConsumerGroups(List.of("tpl-java-group")).all().get(T, TimeUnit.SECONDS);
      admin.deleteTopics(List.of("tpl-b")).all().get(T, TimeUnit.SECONDS);
    }

    Properties sasl = producerProps(saslBootstrap);
    sasl.put("security.protocol", "SASL_PLAINTEXT");
    sasl.put("sasl.mechanism", "SCRAM-SHA-256");
    sasl.put("sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"tpl\" password=\"tpl-password\";");
    try (Producer<String, String> producer = new KafkaProducer<>(sasl)) {
      producer.send(new ProducerRecord<>("tpl-a", 0, "k", "v")).get(T, TimeUnit.SECONDS);
    }
    System.out.println("capture done");
  }

  static Properties producerProps(String bootstrap) {
    Properties p = common(bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("enable.idempotence", "true");
    p.put("acks", "all");
    p.put("linger.ms", "0");
    p.put("compression.type", "lz4");
    p.put("max.block.ms", "20000");
    return p;
  }
}
