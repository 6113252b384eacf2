// IBM/sarama's scenarios, run with config.Version at its default (V2_8_0_0) or at the newest
// constant it has (sarama.MaxVersion): Sarama builds each request at the version that
// config.Version allows and then clamps it to the range the broker advertised in ApiVersions
// (restrictApiVersion, api_versions.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

type recordingDialer struct{ d net.Dialer }

func (r *recordingDialer) Dial(network, address string) (net.Conn, error) {
	return wrapConn(r.d.Dial(network, address))
}

func (r *recordingDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return wrapConn(r.d.DialContext(ctx, network, address))
}

var saramaVersion = sarama.DefaultVersion

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = saramaVersion
	c.ClientID = "booblik-compat-sarama"
	c.Net.Proxy.Enable = true
	c.Net.Proxy.Dialer = &recordingDialer{d: net.Dialer{Timeout: 10 * time.Second}}
	c.Metadata.Retry.Max = 10
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	return c
}

// storedBatch: what a raw Fetch v4 shows of one stored batch.
type storedBatch struct {
	firstOffset   int64
	count         int
	codec         sarama.CompressionCodec
	producerID    int64
	firstSequence int32
}

// storedBatches reads a partition's batches with a Fetch v4 of its own (Sarama's Broker, with
// the version pinned), so that the codec and producer id the broker keeps are seen.
func storedBatches(bootstrap, topic string, partition int32) ([]storedBatch, error) {
	c := sarama.NewConfig()
	c.Version = sarama.V1_0_0_0
	c.ApiVersionsRequest = false
	b := sarama.NewBroker(bootstrap)
	if err := b.Open(c); err != nil {
		return nil, err
	}
	defer b.Close()
	var out []storedBatch
	next := int64(0)
	for range 100 {
		req := &sarama.FetchRequest{Version: 4, MaxWaitTime: 100, MinBytes: 1, MaxBytes: 16 << 20}
		req.AddBlock(topic, partition, next, 16<<20, -1)
		resp, err := b.Fetch(req)
		if err != nil {
			return nil, err
		}
		block := resp.GetBlock(topic, partition)
		if block == nil {
			return nil, failf("no block for %s/%d", topic, partition)
		}
		if block.Err != sarama.ErrNoError {
			return nil, block.Err
		}
		progressed := false
		for _, records := range block.RecordsSet {
			batch := records.RecordBatch
			if batch == nil || batch.FirstOffset < next {
				continue
			}
			out = append(out, storedBatch{batch.FirstOffset, len(batch.Records), batch.Codec, batch.ProducerID, batch.FirstSequence})
			next = batch.FirstOffset + int64(batch.LastOffsetDelta) + 1
			progressed = true
		}
		if !progressed || next >= block.HighWaterMarkOffset {
			break
		}
	}
	return out, nil
}

func toSaramaMessage(topic string, r rec) *sarama.ProducerMessage {
	headers := make([]sarama.RecordHeader, len(r.headers))
	for i, h := range r.headers {
		headers[i] = sarama.RecordHeader{Key: []byte(h.key), Value: []byte(h.value)}
	}
	return &sarama.ProducerMessage{
		Topic:     topic,
		Partition: r.partition,
		Key:       sarama.ByteEncoder(r.key),
		Value:     sarama.ByteEncoder(r.value),
		Headers:   headers,
		Timestamp: time.UnixMilli(r.tsMs),
	}
}

func fromSaramaMessage(m *sarama.ConsumerMessage) rec {
	headers := make([]header, len(m.Headers))
	for i, h := range m.Headers {
		headers[i] = header{string(h.Key), string(h.Value)}
	}
	return rec{partition: m.Partition, key: m.Key, value: m.Value, headers: headers, tsMs: m.Timestamp.UnixMilli()}
}

func saramaAdmin(bootstrap string) (sarama.ClusterAdmin, error) {
	return sarama.NewClusterAdmin([]string{bootstrap}, saramaConfig())
}

func saramaCreateTopic(bootstrap, topic string, partitions int32) error {
	admin, err := saramaAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("CreateTopic %s: %w", topic, err)
	}
	// Kafka creates a topic asynchronously: wait until its metadata lists every partition.
	return waitFor("the topic's partitions in the metadata", func() bool {
		meta, err := admin.DescribeTopics([]string{topic})
		return err == nil && len(meta) == 1 && meta[0].Err == sarama.ErrNoError && len(meta[0].Partitions) == int(partitions)
	})
}

// consumeExactly reads `count` records from each listed partition starting at `from`, with
// Sarama's partition consumer, and fails if more arrive within a short while.
func consumeExactly(bootstrap, topic string, from map[int32]int64, count map[int32]int, tune ...func(*sarama.Config)) (map[at]rec, error) {
	c := saramaConfig()
	for _, f := range tune {
		f(c)
	}
	consumer, err := sarama.NewConsumer([]string{bootstrap}, c)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	got := map[at]rec{}
	for partition, offset := range from {
		pc, err := consumer.ConsumePartition(topic, partition, offset)
		if err != nil {
			return nil, fmt.Errorf("ConsumePartition %d at %d: %w", partition, offset, err)
		}
		deadline := time.After(waitMax)
		for n := 0; n < count[partition]; n++ {
			select {
			case m := <-pc.Messages():
				got[at{m.Partition, m.Offset}] = fromSaramaMessage(m)
			case e := <-pc.Errors():
				pc.Close()
				return nil, e
			case <-deadline:
				pc.Close()
				return nil, failf("partition %d: %d of %d records within %s", partition, n, count[partition], waitMax)
			}
		}
		select {
		case m := <-pc.Messages():
			pc.Close()
			return nil, failf("partition %d: a record beyond the expected ones at offset %d", partition, m.Offset)
		case <-time.After(500 * time.Millisecond):
		}
		pc.Close()
	}
	return got, nil
}

var codecs = []struct {
	name  string
	codec sarama.CompressionCodec
}{
	{"none", sarama.CompressionNone},
	{"gzip", sarama.CompressionGZIP},
	{"snappy", sarama.CompressionSnappy},
	{"lz4", sarama.CompressionLZ4},
	{"zstd", sarama.CompressionZSTD},
}

