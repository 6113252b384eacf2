// The compat scenarios of the two Go clients not covered elsewhere, IBM/sarama and
// segmentio/kafka-go, against a Kafka-speaking server (bench/compat/go.ts runs them).
//
// Usage: go run . <sarama-default|sarama-newest|kafka-go> <bootstrap host:port> [word ...]
//
// Each scenario prints one `RESULT {json}` line: PASS, FAIL, or KNOWN for a gap docs/kafka.md
// documents. Shared here: the scenario registry, the records every producer scenario sends, the
// comparison of what a consumer read with what was acknowledged, a raw Fetch v4 that shows the stored
// batches (codec, producer id, sequence), and a net.Conn wrapper that records the (API key, version)
// of every request a client writes, printed as one `VERSIONS {json}` line at the end.
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// scenarioMax bounds every scenario; each wait inside has its own, shorter bound.
const scenarioMax = 150 * time.Second

// waitMax bounds one wait for a condition (a rebalance, records arriving).
const waitMax = 60 * time.Second

type scenarioFn func() (string, error)

type scenarioEntry struct {
	name string
	fn   scenarioFn
}

var scenarios []scenarioEntry

func register(name string, fn scenarioFn) { scenarios = append(scenarios, scenarioEntry{name, fn}) }

// errKnown marks a gap docs/kafka.md documents: reported as KNOWN, not counted as a failure.
type errKnown struct{ msg string }

func (e errKnown) Error() string { return e.msg }

func failf(format string, args ...any) error { return fmt.Errorf(format, args...) }

type result struct {
	Scenario string  `json:"scenario"`
	Status   string  `json:"status"`
	Reason   string  `json:"reason"`
	Seconds  float64 `json:"seconds"`
}

func runAll(only []string) int {
	failed := 0
	for _, s := range scenarios {
		if len(only) > 0 {
			match := false
			for _, word := range only {
				if strings.Contains(s.name, word) {
					match = true
				}
			}
			if !match {
				continue
			}
		}
		started := time.Now()
		fmt.Fprintf(os.Stderr, "=== %s\n", s.name)
		type outcome struct {
			reason string
			err    error
		}
		done := make(chan outcome, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					done <- outcome{"", fmt.Errorf("panic: %v", p)}
				}
			}()
			reason, err := s.fn()
			done <- outcome{reason, err}
		}()
		var o outcome
		select {
		case o = <-done:
		case <-time.After(scenarioMax):
			o = outcome{"", fmt.Errorf("scenario bound of %s reached", scenarioMax)}
		}
		r := result{Scenario: s.name, Status: "PASS", Reason: o.reason}
		var known errKnown
		if errors.As(o.err, &known) {
			r.Status, r.Reason = "KNOWN", known.msg
		} else if o.err != nil {
			r.Status, r.Reason = "FAIL", o.err.Error()
			failed++
			fmt.Fprintf(os.Stderr, "FAIL %s: %v\n", s.name, o.err)
		}
		r.Seconds = float64(time.Since(started).Milliseconds()) / 1000
		line, _ := json.Marshal(r)
		fmt.Printf("RESULT %s\n", line)
	}
	return failed
}

func observe(what string, value any) { fmt.Printf("OBSERVE %s = %v\n", what, value) }

func waitFor(what string, condition func() bool) error {
	deadline := time.Now().Add(waitMax)
	for time.Now().Before(deadline) {
		if condition() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return failf("timed out after %s waiting for %s", waitMax, what)
}

var runID = time.Now().UnixNano() % 1_000_000_000

func topicName(what string) string { return fmt.Sprintf("go-%s-%d", what, runID) }

// --- The records: keyed, with headers and CreateTime timestamps ----------------------------------

// baseTsMs is the CreateTime of the first record: a fixed time in the past, whole seconds.
const baseTsMs = 1_700_000_000_000

type header struct{ key, value string }

type rec struct {
	partition int32
	key       []byte
	value     []byte
	headers   []header
	tsMs      int64
}

type at struct {
	partition int32
	offset    int64
}

// makeRecords: count records; key k<i % 7>, a value naming the tag (up to 512 more binary bytes),
// three headers (one name twice, one empty value), timestamps 1 s apart, partition i % partitions.
func makeRecords(tag string, count int, partitions int32) []rec {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	out := make([]rec, count)
	for i := range count {
		value := []byte(fmt.Sprintf("%s value %d ", tag, i))
		for range i % 3 {
			value = append(value, all...)
		}
		out[i] = rec{
			partition: int32(i) % partitions,
			key:       []byte(fmt.Sprintf("k%d", i%7)),
			value:     value,
			headers:   []header{{"h-index", fmt.Sprint(i)}, {"h-tag", tag}, {"h-index", ""}},
			tsMs:      baseTsMs + int64(i)*1000,
		}
	}
	return out
}

func describeRec(r rec) string {
	v := r.value
	if len(v) > 24 {
		v = v[:24]
	}
	return fmt.Sprintf("key %q value %q… headers %v ts %d", r.key, v, r.headers, r.tsMs)
}

// compare: the differences between what was sent and what was read, by partition and offset.
func compare(expected, got map[at]rec) []string {
	var diffs []string
	keys := map[at]bool{}
	for k := range expected {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]at, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].partition != sorted[j].partition {
			return sorted[i].partition < sorted[j].partition
		}
		return sorted[i].offset < sorted[j].offset
	})
	for _, k := range sorted {
		e, eok := expected[k]
		g, gok := got[k]
		switch {
		case !eok:
			diffs = append(diffs, fmt.Sprintf("%v: read but not sent: %s", k, describeRec(g)))
		case !gok:
			diffs = append(diffs, fmt.Sprintf("%v: sent but not read", k))
		default:
			if !bytes.Equal(e.key, g.key) {
				diffs = append(diffs, fmt.Sprintf("%v: key sent %q read %q", k, e.key, g.key))
			}
			if !bytes.Equal(e.value, g.value) {
				diffs = append(diffs, fmt.Sprintf("%v: value differs (%d bytes sent, %d read)", k, len(e.value), len(g.value)))
			}
			if fmt.Sprint(e.headers) != fmt.Sprint(g.headers) {
				diffs = append(diffs, fmt.Sprintf("%v: headers sent %v read %v", k, e.headers, g.headers))
			}
			if e.tsMs != g.tsMs {
				diffs = append(diffs, fmt.Sprintf("%v: timestamp sent %d read %d", k, e.tsMs, g.tsMs))
			}
		}
	}
	return diffs
}

