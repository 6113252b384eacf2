// segmentio/kafka-go's scenarios: kafka.Writer, kafka.Reader (with and without a group),
// kafka.Client's admin calls and kafka.Conn. kafka.Client and kafka.Writer negotiate each request's
// version with ApiVersions (protocol package); kafka.Conn and the group Reader use fixed versions.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

var kgoNetDialer = &net.Dialer{Timeout: 10 * time.Second}

func kgoDialer(clientID string) *kafka.Dialer {
	return &kafka.Dialer{
		ClientID: clientID,
		Timeout:  10 * time.Second,
		DialFunc: func(ctx context.Context, network, address string) (net.Conn, error) {
			return wrapConn(kgoNetDialer.DialContext(ctx, network, address))
		},
	}
}

var kgoTransport = &kafka.Transport{
	ClientID: "booblik-compat-kafka-go",
	Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		return wrapConn(kgoNetDialer.DialContext(ctx, network, address))
	},
}

func kgoClient(bootstrap string) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(bootstrap), Timeout: 20 * time.Second, Transport: kgoTransport}
}

func kgoCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitMax)
}

func kgoCreateTopic(bootstrap, topic string, partitions int, configs ...kafka.ConfigEntry) error {
	ctx, cancel := kgoCtx()
	defer cancel()
	client := kgoClient(bootstrap)
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs,
	}}})
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	if err := resp.Errors[topic]; err != nil {
		return fmt.Errorf("CreateTopics %s: %w", topic, err)
	}
	return waitFor("the topic's partitions in the metadata", func() bool {
		meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		return err == nil && len(meta.Topics) == 1 && meta.Topics[0].Error == nil && len(meta.Topics[0].Partitions) == partitions
	})
}

func toKgoMessage(r rec) kafka.Message {
	headers := make([]kafka.Header, len(r.headers))
	for i, h := range r.headers {
		headers[i] = kafka.Header{Key: h.key, Value: []byte(h.value)}
	}
	return kafka.Message{Key: r.key, Value: r.value, Headers: headers, Time: time.UnixMilli(r.tsMs)}
}

func fromKgoMessage(m kafka.Message) rec {
	headers := make([]header, len(m.Headers))
	for i, h := range m.Headers {
		headers[i] = header{h.Key, string(h.Value)}
	}
	return rec{partition: int32(m.Partition), key: m.Key, value: m.Value, headers: headers, tsMs: m.Time.UnixMilli()}
}

// headerBalancer puts record i (its first header, h-index) on partition i % partitions, so that
// the offsets a Writer (which does not return them) gave each record are known.
var headerBalancer = kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
	i, _ := strconv.Atoi(string(m.Headers[0].Value))
	return partitions[i%len(partitions)]
})

// kgoWrite writes the records with one Writer, in calls of `per` records, and returns them by
// the partition and offset they must have (the partitions' offsets start at `base`).
func kgoWrite(bootstrap, topic string, records []rec, codec kafka.Compression, per int, base map[int32]int64) (map[at]rec, error) {
	w := &kafka.Writer{
		Addr:         kafka.TCP(bootstrap),
		Topic:        topic,
		Balancer:     headerBalancer,
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchSize:    per,
		BatchTimeout: 10 * time.Millisecond,
		Transport:    kgoTransport,
	}
	defer w.Close()
	ctx, cancel := kgoCtx()
	defer cancel()
	for start := 0; start < len(records); start += per {
		end := min(start+per, len(records))
		msgs := make([]kafka.Message, 0, end-start)
		for _, r := range records[start:end] {
			msgs = append(msgs, toKgoMessage(r))
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			return nil, fmt.Errorf("WriteMessages: %w", err)
		}
	}
	next := map[int32]int64{}
	for p, o := range base {
		next[p] = o
	}
	out := map[at]rec{}
	for _, r := range records {
		out[at{r.partition, next[r.partition]}] = r
		next[r.partition]++
	}
	return out, nil
}

// kgoReadExactly reads `count` records of one partition from `offset` with a Reader without a
// group, and fails if one more arrives within a short while.
func kgoReadExactly(bootstrap, topic string, partition int, offset int64, count int) (map[at]rec, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{bootstrap}, Topic: topic, Partition: partition,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond, Dialer: kgoDialer("booblik-compat-kafka-go-reader"),
	})
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		return nil, err
	}
	got := map[at]rec{}
	ctx, cancel := kgoCtx()
	defer cancel()
	for n := 0; n < count; n++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("partition %d: ReadMessage after %d of %d: %w", partition, n, count, err)
		}
		got[at{int32(m.Partition), m.Offset}] = fromKgoMessage(m)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancelShort()
	if m, err := r.ReadMessage(short); err == nil {
		return nil, failf("partition %d: a record beyond the expected ones at offset %d", partition, m.Offset)
	}
	return got, nil
}

