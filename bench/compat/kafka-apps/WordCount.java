import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The Kafka Streams word count of `bun run compat:apps` (bench/compat/apps.ts): lines from an input
 * topic, split into lower-case words, grouped by word (a repartition topic), counted in the state
 * store `counts` (its changelog is a compacted topic), the counts written to the output topic as
 * String keys and Long values. Everything else is Kafka Streams' default (processing.guarantee
 * at_least_once, replication.factor -1: the broker's default) but the commit interval (1 s instead
 * of 30 s, so that counts appear quickly).
 *
 * Usage: WordCount <bootstrap> <application.id> <input> <output> <state.dir> [processing.guarantee]
 * (the last one at_least_once unless given: exactly_once_v2 tries Kafka's transactions)
 *
 * Prints one line per event on stdout, read by apps.ts: `STATE <old> <new>`, `RESTORE-START
 * <topic-partition> <store> <start> <end>`, `RESTORED <topic-partition> <store> <records>`,
 * `UNCAUGHT <exception>`, `CLOSED <true|false>`. Stops on SIGTERM: closes the application with
 * KafkaStreams.close(Duration), as Kafka Streams' documentation shows, then exits. Kafka Streams
 * does not send LeaveGroup on close (internal.leave.group.on.close=false), so the next start waits
 * in JoinGroup until the coordinator drops the old member (session.timeout.ms, 45 s).
 */
public final class WordCount {
  private static synchronized void event(String line) {
    System.out.println(line);
    System.out.flush();
  }

  public static void main(String[] args) throws InterruptedException {
    String bootstrap = args[0];
    String applicationId = args[1];
    String input = args[2];
    String output = args[3];
    String stateDir = args[4];

    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1000);
    if (args.length > 5) props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);

    StreamsBuilder builder = new StreamsBuilder();
    KStream<String, String> lines = builder.stream(input);
    lines
        .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
        .filter((key, word) -> !word.isEmpty())
        .groupBy((key, word) -> word)
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"))
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));

    KafkaStreams streams = new KafkaStreams(builder.build(), props);
    streams.setStateListener((now, before) -> event("STATE " + before + " " + now));
    streams.setGlobalStateRestoreListener(
        new StateRestoreListener() {
          @Override
          public void onRestoreStart(TopicPartition partition, String store, long start, long end) {
            event("RESTORE-START " + partition + " " + store + " " + start + " " + end);
          }

          @Override
          public void onBatchRestored(TopicPartition partition, String store, long end, long count) {}

          @Override
          public void onRestoreEnd(TopicPartition partition, String store, long total) {
            event("RESTORED " + partition + " " + store + " " + total);
          }
        });
    streams.setUncaughtExceptionHandler(
        exception -> {
          event("UNCAUGHT " + exception.toString().replace('\n', ' '));
          return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
    CountDownLatch closed = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  boolean clean = streams.close(Duration.ofSeconds(60));
                  event("CLOSED " + clean);
                  closed.countDown();
                }));
    streams.start();
    closed.await();
  }
}