func registerSarama(bootstrap string, newest bool) {
	if newest {
		saramaVersion = sarama.MaxVersion
	}
	if os.Getenv("COMPAT_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Ltime|log.Lmicroseconds)
		sarama.DebugLogger = sarama.Logger
	}
	fmt.Printf("VERSION IBM/sarama v1.61.1, config.Version %s\n", saramaVersion)
	label := "sarama"

	register(label+": metadata (Client: brokers, controller, partitions, leader, replicas, ISR)", func() (string, error) {
		topic := topicName("sm-meta")
		if err := saramaCreateTopic(bootstrap, topic, 3); err != nil {
			return "", err
		}
		client, err := sarama.NewClient([]string{bootstrap}, saramaConfig())
		if err != nil {
			return "", err
		}
		defer client.Close()
		brokers := client.Brokers()
		if len(brokers) != 1 || brokers[0].Addr() != bootstrap || brokers[0].ID() != 1 {
			return "", failf("brokers: %d, first %s id %d", len(brokers), brokers[0].Addr(), brokers[0].ID())
		}
		controller, err := client.Controller()
		if err != nil {
			return "", fmt.Errorf("Controller: %w", err)
		}
		partitions, err := client.Partitions(topic)
		if err != nil || len(partitions) != 3 {
			return "", failf("Partitions: %v %v", partitions, err)
		}
		for _, p := range partitions {
			leader, err := client.Leader(topic, p)
			if err != nil || leader.ID() != 1 {
				return "", failf("Leader %d: %v", p, err)
			}
			replicas, _ := client.Replicas(topic, p)
			isr, _ := client.InSyncReplicas(topic, p)
			if fmt.Sprint(replicas) != "[1]" || fmt.Sprint(isr) != "[1]" {
				return "", failf("partition %d replicas %v isr %v", p, replicas, isr)
			}
		}
		return fmt.Sprintf("broker 1 at %s, controller %d, 3 partitions led by 1, replicas and ISR [1]", bootstrap, controller.ID()), nil
	})

	register(label+": admin CreateTopic (retention.ms), again, DescribeConfig, ListTopics, DeleteTopic", func() (string, error) {
		topic := topicName("sm-admin")
		admin, err := saramaAdmin(bootstrap)
		if err != nil {
			return "", err
		}
		defer admin.Close()
		retention := "3600000"
		detail := &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: map[string]*string{"retention.ms": &retention}}
		if err := admin.CreateTopic(topic, detail, false); err != nil {
			return "", fmt.Errorf("CreateTopic: %w", err)
		}
		again := admin.CreateTopic(topic, detail, false)
		if !errors.Is(again, sarama.ErrTopicAlreadyExists) {
			return "", failf("CreateTopic again: %v, not ErrTopicAlreadyExists", again)
		}
		var entries []sarama.ConfigEntry
		var describeErr error
		if err := waitFor("DescribeConfig of the new topic", func() bool {
			entries, describeErr = admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
			return describeErr == nil
		}); err != nil {
			return "", fmt.Errorf("%w: %v", err, describeErr)
		}
		var found *sarama.ConfigEntry
		for i := range entries {
			if entries[i].Name == "retention.ms" {
				found = &entries[i]
			}
		}
		if found == nil || found.Value != retention || found.Source != sarama.SourceTopic {
			return "", failf("retention.ms entry: %+v", found)
		}
		observe("sarama DescribeConfig entries", len(entries))
		topics, err := admin.ListTopics()
		if err != nil {
			return "", fmt.Errorf("ListTopics: %w", err)
		}
		if topics[topic].NumPartitions != 3 || topics[topic].ConfigEntries["retention.ms"] == nil || *topics[topic].ConfigEntries["retention.ms"] != retention {
			return "", failf("ListTopics: %+v", topics[topic])
		}
		if err := admin.DeleteTopic(topic); err != nil {
			return "", fmt.Errorf("DeleteTopic: %w", err)
		}
		if err := waitFor("the topic gone from ListTopics", func() bool {
			topics, err := admin.ListTopics()
			_, there := topics[topic]
			return err == nil && !there
		}); err != nil {
			return "", err
		}
		return fmt.Sprintf("created; again ErrTopicAlreadyExists; %d config entries, retention.ms=%s source %s; ListTopics shows its config; deleted", len(entries), found.Value, found.Source), nil
	})

	for _, codec := range codecs {
		register(label+": SyncProducer idempotent, compression "+codec.name+", consumed from oldest and from offset 1", func() (string, error) {
			topic := topicName("sm-sync-" + codec.name)
			if err := saramaCreateTopic(bootstrap, topic, 3); err != nil {
				return "", err
			}
			c := saramaConfig()
			c.Producer.Idempotent = true
			c.Producer.RequiredAcks = sarama.WaitForAll
			c.Net.MaxOpenRequests = 1
			c.Producer.Return.Successes = true
			c.Producer.Compression = codec.codec
			c.Producer.Partitioner = sarama.NewManualPartitioner
			producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
			if err != nil {
				return "", fmt.Errorf("NewSyncProducer: %w", err)
			}
			records := makeRecords(codec.name, 30, 3)
			expected := map[at]rec{}
			for _, half := range [][]rec{records[:15], records[15:]} {
				msgs := make([]*sarama.ProducerMessage, len(half))
				for i, r := range half {
					msgs[i] = toSaramaMessage(topic, r)
				}
				if err := producer.SendMessages(msgs); err != nil {
					producer.Close()
					return "", fmt.Errorf("SendMessages: %w", err)
				}
				for i, m := range msgs {
					expected[at{m.Partition, m.Offset}] = half[i]
				}
			}
			producer.Close()
			for p := range int32(3) {
				for o := range int64(10) {
					if _, ok := expected[at{p, o}]; !ok {
						return "", failf("acknowledged offsets are not 0..9 on each partition: %v", keysOf(expected))
					}
				}
			}
			got, err := consumeExactly(bootstrap, topic, map[int32]int64{0: sarama.OffsetOldest, 1: sarama.OffsetOldest, 2: sarama.OffsetOldest}, map[int32]int{0: 10, 1: 10, 2: 10})
			if err != nil {
				return "", err
			}
			if err := diffError(compare(expected, got)); err != nil {
				return "", err
			}
			inside, err := consumeExactly(bootstrap, topic, map[int32]int64{0: 1}, map[int32]int{0: 9})
			if err != nil {
				return "", fmt.Errorf("from offset 1: %w", err)
			}
			want := map[at]rec{}
			for k, v := range expected {
				if k.partition == 0 && k.offset >= 1 {
					want[k] = v
				}
			}
			if err := diffError(compare(want, inside)); err != nil {
				return "", fmt.Errorf("from offset 1: %w", err)
			}
			batches := 0
			ids := map[int64]bool{}
			for p := range int32(3) {
				stored, err := storedBatches(bootstrap, topic, p)
				if err != nil {
					return "", fmt.Errorf("raw fetch: %w", err)
				}
				for _, b := range stored {
					batches++
					ids[b.producerID] = true
					if b.codec != codec.codec {
						return "", failf("partition %d batch at %d stored with codec %s, not %s", p, b.firstOffset, b.codec, codec.codec)
					}
				}
			}
			if len(ids) != 1 || ids[-1] {
				return "", failf("producer ids of the stored batches: %v (want one id, not -1)", ids)
			}
			return fmt.Sprintf("30 records (keys, 3 headers, CreateTime) acknowledged at 0..9 per partition, read back exactly, also from offset 1; %d stored batches, all %s, one producer id", batches, codec.name), nil
		})
	}

	register(label+": AsyncProducer idempotent (snappy, 300 records), offsets, sequences, read back", func() (string, error) {
		topic := topicName("sm-async")
		if err := saramaCreateTopic(bootstrap, topic, 3); err != nil {
			return "", err
		}
		c := saramaConfig()
		c.Producer.Idempotent = true
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Net.MaxOpenRequests = 1
		c.Producer.Return.Successes = true
		c.Producer.Return.Errors = true
		c.Producer.Compression = sarama.CompressionSnappy
		c.Producer.Partitioner = sarama.NewManualPartitioner
		c.Producer.Flush.Messages = 20
		c.Producer.Flush.Frequency = 5 * time.Millisecond
		producer, err := sarama.NewAsyncProducer([]string{bootstrap}, c)
		if err != nil {
			return "", fmt.Errorf("NewAsyncProducer: %w", err)
		}
		records := makeRecords("async", 300, 3)
		byMessage := map[*sarama.ProducerMessage]rec{}
		inputs := make([]*sarama.ProducerMessage, len(records))
		for i, r := range records {
			inputs[i] = toSaramaMessage(topic, r)
			byMessage[inputs[i]] = r
		}
		go func() {
			for _, m := range inputs {
				producer.Input() <- m
			}
		}()
		expected := map[at]rec{}
		order := map[int32][]int64{}
		deadline := time.After(waitMax)
		for n := 0; n < len(records); n++ {
			select {
			case m := <-producer.Successes():
				expected[at{m.Partition, m.Offset}] = byMessage[m]
				order[m.Partition] = append(order[m.Partition], m.Offset)
			case e := <-producer.Errors():
				producer.AsyncClose()
				return "", fmt.Errorf("producer error: %w", e.Err)
			case <-deadline:
				producer.AsyncClose()
				return "", failf("%d of %d acknowledged within %s", n, len(records), waitMax)
			}
		}
		if err := producer.Close(); err != nil {
			return "", fmt.Errorf("Close: %w", err)
		}
		for p, offsets := range order {
			sorted := append([]int64(nil), offsets...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			for i, o := range sorted {
				if o != int64(i) {
					return "", failf("partition %d: acknowledged offsets are not 0..n-1: %v", p, sorted)
				}
			}
		}
		got, err := consumeExactly(bootstrap, topic, map[int32]int64{0: 0, 1: 0, 2: 0}, map[int32]int{0: 100, 1: 100, 2: 100})
		if err != nil {
			return "", err
		}
		if err := diffError(compare(expected, got)); err != nil {
			return "", err
		}
		batches := 0
		ids := map[int64]bool{}
		for p := range int32(3) {
			stored, err := storedBatches(bootstrap, topic, p)
			if err != nil {
				return "", fmt.Errorf("raw fetch: %w", err)
			}
			sequence := int32(0)
			for _, b := range stored {
				batches++
				ids[b.producerID] = true
				if b.firstSequence != sequence || b.codec != sarama.CompressionSnappy {
					return "", failf("partition %d batch at %d: sequence %d (want %d), codec %s", p, b.firstOffset, b.firstSequence, sequence, b.codec)
				}
				sequence += int32(b.count)
			}
		}
		if len(ids) != 1 || ids[-1] {
			return "", failf("producer ids of the stored batches: %v", ids)
		}
		return fmt.Sprintf("300 acknowledged at 0..99 per partition; read back exactly; %d snappy batches under one producer id with consecutive sequences from 0", batches), nil
	})

	register(label+": bulk, 3000 records (lz4, AsyncProducer) read with Fetch.Default 16 KiB", func() (string, error) {
		return saramaBulkScenario(bootstrap)
	})

	register(label+": SyncProducer acks 0 (NoResponse, closed right after sending), then acks 1", func() (string, error) {
		return saramaAcksScenario(bootstrap)
	})

	register(label+": LogAppendTime topic: the broker's time in the acknowledgement and the consumed records", func() (string, error) {
		return saramaLogAppendTimeScenario(bootstrap)
	})

	register(label+": partition consumer from oldest, newest, an offset, out of range; GetOffset oldest/newest/by time", func() (string, error) {
		topic := topicName("sm-offsets")
		if err := saramaCreateTopic(bootstrap, topic, 1); err != nil {
			return "", err
		}
		c := saramaConfig()
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Producer.Return.Successes = true
		c.Producer.Partitioner = sarama.NewManualPartitioner
		c.Producer.Compression = sarama.CompressionGZIP
		producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
		if err != nil {
			return "", err
		}
		defer producer.Close()
		records := makeRecords("offsets", 13, 1)
		send := func(rs []rec, first int64) (map[at]rec, error) {
			msgs := make([]*sarama.ProducerMessage, len(rs))
			for i, r := range rs {
				msgs[i] = toSaramaMessage(topic, r)
			}
			if err := producer.SendMessages(msgs); err != nil {
				return nil, err
			}
			out := map[at]rec{}
			for i, m := range msgs {
				if m.Offset != first+int64(i) {
					return nil, failf("record %d acknowledged at %d", i, m.Offset)
				}
				out[at{0, m.Offset}] = rs[i]
			}
			return out, nil
		}
		first, err := send(records[:10], 0)
		if err != nil {
			return "", err
		}
		consumer, err := sarama.NewConsumer([]string{bootstrap}, saramaConfig())
		if err != nil {
			return "", err
		}
		defer consumer.Close()
		newest, err := consumer.ConsumePartition(topic, 0, sarama.OffsetNewest)
		if err != nil {
			return "", fmt.Errorf("ConsumePartition newest: %w", err)
		}
		defer newest.Close()
		if hwm := newest.HighWaterMarkOffset(); hwm != 10 && hwm != 0 {
			observe("sarama newest consumer's high watermark before a fetch", hwm)
		}
		time.Sleep(300 * time.Millisecond)
		more, err := send(records[10:], 10)
		if err != nil {
			return "", err
		}
		got := map[at]rec{}
		for n := 0; n < 3; n++ {
			select {
			case m := <-newest.Messages():
				got[at{0, m.Offset}] = fromSaramaMessage(m)
			case e := <-newest.Errors():
				return "", e
			case <-time.After(waitMax):
				return "", failf("newest: %d of 3 records", n)
			}
		}
		if err := diffError(compare(more, got)); err != nil {
			return "", fmt.Errorf("from newest: %w", err)
		}
		all := map[at]rec{}
		for k, v := range first {
			all[k] = v
		}
		for k, v := range more {
			all[k] = v
		}
		fromOldest, err := consumeExactly(bootstrap, topic, map[int32]int64{0: sarama.OffsetOldest}, map[int32]int{0: 13})
		if err != nil {
			return "", fmt.Errorf("from oldest: %w", err)
		}
		if err := diffError(compare(all, fromOldest)); err != nil {
			return "", fmt.Errorf("from oldest: %w", err)
		}
		stored, err := storedBatches(bootstrap, topic, 0)
		if err != nil {
			return "", err
		}
		inside := false
		for _, b := range stored {
			inside = inside || (b.firstOffset < 5 && b.firstOffset+int64(b.count) > 5 && b.codec == sarama.CompressionGZIP)
		}
		if !inside {
			return "", failf("offset 5 is not inside a stored gzip batch: %+v", stored)
		}
		from5, err := consumeExactly(bootstrap, topic, map[int32]int64{0: 5}, map[int32]int{0: 8})
		if err != nil {
			return "", fmt.Errorf("from 5: %w", err)
		}
		want := map[at]rec{}
		for k, v := range all {
			if k.offset >= 5 {
				want[k] = v
			}
		}
		if err := diffError(compare(want, from5)); err != nil {
			return "", fmt.Errorf("from 5: %w", err)
		}
		_, outOfRange := consumer.ConsumePartition(topic, 0, 100)
		if !errors.Is(outOfRange, sarama.ErrOffsetOutOfRange) {
			return "", failf("ConsumePartition at 100 (beyond the end): %v, not ErrOffsetOutOfRange", outOfRange)
		}
		client, err := sarama.NewClient([]string{bootstrap}, saramaConfig())
		if err != nil {
			return "", err
		}
		defer client.Close()
		oldest, err1 := client.GetOffset(topic, 0, sarama.OffsetOldest)
		latest, err2 := client.GetOffset(topic, 0, sarama.OffsetNewest)
		byTime, err3 := client.GetOffset(topic, 0, baseTsMs+3000)
		between, err4 := client.GetOffset(topic, 0, baseTsMs+3500)
		after, err5 := client.GetOffset(topic, 0, baseTsMs+60_000)
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			return "", fmt.Errorf("GetOffset: %w", err)
		}
		observe("sarama GetOffset oldest newest t3 t3.5 after", fmt.Sprint(oldest, latest, byTime, between, after))
		if oldest != 0 || latest != 13 || byTime != 3 || between != 4 || after != -1 {
			return "", failf("GetOffset oldest %d newest %d time(3) %d time(3.5) %d after-the-end %d", oldest, latest, byTime, between, after)
		}
		return "newest read only the 3 records sent after it; oldest 13, offset 5 (inside a gzip batch) 8, exact; offset 100 ErrOffsetOutOfRange; GetOffset 0, 13, 3, 4, -1", nil
	})

	strategies := []struct {
		name     string
		strategy func() sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange},
		{"roundrobin", sarama.NewBalanceStrategyRoundRobin},
		{"sticky", sarama.NewBalanceStrategySticky},
	}
	for _, s := range strategies {
		// range: Sarama's default offset handling (MarkMessage, commits by AutoCommit every 200 ms
		// and on Close); the others commit synchronously after each record (session.Commit).
		auto := s.name == "range"
		commits := "session.Commit after each record"
		if auto {
			commits = "AutoCommit"
		}
		register(label+": ConsumerGroup, two members ("+s.name+", "+commits+"), rebalance, commits, resume", func() (string, error) {
			return saramaGroupScenario(bootstrap, s.name, s.strategy, auto)
		})
	}

	register(label+": ConsumerGroup, two static members (InstanceId), one closes and comes back: same partitions, no rebalance", func() (string, error) {
		return saramaStaticScenario(bootstrap)
	})

	register(label+": transactional SyncProducer (Transaction.ID), commit and abort, read_committed consumer", func() (string, error) {
		return saramaTransactionScenario(bootstrap)
	})

	register(label+": admin IncrementalAlterConfig, DescribeConfig of broker 1, DescribeCluster, DescribeLogDirs, AlterConfig", func() (string, error) {
		return saramaConfigScenario(bootstrap)
	})

	register(label+": admin OffsetManager commit, ListConsumerGroups, DescribeConsumerGroups, ListConsumerGroupOffsets, DeleteConsumerGroup", func() (string, error) {
		topic := topicName("sm-groups")
		group := topicName("sm-group-admin")
		if err := saramaCreateTopic(bootstrap, topic, 2); err != nil {
			return "", err
		}
		client, err := sarama.NewClient([]string{bootstrap}, saramaConfig())
		if err != nil {
			return "", err
		}
		defer client.Close()
		manager, err := sarama.NewOffsetManagerFromClient(group, client)
		if err != nil {
			return "", err
		}
		for p, offset := range map[int32]int64{0: 3, 1: 5} {
			pom, err := manager.ManagePartition(topic, p)
			if err != nil {
				return "", err
			}
			pom.MarkOffset(offset, "m"+strconv.Itoa(int(p)))
			pom.Close()
		}
		manager.Commit()
		manager.Close()
		admin, err := saramaAdmin(bootstrap)
		if err != nil {
			return "", err
		}
		defer admin.Close()
		offsets, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
		if err != nil {
			return "", fmt.Errorf("ListConsumerGroupOffsets: %w", err)
		}
		b0, b1 := offsets.GetBlock(topic, 0), offsets.GetBlock(topic, 1)
		if b0 == nil || b1 == nil || b0.Offset != 3 || b1.Offset != 5 || b0.Metadata != "m0" {
			return "", failf("committed: %+v %+v", b0, b1)
		}
		groups, err := admin.ListConsumerGroups()
		if err != nil {
			return "", fmt.Errorf("ListConsumerGroups: %w", err)
		}
		protocolType, listed := groups[group]
		if !listed {
			return "", failf("ListConsumerGroups: %s not among %d groups", group, len(groups))
		}
		described, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil || len(described) != 1 {
			return "", fmt.Errorf("DescribeConsumerGroups: %v %w", described, err)
		}
		d := described[0]
		observe("sarama group with only commits: list protocol type, describe state/type/error", fmt.Sprintf("%q %q %q %v", protocolType, d.State, d.ProtocolType, d.Err))
		if d.State != "Empty" || len(d.Members) != 0 || d.Err != sarama.ErrNoError {
			return "", failf("DescribeConsumerGroups: state %q, %d members, error %v", d.State, len(d.Members), d.Err)
		}
		if err := admin.DeleteConsumerGroup(group); err != nil {
			return "", fmt.Errorf("DeleteConsumerGroup: %w", err)
		}
		after, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
		if err != nil {
			return "", fmt.Errorf("ListConsumerGroupOffsets after the delete: %w", err)
		}
		if a := after.GetBlock(topic, 0); a == nil || a.Offset != -1 {
			return "", failf("after the delete: %+v", a)
		}
		again := admin.DeleteConsumerGroup(group)
		observe("sarama DeleteConsumerGroup of a deleted group", again)
		if !errors.Is(again, sarama.ErrGroupIDNotFound) {
			return "", failf("DeleteConsumerGroup again: %v, not ErrGroupIDNotFound", again)
		}
		return fmt.Sprintf("3 (metadata m0) and 5 committed and listed back; listed with protocol type %q; described %s with 0 members; deleted (offsets -1 after); again ErrGroupIDNotFound", protocolType, d.State), nil
	})

	register(label+": admin CreatePartitions, DeleteRecords, DescribeTopics", func() (string, error) {
		topic := topicName("sm-parts")
		if err := saramaCreateTopic(bootstrap, topic, 1); err != nil {
			return "", err
		}
		c := saramaConfig()
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Producer.Return.Successes = true
		producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
		if err != nil {
			return "", err
		}
		records := makeRecords("parts", 10, 1)
		msgs := make([]*sarama.ProducerMessage, len(records))
		for i, r := range records {
			msgs[i] = toSaramaMessage(topic, r)
		}
		err = producer.SendMessages(msgs)
		producer.Close()
		if err != nil {
			return "", err
		}
		admin, err := saramaAdmin(bootstrap)
		if err != nil {
			return "", err
		}
		defer admin.Close()
		if err := admin.CreatePartitions(topic, 3, nil, false); err != nil {
			return "", fmt.Errorf("CreatePartitions: %w", err)
		}
		if err := waitFor("3 partitions in DescribeTopics", func() bool {
			meta, err := admin.DescribeTopics([]string{topic})
			return err == nil && len(meta) == 1 && len(meta[0].Partitions) == 3
		}); err != nil {
			return "", err
		}
		fewer := admin.CreatePartitions(topic, 2, nil, false)
		if !errors.Is(fewer, sarama.ErrInvalidPartitions) {
			return "", failf("CreatePartitions to fewer: %v, not ErrInvalidPartitions", fewer)
		}
		if err := admin.DeleteRecords(topic, map[int32]int64{0: 4}); err != nil {
			return "", fmt.Errorf("DeleteRecords: %w", err)
		}
		client, err := sarama.NewClient([]string{bootstrap}, saramaConfig())
		if err != nil {
			return "", err
		}
		defer client.Close()
		oldest, err := client.GetOffset(topic, 0, sarama.OffsetOldest)
		if err != nil || oldest != 4 {
			return "", failf("oldest after DeleteRecords: %d %v", oldest, err)
		}
		got, err := consumeExactly(bootstrap, topic, map[int32]int64{0: sarama.OffsetOldest}, map[int32]int{0: 6})
		if err != nil {
			return "", err
		}
		if _, ok := got[at{0, 4}]; !ok {
			return "", failf("from oldest after DeleteRecords: %v", keysOf(got))
		}
		beyond := admin.DeleteRecords(topic, map[int32]int64{0: 50})
		observe("sarama DeleteRecords beyond the end", beyond)
		if !errors.Is(beyond, sarama.ErrOffsetOutOfRange) {
			return "", failf("DeleteRecords beyond the end: %v, not ErrOffsetOutOfRange", beyond)
		}
		return "1 -> 3 partitions; to 2: ErrInvalidPartitions; DeleteRecords to 4: oldest 4, consumption starts at 4; beyond the end ErrOffsetOutOfRange", nil
	})
}