var kgoCodecs = []struct {
	name  string
	codec kafka.Compression
	raw   string
}{
	{"none", 0, "none"},
	{"gzip", kafka.Gzip, "gzip"},
	{"snappy", kafka.Snappy, "snappy"},
	{"lz4", kafka.Lz4, "lz4"},
	{"zstd", kafka.Zstd, "zstd"},
}

func registerKafkaGo(bootstrap string) {
	fmt.Println("VERSION segmentio/kafka-go v0.4.51")
	label := "kafka-go"

	register(label+": Client CreateTopics (retention.ms), again, Metadata, DescribeConfigs, Conn ReadPartitions/Brokers/Controller, DeleteTopics", func() (string, error) {
		topic := topicName("kg-admin")
		if err := kgoCreateTopic(bootstrap, topic, 3, kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: "3600000"}); err != nil {
			return "", err
		}
		ctx, cancel := kgoCtx()
		defer cancel()
		client := kgoClient(bootstrap)
		again, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}}})
		if err != nil {
			return "", fmt.Errorf("CreateTopics again: %w", err)
		}
		if !errors.Is(again.Errors[topic], kafka.TopicAlreadyExists) {
			return "", failf("CreateTopics again: %v, not TopicAlreadyExists", again.Errors[topic])
		}
		meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil {
			return "", fmt.Errorf("Metadata: %w", err)
		}
		if len(meta.Brokers) != 1 || meta.Controller.ID != 1 || len(meta.Topics) != 1 || len(meta.Topics[0].Partitions) != 3 {
			return "", failf("Metadata: %d brokers, controller %d, %+v", len(meta.Brokers), meta.Controller.ID, meta.Topics)
		}
		for _, p := range meta.Topics[0].Partitions {
			if p.Leader.ID != 1 || len(p.Replicas) != 1 || len(p.Isr) != 1 {
				return "", failf("Metadata partition %d: leader %d, %d replicas, %d ISR", p.ID, p.Leader.ID, len(p.Replicas), len(p.Isr))
			}
		}
		observe("kafka-go Metadata cluster id", meta.ClusterID)
		configs, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		}}})
		if err != nil || len(configs.Resources) != 1 || configs.Resources[0].Error != nil {
			return "", failf("DescribeConfigs: %v %+v", err, configs)
		}
		retention := ""
		for _, e := range configs.Resources[0].ConfigEntries {
			if e.ConfigName == "retention.ms" {
				retention = e.ConfigValue
			}
		}
		if retention != "3600000" {
			return "", failf("DescribeConfigs retention.ms = %q", retention)
		}
		conn, err := kgoDialer("booblik-compat-kafka-go-conn").DialContext(ctx, "tcp", bootstrap)
		if err != nil {
			return "", fmt.Errorf("Dial: %w", err)
		}
		defer conn.Close()
		partitions, err := conn.ReadPartitions(topic)
		if err != nil || len(partitions) != 3 {
			return "", failf("Conn.ReadPartitions: %v %v", partitions, err)
		}
		brokers, err := conn.Brokers()
		if err != nil || len(brokers) != 1 || fmt.Sprintf("%s:%d", brokers[0].Host, brokers[0].Port) != bootstrap {
			return "", failf("Conn.Brokers: %v %v", brokers, err)
		}
		controller, err := conn.Controller()
		if err != nil || controller.ID != 1 {
			return "", failf("Conn.Controller: %v %v", controller, err)
		}
		deleted, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
		if err != nil || deleted.Errors[topic] != nil {
			return "", failf("DeleteTopics: %v %v", err, deleted)
		}
		if err := waitFor("the topic gone from the metadata", func() bool {
			meta, err := client.Metadata(ctx, &kafka.MetadataRequest{})
			if err != nil {
				return false
			}
			for _, t := range meta.Topics {
				if t.Name == topic {
					return false
				}
			}
			return true
		}); err != nil {
			return "", err
		}
		second := topicName("kg-conn")
		if err := conn.CreateTopics(kafka.TopicConfig{Topic: second, NumPartitions: 2, ReplicationFactor: 1}); err != nil {
			return "", fmt.Errorf("Conn.CreateTopics: %w", err)
		}
		if err := waitFor("Conn.ReadPartitions of the topic Conn created", func() bool {
			ps, err := conn.ReadPartitions(second)
			return err == nil && len(ps) == 2
		}); err != nil {
			return "", err
		}
		if err := conn.DeleteTopics(second); err != nil {
			return "", fmt.Errorf("Conn.DeleteTopics: %w", err)
		}
		return fmt.Sprintf("created; again TopicAlreadyExists; Metadata: 1 broker, controller 1, 3 partitions led by 1, cluster %q; retention.ms read back; Conn: 3 partitions, the broker, controller 1; deleted; Conn.CreateTopics/DeleteTopics too", meta.ClusterID), nil
	})

	for _, codec := range kgoCodecs {
		register(label+": Writer (acks all, "+codec.name+"), Reader without a group from offset 0 and 1", func() (string, error) {
			topic := topicName("kg-w-" + codec.name)
			if err := kgoCreateTopic(bootstrap, topic, 3); err != nil {
				return "", err
			}
			expected, err := kgoWrite(bootstrap, topic, makeRecords(codec.name, 30, 3), codec.codec, 15, map[int32]int64{})
			if err != nil {
				return "", err
			}
			got := map[at]rec{}
			for p := range 3 {
				part, err := kgoReadExactly(bootstrap, topic, p, 0, 10)
				if err != nil {
					return "", err
				}
				for k, v := range part {
					got[k] = v
				}
			}
			if err := diffError(compare(expected, got)); err != nil {
				return "", err
			}
			inside, err := kgoReadExactly(bootstrap, topic, 0, 1, 9)
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
			for p := range int32(3) {
				stored, err := storedBatches(bootstrap, topic, p)
				if err != nil {
					return "", fmt.Errorf("raw fetch: %w", err)
				}
				for _, b := range stored {
					batches++
					if b.codec.String() != codec.raw {
						return "", failf("partition %d batch at %d stored with codec %s, not %s", p, b.firstOffset, b.codec, codec.raw)
					}
				}
			}
			return fmt.Sprintf("30 records (keys, 3 headers, CreateTime) in two WriteMessages calls; read back exactly from 0 and from 1; %d stored batches, all %s", batches, codec.raw), nil
		})
	}

	register(label+": Reader without a group at an offset and at the end; Conn and Client ListOffsets (first, last, by time)", func() (string, error) {
		topic := topicName("kg-offsets")
		if err := kgoCreateTopic(bootstrap, topic, 1); err != nil {
			return "", err
		}
		records := makeRecords("offsets", 13, 1)
		first, err := kgoWrite(bootstrap, topic, records[:10], kafka.Gzip, 5, map[int32]int64{})
		if err != nil {
			return "", err
		}
		ctx, cancel := kgoCtx()
		defer cancel()
		tail := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{bootstrap}, Topic: topic, Partition: 0,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond, Dialer: kgoDialer("booblik-compat-kafka-go-tail"),
		})
		defer tail.Close()
		if err := tail.SetOffset(kafka.LastOffset); err != nil {
			return "", err
		}
		tailRead := make(chan kafka.Message, 16)
		tailErr := make(chan error, 1)
		go func() {
			for {
				m, err := tail.ReadMessage(ctx)
				if err != nil {
					tailErr <- err
					return
				}
				tailRead <- m
			}
		}()
		time.Sleep(1500 * time.Millisecond)
		more, err := kgoWrite(bootstrap, topic, records[10:], kafka.Gzip, 5, map[int32]int64{0: 10})
		if err != nil {
			return "", err
		}
		gotTail := map[at]rec{}
		for n := 0; n < 3; n++ {
			select {
			case m := <-tailRead:
				gotTail[at{int32(m.Partition), m.Offset}] = fromKgoMessage(m)
			case err := <-tailErr:
				return "", fmt.Errorf("tail reader: %w", err)
			case <-time.After(waitMax):
				return "", failf("tail reader: %d of 3", n)
			}
		}
		if err := diffError(compare(more, gotTail)); err != nil {
			return "", fmt.Errorf("reader at LastOffset: %w", err)
		}
		all := map[at]rec{}
		for k, v := range first {
			all[k] = v
		}
		for k, v := range more {
			all[k] = v
		}
		// Written 5 per WriteMessages call, so the batches are 0-4, 5-9 and 10-12: 6 is inside one.
		from6, err := kgoReadExactly(bootstrap, topic, 0, 6, 7)
		if err != nil {
			return "", err
		}
		want := map[at]rec{}
		for k, v := range all {
			if k.offset >= 6 {
				want[k] = v
			}
		}
		if err := diffError(compare(want, from6)); err != nil {
			return "", fmt.Errorf("from 6: %w", err)
		}
		leader, err := kgoDialer("booblik-compat-kafka-go-leader").DialLeader(ctx, "tcp", bootstrap, topic, 0)
		if err != nil {
			return "", fmt.Errorf("DialLeader: %w", err)
		}
		defer leader.Close()
		firstOffset, err1 := leader.ReadFirstOffset()
		lastOffset, err2 := leader.ReadLastOffset()
		byTime, err3 := leader.ReadOffset(time.UnixMilli(baseTsMs + 3000))
		between, err4 := leader.ReadOffset(time.UnixMilli(baseTsMs + 3500))
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return "", fmt.Errorf("Conn offsets: %w", err)
		}
		if firstOffset != 0 || lastOffset != 13 || byTime != 3 || between != 4 {
			return "", failf("Conn: first %d last %d time(3) %d time(3.5) %d", firstOffset, lastOffset, byTime, between)
		}
		client := kgoClient(bootstrap)
		listed, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0), kafka.TimeOffsetOf(0, time.UnixMilli(baseTsMs+7000))},
		}})
		if err != nil {
			return "", fmt.Errorf("Client.ListOffsets: %w", err)
		}
		po := listed.Topics[topic]
		if len(po) != 1 || po[0].Error != nil {
			return "", failf("Client.ListOffsets: %+v", po)
		}
		timeOffsets := []string{}
		for o, t := range po[0].Offsets {
			timeOffsets = append(timeOffsets, fmt.Sprintf("%d@%d", o, t.UnixMilli()))
		}
		sort.Strings(timeOffsets)
		observe("kafka-go Client.ListOffsets", fmt.Sprintf("first %d last %d by time %v", po[0].FirstOffset, po[0].LastOffset, timeOffsets))
		if po[0].FirstOffset != 0 || po[0].LastOffset != 13 {
			return "", failf("Client.ListOffsets: first %d last %d", po[0].FirstOffset, po[0].LastOffset)
		}
		if _, ok := po[0].Offsets[7]; !ok {
			return "", failf("Client.ListOffsets by time of record 7: %v", timeOffsets)
		}
		return fmt.Sprintf("a Reader at LastOffset read only the 3 records written after; from 6 (inside a gzip batch) 7, exact; Conn: first 0, last 13, by time 3 and 4; Client.ListOffsets 0, 13, by time %v", timeOffsets), nil
	})

	register(label+": Conn (DialLeader) WriteMessages, WriteCompressedMessagesAt, Seek, ReadBatch", func() (string, error) {
		return kgoConnScenario(bootstrap)
	})

	register(label+": LogAppendTime topic: Conn's append time is the broker's; the Reader's record time (observed)", func() (string, error) {
		return kgoLogAppendTimeScenario(bootstrap)
	})

	register(label+": bulk, 3000 records (lz4) read with MaxBytes 16 KiB; Writer acks none and one", func() (string, error) {
		return kgoBulkScenario(bootstrap)
	})

	register(label+": Client IncrementalAlterConfigs, DescribeConfigs of broker 1, CreatePartitions, AlterConfigs", func() (string, error) {
		return kgoConfigScenario(bootstrap)
	})

	register(label+": Reader with a GroupID, two readers rebalancing, CommitMessages, resume; Client OffsetFetch, DescribeGroups, ListGroups, DeleteGroups", func() (string, error) {
		return kgoGroupScenario(bootstrap)
	})
}

