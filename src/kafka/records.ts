/**
 * Produce and Fetch over the broker layer: what a Kafka producer's batches become on append, and
 * what a Kafka consumer gets from the stored entries.
 *
 * Produce: each partition's record set goes to `Partition.appendQueued` as it came (a view into the
 * request frame), where it is validated (common.md §4: `validateBatch`, whole request or nothing),
 * copied into the turn's coalesced group shared with the native PRODUCEs (or, idempotent, corrected
 * or large, appended on `append`'s path) and stamped. Before that, the Kafka rules the broker layer does not know: magic 2 only (a magic 0/1
 * MessageSet of a pre-0.11 client is refused with UNSUPPORTED_FOR_MESSAGE_FORMAT), exactly one batch
 * per partition (Kafka's LogValidator rule for magic 2), no transactional batch (no transactions).
 * Rejections map to Kafka's codes by the check that failed (`batchErrorCode`).
 *
 * Fetch: from the entry containing the fetch offset (a read from inside a batch returns that whole
 * batch; clients drop the records below the offset they asked for), whole entries only, the first
 * always whole even beyond the byte limits (KIP-74; kafkajs never grows its limit, so a truncated
 * first batch would stall it), nothing at offset = high watermark (kafkajs's HW+1 commit trap,
 * kafka-wire.md §0.5). Entries are stored framed, `[u32 length][u32 crc32c][batch]`; Kafka's records
 * field holds bare batches, so each entry is sent without its 8-byte frame. Copy path (the
 * default; docs/kafka.md "Fetch path" says why): `Partition.read` reads and checks the entries into
 * an arena from the listener's FetchBufferPool, the response carries views of each batch, and the
 * caller's `answer` encodes them before the arena goes back to the pool. Sendfile path (plain ports
 * under `--kafka-fetch-path sendfile`): a run of batches of KAFKA_SENDFILE_BATCH_BYTES_MIN and more
 * stays in its segment file (`fileBatches`), held by a lease that the answer releases once sent;
 * only the first entry of the run is checked.
 *
 * Invariant: every lease a round takes is released exactly once: by the round when it is not
 * answered (a long poll waits, or the answer throws), else by the answer's release.
 */
import { preadFull } from "../../ffi/file.ts";
import type { Broker } from "../broker/broker.ts";
import type { AppendAck, AppendSender, FileLease, Partition, ReadArena } from "../broker/partition.ts";
import type { Offset } from "../domain/ids.ts";
import {
  ENTRY_HEADER_BYTES,
  FETCH_ANSWER_FREE_BYTES,
  FETCH_RESPONSE_BYTES_MAX,
  KAFKA_FETCH_BUFFER_BYTES_MAX,
  KAFKA_FETCH_BUFFER_STEP_BYTES,
  KAFKA_FETCH_WAIT_MS_MAX,
  KAFKA_SENDFILE_BATCH_BYTES_MIN,
} from "../domain/limits.ts";
import {
  ATTRIBUTE_TRANSACTIONAL,
  ATTRIBUTES_OFFSET,
  BATCH_LENGTH_EXCLUDED_BYTES,
  BATCH_LENGTH_OFFSET,
  InvalidBatchError,
  int32At,
  MAGIC_OFFSET,
  MAGIC_V2,
} from "../record/batch.ts";
import { KAFKA_ERROR } from "./apis.ts";
import { type KafkaError, kafkaErrorOf } from "./errors.ts";
import type { FetchBufferPool } from "./fetch-buffers.ts";
import {
  type FetchPartitionResponse,
  type FetchRecordPiece,
  type FetchRequest,
  type FetchResponse,
  type FileBatch,
  type ProducePartitionResponse,
  type ProduceRequest,
  type ProduceTopicResponse,
  pieceBytes,
} from "./messages.ts";

/** Kafka's code for a batch the broker layer refused, by the rule it broke (batch.ts BatchCheck). */
export function batchErrorCode(error: InvalidBatchError): number {
  switch (error.check) {
    case "magic":
      return KAFKA_ERROR.UNSUPPORTED_FOR_MESSAGE_FORMAT;
    case "codec":
      return KAFKA_ERROR.UNSUPPORTED_COMPRESSION_TYPE;
    case "base-offset":
    case "record-count":
    case "last-offset-delta":
    case "control":
    case "sequence":
    case "key":
      return KAFKA_ERROR.INVALID_RECORD;
    default:
      // size, batch-length, crc, int64, record: the bytes are not what the producer meant.
      return KAFKA_ERROR.CORRUPT_MESSAGE;
  }
}