func diffError(diffs []string) error {
	if len(diffs) == 0 {
		return nil
	}
	n := min(3, len(diffs))
	return failf("%d differences, first: %s", len(diffs), strings.Join(diffs[:n], "; "))
}

// --- Request versions: a net.Conn that reads the request headers the client writes ----------------

type versionLog struct {
	mu   sync.Mutex
	seen map[int16]map[int16]int
}

var versions = &versionLog{seen: map[int16]map[int16]int{}}

func (v *versionLog) add(key, version int16) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen[key] == nil {
		v.seen[key] = map[int16]int{}
	}
	v.seen[key][version]++
}

var apiNames = map[int16]string{
	0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit", 9: "OffsetFetch",
	10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
	15: "DescribeGroups", 16: "ListGroups", 17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics",
	20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
	24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit",
	32: "DescribeConfigs", 33: "AlterConfigs", 35: "DescribeLogDirs", 37: "CreatePartitions",
	42: "DeleteGroups", 44: "IncrementalAlterConfigs", 47: "OffsetDelete", 60: "DescribeCluster",
}

// print: one line, API name -> the versions sent (with counts), sorted by API key.
func (v *versionLog) print() {
	v.mu.Lock()
	defer v.mu.Unlock()
	keys := make([]int, 0, len(v.seen))
	for k := range v.seen {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	parts := []string{}
	for _, k := range keys {
		name := apiNames[int16(k)]
		if name == "" {
			name = fmt.Sprintf("api%d", k)
		}
		vs := []string{}
		for version, count := range v.seen[int16(k)] {
			vs = append(vs, fmt.Sprintf("v%d×%d", version, count))
		}
		sort.Strings(vs)
		parts = append(parts, fmt.Sprintf("%s %s", name, strings.Join(vs, ",")))
	}
	fmt.Printf("VERSIONS %s\n", strings.Join(parts, "; "))
}

// recordingConn parses the stream the client writes: size (int32), api key (int16), version (int16).
type recordingConn struct {
	net.Conn
	header []byte // the start of the current frame, up to 8 bytes
	skip   int    // bytes of the current frame still to pass after its header
}

func (c *recordingConn) Write(b []byte) (int, error) {
	rest := b
	for len(rest) > 0 {
		if c.skip > 0 {
			n := min(c.skip, len(rest))
			c.skip -= n
			rest = rest[n:]
			continue
		}
		need := 8 - len(c.header)
		n := min(need, len(rest))
		c.header = append(c.header, rest[:n]...)
		rest = rest[n:]
		if len(c.header) == 8 {
			size := int(binary.BigEndian.Uint32(c.header[0:4]))
			versions.add(int16(binary.BigEndian.Uint16(c.header[4:6])), int16(binary.BigEndian.Uint16(c.header[6:8])))
			c.skip = size - 4
			c.header = c.header[:0]
		}
	}
	return c.Conn.Write(b)
}

func wrapConn(conn net.Conn, err error) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: conn}, nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: go run . <sarama-default|sarama-newest|kafka-go> <bootstrap> [word ...]")
		os.Exit(2)
	}
	client, bootstrap, only := os.Args[1], os.Args[2], os.Args[3:]
	switch client {
	case "sarama-default":
		registerSarama(bootstrap, false)
	case "sarama-newest":
		registerSarama(bootstrap, true)
	case "kafka-go":
		registerKafkaGo(bootstrap)
	default:
		fmt.Fprintf(os.Stderr, "unknown client %q\n", client)
		os.Exit(2)
	}
	failed := runAll(only)
	versions.print()
	if failed > 0 {
		os.Exit(1)
	}
}

// sentAny: whether a request of this API key was written on any connection.
func (v *versionLog) sentAny(key int16) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen[key]) > 0
}