type kgoReader struct {
	name   string
	reader *kafka.Reader
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	records map[at]rec
	dupes   []at
	errs    []error
}

func startKgoReader(bootstrap, group, topic, name string) *kgoReader {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{bootstrap}, GroupID: group, Topic: topic,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 200 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 6 * time.Second, RebalanceTimeout: 10 * time.Second,
		JoinGroupBackoff: 500 * time.Millisecond, StartOffset: kafka.FirstOffset,
		Dialer: kgoDialer("booblik-compat-kafka-go-" + name),
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &kgoReader{name: name, reader: r, cancel: cancel, done: make(chan struct{}), records: map[at]rec{}}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() == nil {
					m.mu.Lock()
					m.errs = append(m.errs, err)
					m.mu.Unlock()
				}
				return
			}
			m.mu.Lock()
			key := at{int32(msg.Partition), msg.Offset}
			if _, seen := m.records[key]; seen {
				m.dupes = append(m.dupes, key)
			}
			m.records[key] = fromKgoMessage(msg)
			m.mu.Unlock()
			if err := r.CommitMessages(ctx, msg); err != nil && ctx.Err() == nil {
				m.mu.Lock()
				m.errs = append(m.errs, fmt.Errorf("CommitMessages: %w", err))
				m.mu.Unlock()
			}
		}
	}()
	return m
}