/** The Kafka-only rules, checked before the broker layer sees the records. */
function refuseRecordSet(records: Uint8Array | null): KafkaError | undefined {
  if (records === null || records.length === 0) {
    return {
      code: KAFKA_ERROR.INVALID_RECORD,
      message: "the partition's record set is empty: a Produce carries one record batch per partition",
    };
  }
  if (records.length > MAGIC_OFFSET) {
    const magic = (records[MAGIC_OFFSET]! << 24) >> 24;
    if (magic !== MAGIC_V2) {
      return {
        code: KAFKA_ERROR.UNSUPPORTED_FOR_MESSAGE_FORMAT,
        message: `a magic ${magic} message set (the format before Kafka 0.11) is not accepted: booblik stores RecordBatch v2 (magic 2) only; upgrade the client or let it use Produce v3 or later`,
      };
    }
  }
  if (records.length >= BATCH_LENGTH_EXCLUDED_BYTES) {
    const batchBytes = BATCH_LENGTH_EXCLUDED_BYTES + int32At(records, BATCH_LENGTH_OFFSET);
    if (batchBytes > 0 && batchBytes < records.length) {
      return {
        code: KAFKA_ERROR.INVALID_RECORD,
        message: `the record set holds more than one batch (the first ends at byte ${batchBytes} of ${records.length}); Kafka accepts one batch per partition`,
      };
    }
  }
  if (
    records.length > ATTRIBUTES_OFFSET + 1 &&
    (records[ATTRIBUTES_OFFSET + 1]! & ATTRIBUTE_TRANSACTIONAL) !== 0
  ) {
    return {
      code: KAFKA_ERROR.INVALID_RECORD,
      message: "transactional batches are not accepted: booblik has no transactions",
    };
  }
  return undefined;
}

function failed(index: number, error: KafkaError): ProducePartitionResponse {
  return {
    index,
    errorCode: error.code,
    baseOffset: -1,
    logAppendTimeMs: -1,
    logStartOffset: -1,
    errorMessage: error.message,
  };
}

/** What the Kafka listener moved, for /metrics (`booblik_kafka_produce_*`, `booblik_kafka_fetch_bytes_total`). */
export interface KafkaTraffic {
  /** Records appended by Produce (acknowledged appends only). */
  produceRecords: number;
  /** Their record-set bytes, as sent. */
  produceBytes: number;
  /** Record bytes in Fetch answers (both fetch paths). */
  fetchBytes: number;
}

export function newKafkaTraffic(): KafkaTraffic {
  return { produceRecords: 0, produceBytes: 0, fetchBytes: 0 };
}

/**
 * Appends every partition's batch; all appends start in request order before any is awaited, so
 * partitions of one request share group commits. Resolves with the answer of each partition.
 */
export async function produceRecords(
  broker: Broker,
  request: ProduceRequest,
  /** The ACL refusal of a topic (TOPIC_AUTHORIZATION_FAILED), asked once per topic; none: allowed. */
  refuse: (topic: string) => KafkaError | undefined = () => undefined,
  traffic: KafkaTraffic = newKafkaTraffic(),
  /** The connection, for the gather before a force (src/broker/partition.ts). */
  sender?: AppendSender,
): Promise<ProduceTopicResponse[]> {
  const acksValid = request.acks === -1 || request.acks === 0 || request.acks === 1;
  const topics = request.topics.map((topic) => {
    const aclRefusal = refuse(topic.name);
    return {
      name: topic.name,
      partitions: topic.partitions.map(async (data): Promise<ProducePartitionResponse> => {
        if (aclRefusal !== undefined) return failed(data.index, aclRefusal);
        if (!acksValid) {
          return failed(data.index, {
            code: KAFKA_ERROR.INVALID_REQUIRED_ACKS,
            message: `acks must be -1, 0 or 1, got ${request.acks}`,
          });
        }
        if (request.transactionalId !== null) {
          return failed(data.index, {
            code: KAFKA_ERROR.INVALID_RECORD,
            message: "transactional produce is not supported: booblik has no transactions",
          });
        }
        const refusal = refuseRecordSet(data.records);
        if (refusal !== undefined) return failed(data.index, refusal);
        let partition: Partition;
        try {
          partition = broker.partition(topic.name, data.index);
        } catch (error) {
          return failed(data.index, kafkaErrorOf(error));
        }
        try {
          const ack = await appendQueuedAck(partition, data.records!, sender);
          traffic.produceRecords += ack.recordCount;
          traffic.produceBytes += data.records!.length;
          return {
            index: data.index,
            errorCode: KAFKA_ERROR.NONE,
            baseOffset: ack.firstOffset,
            logAppendTimeMs: ack.logAppendTimeMs,
            logStartOffset: partition.logStartOffset,
            errorMessage: null,
          };
        } catch (error) {
          if (error instanceof InvalidBatchError)
            return failed(data.index, { code: batchErrorCode(error), message: error.message });
          return failed(data.index, kafkaErrorOf(error));
        }
      }),
    };
  });
  const answered: ProduceTopicResponse[] = [];
  for (const topic of topics)
    answered.push({ name: topic.name, partitions: await Promise.all(topic.partitions) });
  return answered;
}