func keysOf(m map[at]rec) []at {
	out := make([]at, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].partition != out[j].partition {
			return out[i].partition < out[j].partition
		}
		return out[i].offset < out[j].offset
	})
	return out
}

// --- The consumer-group scenario ------------------------------------------------------------------

type saramaMember struct {
	name       string
	topic      string
	autoCommit bool
	group      sarama.ConsumerGroup
	cancel     context.CancelFunc
	done       chan struct{}

	mu      sync.Mutex
	claims  []int32 // the current assignment, nil between a cleanup and the next setup
	setups  int
	gens    []int32
	records map[at]rec
	dupes   []at
	errs    []error
}

func (m *saramaMember) Setup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	claims := append([]int32(nil), s.Claims()[m.topic]...)
	sort.Slice(claims, func(i, j int) bool { return claims[i] < claims[j] })
	m.claims = claims
	m.setups++
	m.gens = append(m.gens, s.GenerationID())
	fmt.Fprintf(os.Stderr, "member %s: generation %d claims %v\n", m.name, s.GenerationID(), claims)
	return nil
}

func (m *saramaMember) Cleanup(s sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.claims = nil
	m.mu.Unlock()
	return nil
}

func (m *saramaMember) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		m.mu.Lock()
		key := at{msg.Partition, msg.Offset}
		if _, seen := m.records[key]; seen {
			m.dupes = append(m.dupes, key)
		}
		m.records[key] = fromSaramaMessage(msg)
		m.mu.Unlock()
		s.MarkMessage(msg, "")
		if !m.autoCommit {
			s.Commit()
		}
	}
	return nil
}