func (m *kgoReader) read() map[at]rec {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[at]rec{}
	for k, v := range m.records {
		out[k] = v
	}
	return out
}

func (m *kgoReader) stop() error {
	m.cancel()
	<-m.done
	err := m.reader.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) > 0 {
		return errors.Join(append(m.errs, err)...)
	}
	return err
}

// kgoAssignments: the group's state and each member's partitions (by client id) from DescribeGroups.
func kgoAssignments(ctx context.Context, client *kafka.Client, group string) (string, map[string][]int, error) {
	resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return "", nil, err
	}
	if len(resp.Groups) != 1 {
		return "", nil, failf("DescribeGroups: %d groups", len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.Error != nil {
		return "", nil, g.Error
	}
	out := map[string][]int{}
	for _, member := range g.Members {
		ps := []int{}
		for _, t := range member.MemberAssignments.Topics {
			ps = append(ps, t.Partitions...)
		}
		sort.Ints(ps)
		out[member.ClientID] = ps
	}
	return g.GroupState, out, nil
}

func kgoGroupScenario(bootstrap string) (string, error) {
	topic := topicName("kg-group")
	group := topicName("kg-g")
	if err := kgoCreateTopic(bootstrap, topic, 3); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), scenarioMax)
	defer cancel()
	client := kgoClient(bootstrap)
	a := startKgoReader(bootstrap, group, topic, "A")
	defer a.stop()
	idA, idB := "booblik-compat-kafka-go-A", "booblik-compat-kafka-go-B"
	var state string
	var assigned map[string][]int
	if err := waitFor("A assigned [0 1 2]", func() bool {
		state, assigned, _ = kgoAssignments(ctx, client, group)
		return state == "Stable" && fmt.Sprint(assigned[idA]) == "[0 1 2]"
	}); err != nil {
		return "", fmt.Errorf("%w (state %q, %v)", err, state, assigned)
	}
	b := startKgoReader(bootstrap, group, topic, "B")
	defer b.stop()
	if err := waitFor("A and B splitting the 3 partitions (DescribeGroups)", func() bool {
		state, assigned, _ = kgoAssignments(ctx, client, group)
		return state == "Stable" && len(assigned) == 2 && len(assigned[idA]) > 0 && len(assigned[idB]) > 0 && len(assigned[idA])+len(assigned[idB]) == 3
	}); err != nil {
		return "", fmt.Errorf("%w (state %q, %v)", err, state, assigned)
	}
	pa, pb := []int32{}, []int32{}
	for _, p := range assigned[idA] {
		pa = append(pa, int32(p))
	}
	for _, p := range assigned[idB] {
		pb = append(pb, int32(p))
	}
	first, err := kgoWrite(bootstrap, topic, makeRecords("group-1", 30, 3), 0, 30, map[int32]int64{})
	if err != nil {
		return "", err
	}
	wantA, wantB := subset(first, pa), subset(first, pb)
	if err := waitFor("each reader reading its partitions' records", func() bool {
		return len(a.read()) >= len(wantA) && len(b.read()) >= len(wantB)
	}); err != nil {
		return "", fmt.Errorf("%w (A read %d of %d, B %d of %d)", err, len(a.read()), len(wantA), len(b.read()), len(wantB))
	}
	time.Sleep(300 * time.Millisecond)
	if err := diffError(compare(wantA, a.read())); err != nil {
		return "", fmt.Errorf("reader A (%v): %w", pa, err)
	}
	if err := diffError(compare(wantB, b.read())); err != nil {
		return "", fmt.Errorf("reader B (%v): %w", pb, err)
	}
	if err := b.stop(); err != nil {
		return "", fmt.Errorf("B: %w", err)
	}
	if err := waitFor("A assigned [0 1 2] after B left", func() bool {
		state, assigned, _ = kgoAssignments(ctx, client, group)
		return state == "Stable" && len(assigned) == 1 && fmt.Sprint(assigned[idA]) == "[0 1 2]"
	}); err != nil {
		return "", fmt.Errorf("%w (state %q, %v)", err, state, assigned)
	}
	second, err := kgoWrite(bootstrap, topic, makeRecords("group-2", 15, 3), 0, 15, map[int32]int64{0: 10, 1: 10, 2: 10})
	if err != nil {
		return "", err
	}
	all := map[at]rec{}
	for k, v := range wantA {
		all[k] = v
	}
	for k, v := range second {
		all[k] = v
	}
	if err := waitFor("A reading the 15 new records", func() bool { return len(a.read()) >= len(all) }); err != nil {
		return "", fmt.Errorf("%w (A read %d of %d)", err, len(a.read()), len(all))
	}
	time.Sleep(300 * time.Millisecond)
	if err := diffError(compare(all, a.read())); err != nil {
		return "", fmt.Errorf("reader A after B left: %w", err)
	}
	if err := a.stop(); err != nil {
		return "", fmt.Errorf("A: %w", err)
	}
	if len(a.dupes)+len(b.dupes) > 0 {
		return "", failf("records read twice: %v %v", a.dupes, b.dupes)
	}
	fetched, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2}}})
	if err != nil || fetched.Error != nil {
		return "", failf("OffsetFetch: %v %v", err, fetched)
	}
	committed := make([]int64, 3)
	for _, p := range fetched.Topics[topic] {
		committed[p.Partition] = p.CommittedOffset
	}
	if fmt.Sprint(committed) != "[15 15 15]" {
		return "", failf("committed offsets %v, want [15 15 15]", committed)
	}
	third, err := kgoWrite(bootstrap, topic, makeRecords("group-3", 3, 3), 0, 3, map[int32]int64{0: 15, 1: 15, 2: 15})
	if err != nil {
		return "", err
	}
	c := startKgoReader(bootstrap, group, topic, "C")
	defer c.stop()
	if err := waitFor("C reading the 3 records after the commits", func() bool { return len(c.read()) >= 3 }); err != nil {
		return "", err
	}
	time.Sleep(500 * time.Millisecond)
	if err := diffError(compare(third, c.read())); err != nil {
		return "", fmt.Errorf("reader C (resume): %w", err)
	}
	if err := c.stop(); err != nil {
		return "", fmt.Errorf("C: %w", err)
	}
	listed, err := client.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil || listed.Error != nil {
		return "", failf("ListGroups: %v %v", err, listed)
	}
	protocolType := "(not listed)"
	for _, g := range listed.Groups {
		if g.GroupID == group {
			protocolType = g.ProtocolType
		}
	}
	if protocolType != "consumer" {
		return "", failf("ListGroups: the group's protocol type %q", protocolType)
	}
	state, assigned, err = kgoAssignments(ctx, client, group)
	if err != nil || state != "Empty" || len(assigned) != 0 {
		return "", failf("DescribeGroups after every reader closed: %q %v %v", state, assigned, err)
	}
	deleted, err := client.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err != nil || deleted.Errors[group] != nil {
		return "", failf("DeleteGroups: %v %v", err, deleted)
	}
	after, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0}}})
	if err != nil || len(after.Topics[topic]) != 1 || after.Topics[topic][0].CommittedOffset != -1 {
		return "", failf("OffsetFetch after DeleteGroups: %v %+v", err, after)
	}
	return fmt.Sprintf("A %v, B %v (DescribeGroups); 30 records read by their owners; B closed, A got [0 1 2] and read the 15 new ones once; committed %v (OffsetFetch); C resumed with exactly the 3 new records; listed (consumer), Empty, deleted (offset -1 after)", pa, pb, committed), nil
}