/**
 * `Partition.appendQueued` as a promise: a small batch without a producer id joins the turn's
 * coalesced group with the native PRODUCEs (one pwrite per partition per turn and, under `force`,
 * one force, with the gather for the connections it answered); any other takes `append`'s path.
 * What it refuses, it refuses as `append` does (thrown here, so the promise rejects).
 */
function appendQueuedAck(
  partition: Partition,
  records: Uint8Array,
  sender: AppendSender | undefined,
): Promise<AppendAck> {
  return new Promise<AppendAck>((resolve, reject) => {
    partition.appendQueued(records, {
      sender,
      appended(firstOffset, recordCount, durability, logAppendTimeMs) {
        resolve({ firstOffset: firstOffset as Offset, recordCount, durability, logAppendTimeMs });
      },
      appendFailed: reject,
    });
  });
}

/** Kafka's "the fetch session is unknown": booblik keeps no fetch sessions (KIP-227). */
const FETCH_SESSION_ID_NOT_FOUND = 70;

/** The bare batches of framed entries, as views: each entry without its `[length][crc]` frame. */
export function bareBatchesOf(framed: Uint8Array): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  for (let position = 0; position + 8 <= framed.length; ) {
    const length = int32At(framed, position) >>> 0;
    pieces.push(framed.subarray(position + 8, position + 8 + length));
    position += 8 + length;
  }
  return pieces;
}

/** Where one round's copying reads land: an arena from the pool, taken at the first read. */
interface RoundReads {
  readonly buffers: FetchBufferPool;
  /** The arena's size: the bytes the whole Fetch may read (0: too small to be worth one). */
  readonly arenaBytes: number;
  readonly arena: ReadArena;
  /** `--kafka-fetch-path sendfile` on a plain connection: large batches stay in their files. */
  readonly sendfile: boolean;
  /** The segment files the round's FileBatches are in, held until the response was sent. */
  readonly leases: FileLease[];
}

/** A storage frame and the batch fields up to BatchLength: [u32 length][u32 crc][i64 BaseOffset][i32 BatchLength]. */
const FILE_BATCH_HEAD_BYTES = ENTRY_HEADER_BYTES + BATCH_LENGTH_EXCLUDED_BYTES;
const fileBatchHead = new Uint8Array(FILE_BATCH_HEAD_BYTES);

/**
 * The run of large stored batches from the one containing `offset`, left in their segment file;
 * undefined when the first is smaller than KAFKA_SENDFILE_BATCH_BYTES_MIN (the caller copies); none
 * when nothing is visible at `offset`. Whole
 * entries of one segment, at most `limit` bytes but always the first (Partition.fetchLease, which
 * also checks the first entry's CRC, as the native sendfile path does). The run ends at the first
 * small batch or at one whose frame and BatchLength disagree: the copy path reads it next time,
 * and reports damage. The lease goes to `leases` when anything is taken. An answer that starts with
 * a small batch reads that batch twice (the lease's check, then the copy): a cost of the opt-in path
 * only, at most KAFKA_SENDFILE_BATCH_BYTES_MIN per partition and answer.
 */
function fileBatches(
  partition: Partition,
  offset: number,
  limit: number,
  leases: FileLease[],
): FileBatch[] | undefined {
  const lease = partition.fetchLease(offset, limit);
  if (lease === undefined) return [];
  const pieces: FileBatch[] = [];
  try {
    const end = lease.position + lease.lengthBytes;
    let at = lease.position;
    while (at + FILE_BATCH_HEAD_BYTES <= end) {
      if (preadFull(lease.fd, fileBatchHead, 0, FILE_BATCH_HEAD_BYTES, at) !== FILE_BATCH_HEAD_BYTES) break;
      const length = int32At(fileBatchHead, 0) >>> 0;
      const batchLength = int32At(fileBatchHead, ENTRY_HEADER_BYTES + BATCH_LENGTH_OFFSET);
      if (length < KAFKA_SENDFILE_BATCH_BYTES_MIN) break;
      if (batchLength !== length - BATCH_LENGTH_EXCLUDED_BYTES) break;
      if (at + ENTRY_HEADER_BYTES + length > end) break;
      pieces.push({ fd: lease.fd, position: at + ENTRY_HEADER_BYTES, lengthBytes: length });
      at += ENTRY_HEADER_BYTES + length;
    }
  } catch (error) {
    lease.release();
    throw error;
  }
  if (pieces.length === 0) {
    lease.release();
    return undefined;
  }
  leases.push(lease);
  return pieces;
}