func (m *saramaMember) assignment() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claims
}

func (m *saramaMember) read() map[at]rec {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[at]rec{}
	for k, v := range m.records {
		out[k] = v
	}
	return out
}

func startSaramaMember(bootstrap, group, topic, name string, strategy func() sarama.BalanceStrategy, tune ...func(*sarama.Config)) (*saramaMember, error) {
	c := saramaConfig()
	c.ClientID = "booblik-compat-sarama-" + name
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 6 * time.Second
	c.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	c.Consumer.Group.Rebalance.Timeout = 20 * time.Second
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy()}
	for _, f := range tune {
		f(c)
	}
	g, err := sarama.NewConsumerGroup([]string{bootstrap}, group, c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{name: name, topic: topic, autoCommit: c.Consumer.Offsets.AutoCommit.Enable, group: g, cancel: cancel, done: make(chan struct{}), records: map[at]rec{}}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, m); err != nil {
				m.mu.Lock()
				m.errs = append(m.errs, err)
				m.mu.Unlock()
				fmt.Fprintf(os.Stderr, "member %s: Consume: %v\n", name, err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	go func() {
		for err := range g.Errors() {
			fmt.Fprintf(os.Stderr, "member %s: error: %v\n", name, err)
		}
	}()
	return m, nil
}

func (m *saramaMember) stop() error {
	m.cancel()
	err := m.group.Close()
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		return failf("member %s did not stop within 30 s", m.name)
	}
	return err
}