// kgoConfigScenario: Client.IncrementalAlterConfigs and CreatePartitions, DescribeConfigs of
// broker 1, then Client.AlterConfigs (API 33; served by booblik since 2026-12-03): reported as
// KNOWN when the broker closes the connection on it, as one without AlterConfigs does.
func kgoConfigScenario(bootstrap string) (string, error) {
	topic := topicName("kg-configs")
	if err := kgoCreateTopic(bootstrap, topic, 1); err != nil {
		return "", err
	}
	ctx, cancel := kgoCtx()
	defer cancel()
	client := kgoClient(bootstrap)
	inc, err := client.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "retention.ms", Value: "7200000", ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	if err != nil || len(inc.Resources) != 1 || inc.Resources[0].Error != nil {
		return "", failf("IncrementalAlterConfigs: %v %+v", err, inc)
	}
	readBack := func() (string, error) {
		resp, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"retention.ms"},
		}}})
		if err != nil {
			return "", err
		}
		for _, e := range resp.Resources[0].ConfigEntries {
			if e.ConfigName == "retention.ms" {
				return e.ConfigValue, nil
			}
		}
		return "", failf("retention.ms not described")
	}
	if got, err := readBack(); err != nil || got != "7200000" {
		return "", failf("retention.ms after IncrementalAlterConfigs: %q %v", got, err)
	}
	broker, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeBroker, ResourceName: "1",
	}}})
	if err != nil || len(broker.Resources) != 1 || broker.Resources[0].Error != nil || len(broker.Resources[0].ConfigEntries) == 0 {
		return "", failf("DescribeConfigs of broker 1: %v %+v", err, broker)
	}
	parts, err := client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 3}}})
	if err != nil || parts.Errors[topic] != nil {
		return "", failf("CreatePartitions: %v %+v", err, parts)
	}
	if err := waitFor("3 partitions in the metadata", func() bool {
		meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		return err == nil && len(meta.Topics) == 1 && len(meta.Topics[0].Partitions) == 3
	}); err != nil {
		return "", err
	}
	rest := fmt.Sprintf("IncrementalAlterConfigs retention.ms=7200000 read back; broker 1: %d configs; CreatePartitions 1 -> 3", len(broker.Resources[0].ConfigEntries))
	altered, err := client.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.AlterConfigRequestConfig{{Name: "retention.ms", Value: "3600000"}},
	}}})
	if err != nil {
		observe("kafka-go AlterConfigs error", err)
		// kafka-go does not check that the broker advertises the API: for a key missing from
		// ApiVersions it sends version 0 (transport.go picks versions for the advertised keys only,
		// protocol/conn.go RoundTrip takes the map's zero value), and booblik closes the connection
		// on an API it does not serve, as Kafka does on an unknown API key.
		if versions.sentAny(33) && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
			// booblik served AlterConfigs (33) only from 2026-12-03; before, this was its answer.
			return "", errKnown{rest + "; the broker does not serve AlterConfigs (33): kafka-go sends it (v0) although ApiVersions does not list it, and the broker closes the connection: " + err.Error()}
		}
		return "", fmt.Errorf("AlterConfigs: %w", err)
	}
	for _, e := range altered.Errors {
		if e != nil {
			return "", fmt.Errorf("AlterConfigs: %w", e)
		}
	}
	if got, err := readBack(); err != nil || got != "3600000" {
		return "", failf("retention.ms after AlterConfigs: %q %v", got, err)
	}
	return rest + "; AlterConfigs retention.ms=3600000 read back", nil
}