/**
 * The arena size for a Fetch: what its partitions may read together (each at most its
 * partition_max_bytes, all at most max_bytes), up to the pool's largest buffer. Reads beyond it (a
 * first batch larger than the limits, KIP-74) get buffers of their own.
 */
function arenaBytesOf(request: FetchRequest): number {
  let partitionBytes = 0;
  for (const topic of request.topics)
    for (const partition of topic.partitions) partitionBytes += Math.max(partition.partitionMaxBytes, 0);
  const bytes = Math.min(partitionBytes, Math.max(request.maxBytes, 0), FETCH_RESPONSE_BYTES_MAX);
  return bytes < KAFKA_FETCH_BUFFER_STEP_BYTES ? 0 : Math.min(bytes, KAFKA_FETCH_BUFFER_BYTES_MAX);
}

const NO_BYTES = new Uint8Array(0);

interface FetchRound {
  response: FetchResponse;
  bytes: number;
  /** Some partition answered with an error: Kafka answers at once rather than waiting. */
  anyError: boolean;
  partitions: Partition[];
}

function readRound(
  broker: Broker,
  request: FetchRequest,
  refusals: ReadonlyMap<string, KafkaError | undefined>,
  reads: RoundReads,
): FetchRound {
  // The answers held for slow readers leave this much room (fetch-buffers.ts); a round reads at
  // most that, and never less than FETCH_ANSWER_FREE_BYTES (the first batch whole, as always), so
  // that readers who never read cannot starve the others.
  const roomBytes = reads.buffers.roomBytes();
  if (roomBytes < FETCH_ANSWER_FREE_BYTES) reads.buffers.roundsWithoutRoom++;
  const allowedBytes = Math.max(roomBytes, FETCH_ANSWER_FREE_BYTES);
  let remaining = Math.min(Math.max(request.maxBytes, 0), FETCH_RESPONSE_BYTES_MAX, allowedBytes);
  let bytes = 0;
  let anyError = false;
  const partitions: Partition[] = [];
  const topics = request.topics.map((topic) => ({
    topic: topic.topic,
    partitions: topic.partitions.map((asked): FetchPartitionResponse => {
      const answer: FetchPartitionResponse = {
        partition: asked.partition,
        errorCode: KAFKA_ERROR.NONE,
        highWatermark: -1,
        lastStableOffset: -1,
        logStartOffset: -1,
        records: [],
      };
      const refusal = refusals.get(topic.topic);
      if (refusal !== undefined) {
        answer.errorCode = refusal.code;
        anyError = true;
        return answer;
      }
      let partition: Partition;
      try {
        partition = broker.partition(topic.topic, asked.partition);
      } catch (error) {
        answer.errorCode = kafkaErrorOf(error).code;
        anyError = true;
        return answer;
      }
      partitions.push(partition);
      const highWatermark = partition.visibleNextOffset;
      const logStartOffset = partition.logStartOffset;
      answer.highWatermark = highWatermark;
      // No transactions: the last stable offset is the high watermark.
      answer.lastStableOffset = highWatermark;
      answer.logStartOffset = logStartOffset;
      const offset = asked.fetchOffset;
      if (offset < logStartOffset || offset > highWatermark) {
        answer.errorCode = KAFKA_ERROR.OFFSET_OUT_OF_RANGE;
        anyError = true;
        return answer;
      }
      // Nothing at the high watermark, and nothing more once the response is full (but the first
      // batch of the response is always sent whole).
      if (offset === highWatermark || (bytes > 0 && remaining <= 0)) return answer;
      const limit = Math.max(1, Math.min(asked.partitionMaxBytes, remaining));
      try {
        let pieces: FetchRecordPiece[] | undefined = reads.sendfile
          ? fileBatches(partition, offset, limit, reads.leases)
          : undefined;
        if (pieces === undefined) {
          // The arena is taken at the first read, not before: a Fetch that waits for records holds none.
          if (reads.arena.bytes.length === 0 && reads.arenaBytes > 0)
            reads.arena.bytes = reads.buffers.acquire(reads.arenaBytes);
          pieces = bareBatchesOf(partition.read(offset, limit, false, reads.arena).records);
        }
        let size = 0;
        for (const piece of pieces) size += pieceBytes(piece);
        // A first batch larger than the room, when the room is down to the allowance, waits for
        // room (no records this round): the "first batch whole" rule let 100 stalled connections
        // hold a 15 MiB batch each, 1.5 GB (a helper's run, 2026-12-03).
        if (bytes === 0 && size > allowedBytes) return answer;
        // Only the response's first batch may go beyond the limits (Kafka's minOneMessage holds for
        // the first non-empty partition alone): a later partition's batch that does not fit waits
        // for the next Fetch. It was sent whole too, so a Fetch of 300 partitions could answer 300
        // batches past its max_bytes.
        if (bytes > 0 && size > limit) return answer;
        answer.records = pieces;
        bytes += size;
        remaining -= size;
      } catch (error) {
        answer.errorCode = kafkaErrorOf(error).code;
        anyError = true;
      }
      return answer;
    }),
  }));
  return { response: { errorCode: KAFKA_ERROR.NONE, sessionId: 0, topics }, bytes, anyError, partitions };
}