func produceSarama(bootstrap, topic string, records []rec) (map[at]rec, error) {
	c := saramaConfig()
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, len(records))
	for i, r := range records {
		msgs[i] = toSaramaMessage(topic, r)
	}
	if err := producer.SendMessages(msgs); err != nil {
		return nil, err
	}
	out := map[at]rec{}
	for i, m := range msgs {
		out[at{m.Partition, m.Offset}] = records[i]
	}
	return out, nil
}

func subset(all map[at]rec, partitions []int32) map[at]rec {
	out := map[at]rec{}
	for k, v := range all {
		for _, p := range partitions {
			if k.partition == p {
				out[k] = v
			}
		}
	}
	return out
}

func saramaGroupScenario(bootstrap, strategyName string, strategy func() sarama.BalanceStrategy, autoCommit bool) (string, error) {
	tune := func(c *sarama.Config) { c.Consumer.Offsets.AutoCommit.Enable = autoCommit }
	topic := topicName("sm-group-" + strategyName)
	group := topicName("sm-g-" + strategyName)
	if err := saramaCreateTopic(bootstrap, topic, 3); err != nil {
		return "", err
	}
	a, err := startSaramaMember(bootstrap, group, topic, "A", strategy, tune)
	if err != nil {
		return "", err
	}
	defer a.stop()
	if err := waitFor("A assigned [0 1 2]", func() bool { return fmt.Sprint(a.assignment()) == "[0 1 2]" }); err != nil {
		return "", err
	}
	b, err := startSaramaMember(bootstrap, group, topic, "B", strategy, tune)
	if err != nil {
		return "", err
	}
	defer b.stop()
	if err := waitFor("A and B splitting the 3 partitions", func() bool {
		pa, pb := a.assignment(), b.assignment()
		return len(pa) > 0 && len(pb) > 0 && len(pa)+len(pb) == 3
	}); err != nil {
		return "", fmt.Errorf("%w (A %v, B %v)", err, a.assignment(), b.assignment())
	}
	pa, pb := a.assignment(), b.assignment()
	first, err := produceSarama(bootstrap, topic, makeRecords("group-1", 30, 3))
	if err != nil {
		return "", err
	}
	wantA, wantB := subset(first, pa), subset(first, pb)
	if err := waitFor("each member reading its partitions' records", func() bool {
		return len(a.read()) >= len(wantA) && len(b.read()) >= len(wantB)
	}); err != nil {
		return "", fmt.Errorf("%w (A read %d of %d, B %d of %d)", err, len(a.read()), len(wantA), len(b.read()), len(wantB))
	}
	if err := diffError(compare(wantA, a.read())); err != nil {
		return "", fmt.Errorf("member A (%v): %w", pa, err)
	}
	if err := diffError(compare(wantB, b.read())); err != nil {
		return "", fmt.Errorf("member B (%v): %w", pb, err)
	}
	if err := b.stop(); err != nil {
		return "", fmt.Errorf("B Close: %w", err)
	}
	if err := waitFor("A assigned [0 1 2] after B left", func() bool { return fmt.Sprint(a.assignment()) == "[0 1 2]" }); err != nil {
		return "", err
	}
	second := makeRecords("group-2", 15, 3)
	secondAt, err := produceSarama(bootstrap, topic, second)
	if err != nil {
		return "", err
	}
	all := map[at]rec{}
	for k, v := range wantA {
		all[k] = v
	}
	for k, v := range secondAt {
		all[k] = v
	}
	if err := waitFor("A reading the 15 new records", func() bool { return len(a.read()) >= len(all) }); err != nil {
		return "", fmt.Errorf("%w (A read %d of %d)", err, len(a.read()), len(all))
	}
	if err := diffError(compare(all, a.read())); err != nil {
		return "", fmt.Errorf("member A after B left: %w", err)
	}
	if err := a.stop(); err != nil {
		return "", fmt.Errorf("A Close: %w", err)
	}
	a.mu.Lock()
	dupes := append(a.dupes, b.dupes...)
	a.mu.Unlock()
	if len(dupes) > 0 {
		return "", failf("records read twice: %v", dupes)
	}
	admin, err := saramaAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	offsets, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1, 2}})
	if err != nil {
		return "", fmt.Errorf("ListConsumerGroupOffsets: %w", err)
	}
	committed := []int64{}
	for p := range int32(3) {
		block := offsets.GetBlock(topic, p)
		if block == nil {
			return "", failf("no committed offset for partition %d", p)
		}
		committed = append(committed, block.Offset)
	}
	if fmt.Sprint(committed) != "[15 15 15]" {
		return "", failf("committed offsets %v, want [15 15 15]", committed)
	}
	third, err := produceSarama(bootstrap, topic, makeRecords("group-3", 3, 3))
	if err != nil {
		return "", err
	}
	c, err := startSaramaMember(bootstrap, group, topic, "C", strategy, tune)
	if err != nil {
		return "", err
	}
	defer c.stop()
	if err := waitFor("C reading the 3 records after the commits", func() bool { return len(c.read()) >= 3 }); err != nil {
		return "", err
	}
	time.Sleep(500 * time.Millisecond)
	if err := diffError(compare(third, c.read())); err != nil {
		return "", fmt.Errorf("member C (resume): %w", err)
	}
	if err := c.stop(); err != nil {
		return "", fmt.Errorf("C Close: %w", err)
	}
	return fmt.Sprintf("A %v, B %v; 30 records read by their owners; B closed, A got [0 1 2] and read the 15 new ones once; committed %v; C resumed with exactly the 3 new records", pa, pb, committed), nil
}