// kgoConnScenario: the low-level kafka.Conn of kafka-go's README: DialLeader, WriteMessages,
// WriteCompressedMessagesAt (snappy; it returns the first offset), Seek and ReadBatch.
func kgoConnScenario(bootstrap string) (string, error) {
	topic := topicName("kg-conn-rw")
	if err := kgoCreateTopic(bootstrap, topic, 1); err != nil {
		return "", err
	}
	ctx, cancel := kgoCtx()
	defer cancel()
	conn, err := kgoDialer("booblik-compat-kafka-go-leader").DialLeader(ctx, "tcp", bootstrap, topic, 0)
	if err != nil {
		return "", fmt.Errorf("DialLeader: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitMax))
	records := makeRecords("conn", 20, 1)
	msgs := make([]kafka.Message, len(records))
	for i, r := range records {
		msgs[i] = toKgoMessage(r)
	}
	if _, err := conn.WriteMessages(msgs[:10]...); err != nil {
		return "", fmt.Errorf("Conn.WriteMessages: %w", err)
	}
	_, partition, offset, _, err := conn.WriteCompressedMessagesAt(kafka.Snappy.Codec(), msgs[10:]...)
	if err != nil {
		return "", fmt.Errorf("Conn.WriteCompressedMessagesAt: %w", err)
	}
	if partition != 0 || offset != 10 {
		return "", failf("WriteCompressedMessagesAt: partition %d offset %d, want 0 and 10", partition, offset)
	}
	expected := map[at]rec{}
	for i, r := range records {
		expected[at{0, int64(i)}] = r
	}
	readFrom := func(from int64) (map[at]rec, error) {
		if _, err := conn.Seek(from, kafka.SeekAbsolute); err != nil {
			return nil, fmt.Errorf("Seek %d: %w", from, err)
		}
		got := map[at]rec{}
		for len(got) < 20-int(from) {
			batch := conn.ReadBatch(1, 1<<20)
			n := 0
			for {
				m, err := batch.ReadMessage()
				if err != nil {
					break
				}
				n++
				got[at{0, m.Offset}] = fromKgoMessage(m)
			}
			if err := batch.Close(); err != nil {
				return nil, fmt.Errorf("Batch.Close after %d records: %w", len(got), err)
			}
			if n == 0 {
				return nil, failf("an empty batch after %d records", len(got))
			}
		}
		return got, nil
	}
	got, err := readFrom(0)
	if err != nil {
		return "", err
	}
	if err := diffError(compare(expected, got)); err != nil {
		return "", err
	}
	got, err = readFrom(15)
	if err != nil {
		return "", err
	}
	want := map[at]rec{}
	for k, v := range expected {
		if k.offset >= 15 {
			want[k] = v
		}
	}
	if err := diffError(compare(want, got)); err != nil {
		return "", fmt.Errorf("from 15 (inside the snappy batch): %w", err)
	}
	stored, err := storedBatches(bootstrap, topic, 0)
	if err != nil {
		return "", err
	}
	if len(stored) != 2 || stored[0].codec.String() != "none" || stored[1].codec.String() != "snappy" {
		return "", failf("stored batches: %+v, want one plain and one snappy", stored)
	}
	return "10 records by WriteMessages, 10 by WriteCompressedMessagesAt(snappy) at offset 10; ReadBatch from 0 and from 15 exact; stored as one plain and one snappy batch", nil
}

// kgoBulkScenario: 3000 records (lz4, batches of 100) read back with MaxBytes 16 KiB, so that
// fetches end inside partitions, and by Writer acks none and one.
func kgoBulkScenario(bootstrap string) (string, error) {
	topic := topicName("kg-bulk")
	if err := kgoCreateTopic(bootstrap, topic, 3); err != nil {
		return "", err
	}
	expected, err := kgoWrite(bootstrap, topic, makeRecords("bulk", 3000, 3), kafka.Lz4, 300, map[int32]int64{})
	if err != nil {
		return "", err
	}
	got := map[at]rec{}
	for p := range 3 {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers: []string{bootstrap}, Topic: topic, Partition: p,
			MinBytes: 1, MaxBytes: 16 << 10, MaxWait: 200 * time.Millisecond, Dialer: kgoDialer("booblik-compat-kafka-go-bulk"),
		})
		ctx, cancel := kgoCtx()
		for n := 0; n < 1000; n++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				cancel()
				r.Close()
				return "", fmt.Errorf("partition %d: ReadMessage after %d: %w", p, n, err)
			}
			got[at{int32(m.Partition), m.Offset}] = fromKgoMessage(m)
		}
		cancel()
		r.Close()
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
	acks := topicName("kg-acks")
	if err := kgoCreateTopic(bootstrap, acks, 1); err != nil {
		return "", err
	}
	records := makeRecords("acks", 10, 1)
	for i, required := range []kafka.RequiredAcks{kafka.RequireNone, kafka.RequireOne} {
		w := &kafka.Writer{Addr: kafka.TCP(bootstrap), Topic: acks, RequiredAcks: required, Transport: kgoTransport, BatchTimeout: 10 * time.Millisecond}
		msgs := []kafka.Message{}
		for _, r := range records[i*5 : i*5+5] {
			msgs = append(msgs, toKgoMessage(r))
		}
		ctx, cancel := kgoCtx()
		err := w.WriteMessages(ctx, msgs...)
		cancel()
		w.Close()
		if err != nil {
			return "", fmt.Errorf("Writer acks %d: %w", required, err)
		}
	}
	wantAcks := map[at]rec{}
	for i, r := range records {
		wantAcks[at{0, int64(i)}] = r
	}
	var gotAcks map[at]rec
	if err := waitFor("the acks=0 records stored", func() bool {
		gotAcks, err = kgoReadExactly(bootstrap, acks, 0, 0, 10)
		return err == nil
	}); err != nil {
		return "", fmt.Errorf("%w: %v", err, err)
	}
	if err := diffError(compare(wantAcks, gotAcks)); err != nil {
		return "", fmt.Errorf("acks none/one: %w", err)
	}
	return fmt.Sprintf("3000 records in %d lz4 batches read back exactly with MaxBytes 16 KiB; Writer acks none then one: 10 records read back", batches), nil
}

