// End-to-end latency for bench/kafka-peers.bench.ts: Kafka's own tool
// (org.apache.kafka.tools.EndToEndLatency, 4.1) measured to the microsecond. That tool keeps each
// latency as whole milliseconds (elapsed / 1000 / 1000) and prints p50/p99/p99.9 as integers, so on
// loopback every figure reads 0 or 1 and says nothing. This is the same measurement otherwise:
// one producer (linger.ms=0, acks as given, the client's defaults otherwise: idempotent) and one
// consumer (assigned partition 0, positioned at the end, fetch.max.wait.ms=0, no group commits) in
// one process; for each record, send it, wait for the acknowledgement, then poll until the record
// comes back; the time from before send() to the poll's return is one sample. Records are N bytes
// of one seeded random letter each, as EndToEndLatency makes them. A warm-up of W records is not
// counted. The topic must exist.
//
// Usage: java -cp '<kafka jars>/*' EndToEndLatencyMicros.java <bootstrap> <topic> <records> <acks> <size> <warmup>
// Prints one line: `E2E records=<n> p50_us=<..> p99_us=<..> p999_us=<..> max_us=<..> mean_us=<..>`.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class EndToEndLatencyMicros {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int records = Integer.parseInt(args[2]);
    String acks = args[3];
    int size = Integer.parseInt(args[4]);
    int warmup = Integer.parseInt(args[5]);

    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("linger.ms", "0");
    p.put("acks", acks);
    p.put("max.block.ms", "60000");
    Properties c = new Properties();
    c.put("bootstrap.servers", bootstrap);
    c.put("group.id", "e2e-" + System.currentTimeMillis());
    c.put("enable.auto.commit", "false");
    c.put("auto.offset.reset", "latest");
    c.put("fetch.max.wait.ms", "0");

    Random random = new Random(0);
    long[] samples = new long[records];
    try (KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        KafkaConsumer<byte[], byte[]> consumer =
            new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition partition = new TopicPartition(topic, 0);
      consumer.assign(List.of(partition));
      consumer.seekToEnd(List.of(partition));
      consumer.position(partition);
      for (int i = 0; i < warmup + records; i++) {
        byte[] value = new byte[size];
        Arrays.fill(value, (byte) (random.nextInt(26) + 65));
        long begin = System.nanoTime();
        producer.send(new ProducerRecord<>(topic, value)).get();
        ConsumerRecords<byte[], byte[]> got = ConsumerRecords.empty();
        while (got.isEmpty()) {
          got = consumer.poll(Duration.ofMillis(60_000));
          if (got.isEmpty() && System.nanoTime() - begin > 60_000_000_000L) {
            throw new RuntimeException("no record within 60 s at record " + i);
          }
        }
        long elapsed = System.nanoTime() - begin;
        if (got.count() != 1 || !Arrays.equals(got.iterator().next().value(), value)) {
          throw new RuntimeException("expected the one record just sent, got " + got.count() + " records");
        }
        if (i >= warmup) samples[i - warmup] = elapsed;
      }
    }
    long total = 0;
    for (long s : samples) total += s;
    Arrays.sort(samples);
    System.out.printf(
        "E2E records=%d p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f mean_us=%.1f%n",
        records,
        samples[(int) (records * 0.5)] / 1e3,
        samples[(int) (records * 0.99)] / 1e3,
        samples[(int) (records * 0.999)] / 1e3,
        samples[records - 1] / 1e3,
        total / (double) records / 1e3);
  }
}