func (m *saramaMember) snapshot() (setups int, gens []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setups, append([]int32(nil), m.gens...)
}

// saramaStaticScenario: two static members (Consumer.Group.InstanceId, KIP-345); one closes (a
// static member sends no LeaveGroup) and comes back under its instance id within the session
// timeout: it gets its partitions back, the other member sees no rebalance, both resume at the
// commits.
func saramaStaticScenario(bootstrap string) (string, error) {
	topic := topicName("sm-static")
	group := topicName("sm-g-static")
	if err := saramaCreateTopic(bootstrap, topic, 3); err != nil {
		return "", err
	}
	static := func(id string) func(*sarama.Config) {
		return func(c *sarama.Config) {
			c.Consumer.Group.InstanceId = id
			c.Consumer.Group.Session.Timeout = 15 * time.Second
		}
	}
	a, err := startSaramaMember(bootstrap, group, topic, "A", sarama.NewBalanceStrategyRange, static("static-a"))
	if err != nil {
		return "", err
	}
	if err := waitFor("A assigned [0 1 2]", func() bool { return fmt.Sprint(a.assignment()) == "[0 1 2]" }); err != nil {
		a.stop()
		return "", err
	}
	b, err := startSaramaMember(bootstrap, group, topic, "B", sarama.NewBalanceStrategyRange, static("static-b"))
	if err != nil {
		a.stop()
		return "", err
	}
	defer b.stop()
	if err := waitFor("A and B splitting the 3 partitions", func() bool {
		pa, pb := a.assignment(), b.assignment()
		return len(pa) > 0 && len(pb) > 0 && len(pa)+len(pb) == 3
	}); err != nil {
		a.stop()
		return "", fmt.Errorf("%w (A %v, B %v)", err, a.assignment(), b.assignment())
	}
	pa, pb := a.assignment(), b.assignment()
	first, err := produceSarama(bootstrap, topic, makeRecords("static-1", 30, 3))
	if err != nil {
		a.stop()
		return "", err
	}
	wantA, wantB := subset(first, pa), subset(first, pb)
	if err := waitFor("each member reading its partitions' records", func() bool {
		return len(a.read()) >= len(wantA) && len(b.read()) >= len(wantB)
	}); err != nil {
		a.stop()
		return "", err
	}
	_, gensA := a.snapshot()
	if err := a.stop(); err != nil {
		return "", fmt.Errorf("A Close: %w", err)
	}
	setupsB, gensB := b.snapshot()
	second, err := produceSarama(bootstrap, topic, makeRecords("static-2", 15, 3))
	if err != nil {
		return "", err
	}
	again, err := startSaramaMember(bootstrap, group, topic, "A2", sarama.NewBalanceStrategyRange, static("static-a"))
	if err != nil {
		return "", err
	}
	defer again.stop()
	if err := waitFor("A back under its instance id", func() bool { return len(again.assignment()) > 0 }); err != nil {
		return "", err
	}
	if fmt.Sprint(again.assignment()) != fmt.Sprint(pa) {
		return "", failf("A came back with %v, had %v", again.assignment(), pa)
	}
	wantAgain := subset(second, pa)
	if err := waitFor("A reading its share of the 15 new records", func() bool {
		return len(again.read()) >= len(wantAgain) && len(b.read()) >= len(wantB)+len(subset(second, pb))
	}); err != nil {
		return "", err
	}
	time.Sleep(500 * time.Millisecond)
	if err := diffError(compare(wantAgain, again.read())); err != nil {
		return "", fmt.Errorf("A back (resume at the commits): %w", err)
	}
	allB := subset(first, pb)
	for k, v := range subset(second, pb) {
		allB[k] = v
	}
	if err := diffError(compare(allB, b.read())); err != nil {
		return "", fmt.Errorf("B: %w", err)
	}
	setupsAfter, gensAfter := b.snapshot()
	_, gensAgain := again.snapshot()
	observe("sarama static: generations A, A back, B before, B after", fmt.Sprint(gensA, gensAgain, gensB, gensAfter))
	if setupsAfter != setupsB {
		return "", failf("B went through %d more rebalances while A was away and back (generations %v -> %v)", setupsAfter-setupsB, gensB, gensAfter)
	}
	if gensAgain[0] != gensA[len(gensA)-1] {
		return "", failf("A came back in generation %d, left in %d", gensAgain[0], gensA[len(gensA)-1])
	}
	return fmt.Sprintf("A %v, B %v; A closed (no LeaveGroup) and came back under its instance id: %v again, same generation %d, B not rebalanced; both resumed at the commits", pa, pb, pa, gensAgain[0]), nil
}