// kgoLogAppendTimeScenario: a topic with message.timestamp.type=LogAppendTime: the append time
// Conn.WriteCompressedMessagesAt returns is the broker's; the time a Reader reads is observed.
func kgoLogAppendTimeScenario(bootstrap string) (string, error) {
	topic := topicName("kg-logappend")
	if err := kgoCreateTopic(bootstrap, topic, 1, kafka.ConfigEntry{ConfigName: "message.timestamp.type", ConfigValue: "LogAppendTime"}); err != nil {
		return "", err
	}
	ctx, cancel := kgoCtx()
	defer cancel()
	before := time.Now().Add(-time.Second)
	records := makeRecords("logappend", 3, 1)
	msgs := make([]kafka.Message, len(records))
	for i, r := range records {
		msgs[i] = toKgoMessage(r)
	}
	var appendTime time.Time
	var offset int64
	var writeErr error
	if err := waitFor("a write to the new topic", func() bool {
		conn, err := kgoDialer("booblik-compat-kafka-go-leader").DialLeader(ctx, "tcp", bootstrap, topic, 0)
		if err != nil {
			writeErr = err
			return false
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _, offset, appendTime, writeErr = conn.WriteCompressedMessagesAt(kafka.Gzip.Codec(), msgs...)
		return writeErr == nil
	}); err != nil {
		return "", fmt.Errorf("%w: %v", err, writeErr)
	}
	after := time.Now().Add(time.Second)
	observe("kafka-go LogAppendTime append time is the broker's", !appendTime.Before(before) && !appendTime.After(after))
	if offset != 0 || appendTime.Before(before) || appendTime.After(after) {
		return "", failf("WriteCompressedMessagesAt: offset %d, append time %v (want between %v and %v)", offset, appendTime, before, after)
	}
	got, err := kgoReadExactly(bootstrap, topic, 0, 0, 3)
	if err != nil {
		return "", err
	}
	// kafka-go's Reader takes each record's time from the batch's first timestamp and the record's
	// delta (message_reader.go, readMessageV2) whatever the batch's timestamp type: on a
	// LogAppendTime topic it reads the producer's CreateTime, as the broker keeps the first
	// timestamp and sets the max timestamp and the type bit (Kafka's rule). Observed, not judged.
	kinds := map[string]bool{}
	for k, r := range got {
		switch r.tsMs {
		case appendTime.UnixMilli():
			kinds["the append time"] = true
		case records[k.offset].tsMs:
			kinds["the producer's CreateTime"] = true
		default:
			return "", failf("read %v with timestamp %d: neither the append time %d nor the CreateTime %d", k, r.tsMs, appendTime.UnixMilli(), records[k.offset].tsMs)
		}
	}
	read := fmt.Sprint(keysOfSet(kinds))
	observe("kafka-go Reader's record time on a LogAppendTime topic", read)
	return "3 records written with CreateTime in 2023 (gzip): WriteCompressedMessagesAt returned the broker's append time; the Reader read " + read, nil
}

func keysOfSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