/** Resolves when any of `partitions` may have new visible records, after `waitMs`, or at `stopping`. */
function visibleOrTimeout(
  partitions: readonly Partition[],
  waitMs: number,
  stopping: Promise<void>,
): Promise<void> {
  return new Promise((resolve) => {
    const unsubscribe: (() => void)[] = [];
    const done = () => {
      clearTimeout(timer);
      for (const stop of unsubscribe) stop();
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    for (const partition of partitions) unsubscribe.push(partition.onVisible(done));
    void stopping.then(done);
  });
}

/** Whether the listener is stopping, and a promise that resolves when it starts to. */
export interface StopSignal {
  readonly stopped: boolean;
  readonly promise: Promise<void>;
}

/**
 * Answers a Fetch: reads what is there; while fewer than min_bytes are, waits (at most max_wait_ms,
 * capped at KAFKA_FETCH_WAIT_MS_MAX) for any of the partitions to get more, and reads again. A
 * listener that stops ends the wait: the fetch is answered with what there is.
 *
 * The reads land in an arena from `buffers`, so the response's record views are valid only until
 * this returns: `answer` encodes them, synchronously, before the arena goes back to the pool (no
 * other Fetch can take it in between). A round that waits gives its arena back before waiting.
 */
export async function fetchRecords<Answer>(
  broker: Broker,
  request: FetchRequest,
  version: number,
  stop: StopSignal,
  /** The ACL refusal of a topic (TOPIC_AUTHORIZATION_FAILED), asked once per topic; none: allowed. */
  refuse: (topic: string) => KafkaError | undefined,
  buffers: FetchBufferPool,
  /**
   * Encodes the response; `leases` hold the files of its FileBatches, and the answer releases them
   * once the response was sent (or its connection closed). Called at most once.
   */
  answer: (response: FetchResponse, leases: readonly FileLease[]) => Answer,
  /** Send large batches from their files (plain connections under `--kafka-fetch-path sendfile`). */
  sendfile = false,
): Promise<Answer> {
  if (version >= 7 && request.sessionId !== 0) {
    return answer({ errorCode: FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, topics: [] }, []);
  }
  const deadline = performance.now() + Math.min(Math.max(request.maxWaitMs, 0), KAFKA_FETCH_WAIT_MS_MAX);
  // Decided once, before the first read: a long poll does not count a denial per round.
  const refusals = new Map<string, KafkaError | undefined>();
  for (const topic of request.topics)
    if (!refusals.has(topic.topic)) refusals.set(topic.topic, refuse(topic.topic));
  const arenaBytes = arenaBytesOf(request);
  for (;;) {
    const reads: RoundReads = {
      buffers,
      arenaBytes,
      arena: { bytes: NO_BYTES, used: 0 },
      sendfile,
      leases: [],
    };
    let waitFor: Partition[];
    let waitMs: number;
    let handedOver = false;
    try {
      const round = readRound(broker, request, refusals, reads);
      waitMs = deadline - performance.now();
      const done = round.bytes >= request.minBytes || round.anyError || round.partitions.length === 0;
      if (done || waitMs <= 0 || stop.stopped) {
        const answered = answer(round.response, reads.leases);
        handedOver = true;
        return answered;
      }
      waitFor = round.partitions;
    } finally {
      // Before any wait: the round's views are encoded (answered) or dropped (the next round
      // reads again), so a Fetch waiting for records holds no buffer and no file.
      if (reads.arena.bytes !== NO_BYTES) buffers.release(reads.arena.bytes);
      if (!handedOver) for (const lease of reads.leases) lease.release();
    }
    await visibleOrTimeout(waitFor, waitMs, stop.promise);
  }
}