// saramaTransactionScenario: a transactional SyncProducer (Producer.Transaction.ID): one committed
// and one aborted transaction, read back with a read_committed consumer. booblik has no
// transactions (docs/kafka.md, "Not there yet"): InitProducerId with a transactional id gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53), reported as KNOWN.
func saramaTransactionScenario(bootstrap string) (string, error) {
	topic := topicName("sm-txn")
	if err := saramaCreateTopic(bootstrap, topic, 1); err != nil {
		return "", err
	}
	c := saramaConfig()
	c.Producer.Idempotent = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Net.MaxOpenRequests = 1
	c.Producer.Return.Successes = true
	c.Producer.Transaction.ID = topicName("sm-txn-id")
	c.Producer.Transaction.Retry.Max = 2
	producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
	if errors.Is(err, sarama.ErrTransactionalIDAuthorizationFailed) {
		return "", errKnown{fmt.Sprintf("transactions are not served (docs/kafka.md, Not there yet): NewSyncProducer: %v", err)}
	}
	if err != nil {
		return "", fmt.Errorf("NewSyncProducer: %w", err)
	}
	defer producer.Close()
	records := makeRecords("txn", 5, 1)
	send := func(rs []rec) error {
		msgs := make([]*sarama.ProducerMessage, len(rs))
		for i, r := range rs {
			msgs[i] = toSaramaMessage(topic, r)
		}
		return producer.SendMessages(msgs)
	}
	if err := producer.BeginTxn(); err != nil {
		return "", fmt.Errorf("BeginTxn: %w", err)
	}
	if err := send(records[:3]); err != nil {
		return "", err
	}
	if err := producer.CommitTxn(); err != nil {
		return "", fmt.Errorf("CommitTxn: %w", err)
	}
	if err := producer.BeginTxn(); err != nil {
		return "", fmt.Errorf("BeginTxn: %w", err)
	}
	if err := send(records[3:]); err != nil {
		return "", err
	}
	if err := producer.AbortTxn(); err != nil {
		return "", fmt.Errorf("AbortTxn: %w", err)
	}
	got, err := consumeExactly(bootstrap, topic, map[int32]int64{0: sarama.OffsetOldest}, map[int32]int{0: 3}, func(c *sarama.Config) {
		c.Consumer.IsolationLevel = sarama.ReadCommitted
	})
	if err != nil {
		return "", err
	}
	want := map[at]rec{{0, 0}: records[0], {0, 1}: records[1], {0, 2}: records[2]}
	if err := diffError(compare(want, got)); err != nil {
		return "", err
	}
	return "3 records committed, 2 aborted; read_committed reads exactly the 3", nil
}

// saramaConfigScenario: IncrementalAlterConfig of a topic, DescribeConfig of broker 1,
// DescribeCluster, DescribeLogDirs, then AlterConfig (AlterConfigs, API 33; served by booblik since
// 2026-12-03): against a broker that does not advertise it, Sarama refuses the call itself with
// ErrUnsupportedVersion (reported as KNOWN).
func saramaConfigScenario(bootstrap string) (string, error) {
	topic := topicName("sm-configs")
	if err := saramaCreateTopic(bootstrap, topic, 1); err != nil {
		return "", err
	}
	admin, err := saramaAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	value := "7200000"
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &value},
	}, false); err != nil {
		return "", fmt.Errorf("IncrementalAlterConfig: %w", err)
	}
	readBack := func() (string, error) {
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms"}})
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Name == "retention.ms" {
				return e.Value, nil
			}
		}
		return "", failf("retention.ms not described")
	}
	if got, err := readBack(); err != nil || got != value {
		return "", failf("retention.ms after IncrementalAlterConfig: %q %v", got, err)
	}
	brokerEntries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "1"})
	if err != nil || len(brokerEntries) == 0 {
		return "", failf("DescribeConfig of broker 1: %d entries, %v", len(brokerEntries), err)
	}
	observe("sarama DescribeConfig broker 1 entries > 0", len(brokerEntries) > 0)
	brokers, controller, err := admin.DescribeCluster()
	if err != nil || len(brokers) != 1 || controller != 1 || brokers[0].Addr() != bootstrap {
		return "", failf("DescribeCluster: %v, controller %d, %v", brokers, controller, err)
	}
	dirs, err := admin.DescribeLogDirs([]int32{1})
	if err != nil || len(dirs[1]) == 0 {
		return "", failf("DescribeLogDirs: %v %v", dirs, err)
	}
	found := false
	for _, dir := range dirs[1] {
		for _, t := range dir.Topics {
			if t.Topic == topic {
				found = true
			}
		}
	}
	if !found {
		return "", failf("DescribeLogDirs: the topic is in no log directory")
	}
	rest := fmt.Sprintf("IncrementalAlterConfig retention.ms=%s read back; broker 1: %d configs; DescribeCluster: broker 1 at the listener, controller 1; DescribeLogDirs holds the topic", value, len(brokerEntries))
	other := "3600000"
	err = admin.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &other}, false)
	if errors.Is(err, sarama.ErrUnsupportedVersion) {
		// booblik served AlterConfigs (33) only from 2026-12-03; before, Sarama refused to send it.
		return "", errKnown{rest + "; AlterConfig: the broker does not advertise AlterConfigs (33), Sarama refuses it: " + err.Error()}
	}
	if err != nil {
		return "", fmt.Errorf("AlterConfig: %w", err)
	}
	if got, err := readBack(); err != nil || got != other {
		return "", failf("retention.ms after AlterConfig: %q %v", got, err)
	}
	return rest + "; AlterConfig retention.ms=3600000 read back", nil
}

// saramaBulkScenario: 3000 records (lz4) through an AsyncProducer with Sarama's default batching,
// read back with Consumer.Fetch.Default 16 KiB (fetches ending inside partitions).
func saramaBulkScenario(bootstrap string) (string, error) {
	topic := topicName("sm-bulk")
	if err := saramaCreateTopic(bootstrap, topic, 3); err != nil {
		return "", err
	}
	c := saramaConfig()
	c.Producer.Return.Successes = true
	c.Producer.Compression = sarama.CompressionLZ4
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	c.Producer.Flush.Messages = 100
	producer, err := sarama.NewAsyncProducer([]string{bootstrap}, c)
	if err != nil {
		return "", err
	}
	records := makeRecords("bulk", 3000, 3)
	byMessage := map[*sarama.ProducerMessage]rec{}
	inputs := make([]*sarama.ProducerMessage, len(records))
	for i, r := range records {
		inputs[i] = toSaramaMessage(topic, r)
		byMessage[inputs[i]] = r
	}
	go func() {
		for _, m := range inputs {
			producer.Input() <- m
		}
	}()
	expected := map[at]rec{}
	for n := 0; n < len(records); n++ {
		select {
		case m := <-producer.Successes():
			expected[at{m.Partition, m.Offset}] = byMessage[m]
		case e := <-producer.Errors():
			producer.AsyncClose()
			return "", e.Err
		case <-time.After(waitMax):
			producer.AsyncClose()
			return "", failf("%d of %d acknowledged", n, len(records))
		}
	}
	producer.Close()
	got, err := consumeExactly(bootstrap, topic, map[int32]int64{0: 0, 1: 0, 2: 0}, map[int32]int{0: 1000, 1: 1000, 2: 1000}, func(c *sarama.Config) {
		c.Consumer.Fetch.Default = 16 << 10
	})
	if err != nil {
		return "", err
	}
	if err := diffError(compare(expected, got)); err != nil {
		return "", err
	}
	batches := 0
	for p := range int32(3) {
		stored, err := storedBatches(bootstrap, topic, p)
		if err != nil {
			return "", err
		}
		batches += len(stored)
	}
	return fmt.Sprintf("3000 records in %d lz4 batches read back exactly with Fetch.Default 16 KiB", batches), nil
}

// saramaAcksScenario: 5 records by a SyncProducer with RequiredAcks NoResponse (acks 0), closed
// right after SendMessages returned, then 5 with WaitForLocal (acks 1); all 10 must be stored.
func saramaAcksScenario(bootstrap string) (string, error) {
	acks := topicName("sm-acks")
	if err := saramaCreateTopic(bootstrap, acks, 1); err != nil {
		return "", err
	}
	small := makeRecords("acks", 10, 1)
	for i, required := range []sarama.RequiredAcks{sarama.NoResponse, sarama.WaitForLocal} {
		pc := saramaConfig()
		pc.Producer.RequiredAcks = required
		pc.Producer.Return.Successes = true
		sp, err := sarama.NewSyncProducer([]string{bootstrap}, pc)
		if err != nil {
			return "", err
		}
		msgs := []*sarama.ProducerMessage{}
		for _, r := range small[i*5 : i*5+5] {
			msgs = append(msgs, toSaramaMessage(acks, r))
		}
		err = sp.SendMessages(msgs)
		sp.Close()
		if err != nil {
			return "", fmt.Errorf("acks %d: %w", required, err)
		}
		// The acks 0 records are processed after SendMessages returned: give them a second, so
		// that the acks 1 records come after them.
		time.Sleep(time.Second)
	}
	client, err := sarama.NewClient([]string{bootstrap}, saramaConfig())
	if err != nil {
		return "", err
	}
	defer client.Close()
	newest, err := client.GetOffset(acks, 0, sarama.OffsetNewest)
	if err != nil {
		return "", err
	}
	if newest != 10 {
		return "", failf("%d of 10 records stored (5 sent with acks 0 by a producer closed right after SendMessages returned, then 5 with acks 1)", newest)
	}
	wantAcks := map[at]rec{}
	for i, r := range small {
		wantAcks[at{0, int64(i)}] = r
	}
	gotAcks, err := consumeExactly(bootstrap, acks, map[int32]int64{0: 0}, map[int32]int{0: 10})
	if err != nil {
		return "", fmt.Errorf("acks 0 and 1: %w", err)
	}
	if err := diffError(compare(wantAcks, gotAcks)); err != nil {
		return "", fmt.Errorf("acks 0 and 1: %w", err)
	}
	return "acks 0 (producer closed right after) then acks 1: all 10 records stored and read back", nil
}

// saramaLogAppendTimeScenario: a topic with message.timestamp.type=LogAppendTime: the
// acknowledged messages carry the broker's append time (Produce's log_append_time_ms), and so do
// the consumed ones, instead of the producer's CreateTime.
func saramaLogAppendTimeScenario(bootstrap string) (string, error) {
	topic := topicName("sm-logappend")
	admin, err := saramaAdmin(bootstrap)
	if err != nil {
		return "", err
	}
	logAppend := "LogAppendTime"
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: map[string]*string{"message.timestamp.type": &logAppend}}, false)
	admin.Close()
	if err != nil {
		return "", fmt.Errorf("CreateTopic: %w", err)
	}
	before := time.Now().Add(-time.Second)
	var acked map[at]rec
	var sendErr error
	// Kafka creates the topic asynchronously: retry the first send while its partition is not led.
	if err := waitFor("a produce to the new topic", func() bool {
		acked, sendErr = produceSaramaTimes(bootstrap, topic, makeRecords("logappend", 3, 1))
		return sendErr == nil
	}); err != nil {
		return "", fmt.Errorf("%w: %v", err, sendErr)
	}
	after := time.Now().Add(time.Second)
	for k, r := range acked {
		if r.tsMs < before.UnixMilli() || r.tsMs > after.UnixMilli() {
			return "", failf("acknowledged %v with timestamp %d, not the broker's append time (between %d and %d)", k, r.tsMs, before.UnixMilli(), after.UnixMilli())
		}
	}
	got, err := consumeExactly(bootstrap, topic, map[int32]int64{0: 0}, map[int32]int{0: 3})
	if err != nil {
		return "", err
	}
	for k, r := range got {
		if r.tsMs < before.UnixMilli() || r.tsMs > after.UnixMilli() {
			return "", failf("consumed %v with timestamp %d, not the broker's append time", k, r.tsMs)
		}
		if r.tsMs != acked[k].tsMs {
			return "", failf("consumed %v with timestamp %d, acknowledged with %d", k, r.tsMs, acked[k].tsMs)
		}
	}
	return "3 records sent with CreateTime in 2023: acknowledged and consumed with the broker's append time (the same value)", nil
}

// produceSaramaTimes: like produceSarama, but each record's timestamp is the one the producer
// acknowledged (for a LogAppendTime topic, the broker's).
func produceSaramaTimes(bootstrap, topic string, records []rec) (map[at]rec, error) {
	c := saramaConfig()
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Retry.Max = 0
	producer, err := sarama.NewSyncProducer([]string{bootstrap}, c)
	if err != nil {
		return nil, err
	}
	defer producer.Close()
	msgs := make([]*sarama.ProducerMessage, len(records))
	for i, r := range records {
		msgs[i] = toSaramaMessage(topic, r)
	}
	if err := producer.SendMessages(msgs); err != nil {
		return nil, err
	}
	out := map[at]rec{}
	for i, m := range msgs {
		r := records[i]
		r.tsMs = m.Timestamp.UnixMilli()
		out[at{m.Partition, m.Offset}] = r
	}
	return out, nil
}
