/**
 * Request and response payloads of every API, encoded into a caller-owned ByteWriter and decoded
 * from a ByteReader over one frame. Shared by the server and the client: one codec, no copies.
 * The byte tables are in docs/protocol.md; field order here is the order on the wire. Requests are
 * written in the one version of each API this broker speaks (frame.ts API_VERSION_MAX).
 *
 * Invariants: a decoder consumes its frame exactly (leftover bytes are an error); records travel
 * as Kafka RecordBatch v2 bytes (src/record/batch.ts): a PRODUCE carries *bare* batches
 * (BaseOffset 0, back to back), a FETCH answer the *framed* entries exactly as stored
 * (src/record/entries.ts); both are decoded as views into the frame, never copied, and never
 * walked here (the partition validates what a PRODUCE brings, the client checks what a FETCH
 * brings). A PRODUCE holds at least one byte of records. `largestProducibleBatchBytes` is the one
 * place that knows how much of a frame a PRODUCE spends besides its batch.
 */
import { type ByteReader, type ByteWriter, ProtocolError } from "./buffer.ts";
import { WIRE_ERROR_CODES } from "./error-codes.ts";
import { API, API_VERSION_MAX, REQUEST_HEADER_BYTES, SIZE_BYTES } from "./frame.ts";

// --- Framing helpers --------------------------------------------------------------------------------

/** Starts a request frame; returns its start position for endFrame. */
export function beginRequest(
  writer: ByteWriter,
  apiKey: number,
  correlationId: number,
  apiVersion = API_VERSION_MAX[apiKey] ?? 0,
): number {
  const start = writer.position;
  writer.u32(0).u16(apiKey).u16(apiVersion).u32(correlationId);
  return start;
}

/** Starts a response frame; returns its start position for endFrame. */
export function beginResponse(writer: ByteWriter, correlationId: number, errorCode = 0): number {
  const start = writer.position;
  writer.u32(0).u32(correlationId).u16(errorCode);
  return start;
}

/** Fills in the size of the frame that began at `start` (plus `trailingBytes` sent separately). */
export function endFrame(writer: ByteWriter, start: number, trailingBytes = 0): void {
  writer.patchU32(start, writer.position - start - SIZE_BYTES + trailingBytes);
}

// --- Requests ---------------------------------------------------------------------------------------

export interface MetadataRequest {
  /** Topics to describe; empty means all. */
  topics: string[];
}
export interface CreateTopicRequest {
  name: string;
  /** Topic settings as a JSON object (docs/protocol.md lists the keys); "{}" takes the defaults. */
  configJson: string;
}
export interface DeleteTopicRequest {
  name: string;
}
export interface ListOffsetsRequest {
  topic: string;
  partition: number;
  /**
   * Also answer the first offset whose record timestamp is ≥ this (ms since the epoch, Kafka's
   * ListOffsets by time); −1 (the default) asks for the bounds only.
   */
  timestampMs?: number;
}
export interface ProduceRequest {
  topic: string;
  partition: number;
  /** One or more bare RecordBatch v2 back to back, each with BaseOffset 0 (Kafka's "records"). */
  records: Uint8Array;
}
export interface FetchRequest {
  topic: string;
  partition: number;
  offset: number;
  maxBytes: number;
  maxWaitMs: number;
}

export function encodeMetadataRequest(
  writer: ByteWriter,
  correlationId: number,
  request: MetadataRequest,
): void {
  const start = beginRequest(writer, API.METADATA, correlationId);
  writer.u32(request.topics.length);
  for (const topic of request.topics) writer.string(topic);
  endFrame(writer, start);
}

export function decodeMetadataRequest(reader: ByteReader): MetadataRequest {
  const count = reader.u32("topic count");
  if (count > reader.remaining / 2) throw new ProtocolError(`topic count ${count} cannot fit in the frame`);
  const topics: string[] = [];
  for (let i = 0; i < count; i++) topics.push(reader.string("topic"));
  reader.expectEnd("METADATA request");
  return { topics };
}

export function encodeCreateTopicRequest(
  writer: ByteWriter,
  correlationId: number,
  request: CreateTopicRequest,
): void {
  const start = beginRequest(writer, API.CREATE_TOPIC, correlationId);
  writer.string(request.name).string(request.configJson);
  endFrame(writer, start);
}

export function decodeCreateTopicRequest(reader: ByteReader): CreateTopicRequest {
  const name = reader.string("topic name");
  const configJson = reader.string("topic config");
  reader.expectEnd("CREATE_TOPIC request");
  return { name, configJson };
}

export function encodeDeleteTopicRequest(
  writer: ByteWriter,
  correlationId: number,
  request: DeleteTopicRequest,
): void {
  const start = beginRequest(writer, API.DELETE_TOPIC, correlationId);
  writer.string(request.name);
  endFrame(writer, start);
}

export function decodeDeleteTopicRequest(reader: ByteReader): DeleteTopicRequest {
  const name = reader.string("topic name");
  reader.expectEnd("DELETE_TOPIC request");
  return { name };
}

export function encodeListOffsetsRequest(
  writer: ByteWriter,
  correlationId: number,
  request: ListOffsetsRequest,
): void {
  const start = beginRequest(writer, API.LIST_OFFSETS, correlationId);
  writer
    .string(request.topic)
    .u32(request.partition)
    .i64(request.timestampMs ?? -1);
  endFrame(writer, start);
}

export function decodeListOffsetsRequest(reader: ByteReader): ListOffsetsRequest {
  const topic = reader.string("topic");
  const partition = reader.u32("partition");
  const timestampMs = reader.i64("timestampMs");
  reader.expectEnd("LIST_OFFSETS request");
  return { topic, partition, timestampMs };
}

export function encodeProduceRequest(
  writer: ByteWriter,
  correlationId: number,
  request: ProduceRequest,
): void {
  const start = beginRequest(writer, API.PRODUCE, correlationId);
  writer.string(request.topic).u32(request.partition).bytesField(request.records);
  endFrame(writer, start);
}

/**
 * A PRODUCE request frame without its records: the frame size and the records length already count
 * `recordsBytes`, which the caller sends right after (so a large batch is not copied into the frame).
 */
export function encodeProduceRequestHeader(
  writer: ByteWriter,
  correlationId: number,
  request: { topic: string; partition: number; recordsBytes: number },
): void {
  const start = beginRequest(writer, API.PRODUCE, correlationId);
  writer.string(request.topic).u32(request.partition).u32(request.recordsBytes);
  endFrame(writer, start, request.recordsBytes);
}

/**
 * The largest whole record batch a PRODUCE to `topic` can carry in a request frame of at most
 * `maxFrameBytes` (the frame's `size`): the frame holds apiKey, apiVersion and correlationId (8),
 * the topic string (2 + its UTF-8 bytes), partition (4) and the records length (4) besides the batch.
 * A topic whose batch limit is above this could never be sent a batch that large.
 */
export function largestProducibleBatchBytes(maxFrameBytes: number, topic: string): number {
  const topicBytes = new TextEncoder().encode(topic).length;
  return maxFrameBytes - (REQUEST_HEADER_BYTES - SIZE_BYTES) - (2 + topicBytes) - 4 - 4;
}

/** A PRODUCE as the broker reads it: the records stay in the frame, `reader.source[recordsStart, recordsEnd)`. */
export interface ProduceRequestRange {
  topic: string;
  partition: number;
  recordsStart: number;
  recordsEnd: number;
}

/** `decodeProduceRequest` without a view of the records (into `out`, reused per request). */
export function decodeProduceRequestRange(reader: ByteReader, out: ProduceRequestRange): ProduceRequestRange {
  out.topic = reader.string("topic");
  out.partition = reader.u32("partition");
  out.recordsStart = reader.bytesFieldStart("records");
  out.recordsEnd = reader.position;
  if (out.recordsEnd === out.recordsStart)
    throw new ProtocolError("PRODUCE records must hold at least one record batch");
  reader.expectEnd("PRODUCE request");
  return out;
}

export function decodeProduceRequest(reader: ByteReader): ProduceRequest {
  const topic = reader.string("topic");
  const partition = reader.u32("partition");
  const records = reader.bytesField("records");
  // docs/protocol.md: "one or more record batches". Refused here, as a malformed request
  // (INVALID_REQUEST, a code the PRODUCE section lists), not deep in storage as a bad argument: that
  // went out as INVALID_CONFIG, a code about topic settings.
  if (records.length === 0) throw new ProtocolError("PRODUCE records must hold at least one record batch");
  reader.expectEnd("PRODUCE request");
  return { topic, partition, records };
}

export function encodeFetchRequest(writer: ByteWriter, correlationId: number, request: FetchRequest): void {
  const start = beginRequest(writer, API.FETCH, correlationId);
  writer
    .string(request.topic)
    .u32(request.partition)
    .u64(request.offset)
    .u32(request.maxBytes)
    .u32(request.maxWaitMs);
  endFrame(writer, start);
}

export function decodeFetchRequest(reader: ByteReader): FetchRequest {
  const topic = reader.string("topic");
  const partition = reader.u32("partition");
  const offset = reader.u64("offset");
  const maxBytes = reader.u32("maxBytes");
  const maxWaitMs = reader.u32("maxWaitMs");
  reader.expectEnd("FETCH request");
  return { topic, partition, offset, maxBytes, maxWaitMs };
}

/** One step of a SASL exchange: the mechanism and that step's bytes (docs/protocol.md, AUTHENTICATE). */
export interface AuthenticateRequest {
  mechanism: string;
  authBytes: Uint8Array;
}

export function encodeAuthenticateRequest(
  writer: ByteWriter,
  correlationId: number,
  request: AuthenticateRequest,
): void {
  const start = beginRequest(writer, API.AUTHENTICATE, correlationId);
  writer.string(request.mechanism).bytesField(request.authBytes);
  endFrame(writer, start);
}

export function decodeAuthenticateRequest(reader: ByteReader): AuthenticateRequest {
  const mechanism = reader.string("mechanism");
  const authBytes = reader.bytesField("authBytes");
  reader.expectEnd("AUTHENTICATE request");
  return { mechanism, authBytes };
}

export function encodeAuthenticateResponse(
  writer: ByteWriter,
  correlationId: number,
  authBytes: Uint8Array,
): void {
  const start = beginResponse(writer, correlationId);
  writer.bytesField(authBytes);
  endFrame(writer, start);
}

export function decodeAuthenticateResponse(reader: ByteReader): Uint8Array {
  const authBytes = reader.bytesField("authBytes");
  reader.expectEnd("AUTHENTICATE response");
  return authBytes;
}

export function encodeStatsRequest(writer: ByteWriter, correlationId: number): void {
  const start = beginRequest(writer, API.STATS, correlationId);
  endFrame(writer, start);
}

// --- Responses --------------------------------------------------------------------------------------

export interface PartitionMetadata {
  partition: number;
  logStartOffset: number;
  nextOffset: number;
}
export interface TopicMetadata {
  name: string;
  /** The topic's settings as JSON (partitions, durability, writeMode, segmentBytes, …). */
  configJson: string;
  /** Also in the config; a field of its own so that a reader of records needs no JSON. */
  timestampType: TimestampType;
  partitions: PartitionMetadata[];
}
export interface MetadataResponse {
  brokerVersion: string;
  crc32cImplementation: string;
  topics: TopicMetadata[];
}
export interface ListOffsetsResponse {
  logStartOffset: number;
  nextOffset: number;
  /** The first offset whose timestamp is ≥ the request's timestampMs; −1 for none or not asked. */
  timestampOffset: number;
  /** That record's timestamp (ms); −1 with timestampOffset −1. */
  offsetTimestampMs: number;
}
export const DURABILITY_APPENDED = 0;
export const DURABILITY_FORCED = 1;
export interface ProduceResponse {
  firstOffset: number;
  /** Offsets assigned: the sum of the batches' record counts. */
  recordCount: number;
  durability: "appended" | "forced";
  /** The append time stamped into the batches under LogAppendTime; −1 under CreateTime. */
  logAppendTimeMs: number;
}
/** A topic's timestamp type on the wire (METADATA): Kafka's attribute bit 3. */
export const TIMESTAMP_TYPE_CREATE_TIME = 0;
export const TIMESTAMP_TYPE_LOG_APPEND_TIME = 1;
export type TimestampType = "CreateTime" | "LogAppendTime";
/** The fixed part of a FETCH response; `recordsBytes` of framed entries follow it in the frame. */
export interface FetchResponseHeader {
  logStartOffset: number;
  nextOffset: number;
  recordsBytes: number;
}
export const FETCH_RESPONSE_FIXED_BYTES = 8 + 8 + 4;

export function encodeMetadataResponse(
  writer: ByteWriter,
  correlationId: number,
  response: MetadataResponse,
): void {
  const start = beginResponse(writer, correlationId);
  writer.string(response.brokerVersion).string(response.crc32cImplementation).u32(response.topics.length);
  for (const topic of response.topics) {
    writer
      .string(topic.name)
      .string(topic.configJson)
      .u8(
        topic.timestampType === "LogAppendTime" ? TIMESTAMP_TYPE_LOG_APPEND_TIME : TIMESTAMP_TYPE_CREATE_TIME,
      )
      .u32(topic.partitions.length);
    for (const partition of topic.partitions) {
      writer.u32(partition.partition).u64(partition.logStartOffset).u64(partition.nextOffset);
    }
  }
  endFrame(writer, start);
}

export function decodeMetadataResponse(reader: ByteReader): MetadataResponse {
  const brokerVersion = reader.string("broker version");
  const crc32cImplementation = reader.string("crc32c implementation");
  const topicCount = reader.u32("topic count");
  const topics: TopicMetadata[] = [];
  for (let t = 0; t < topicCount; t++) {
    const name = reader.string("topic name");
    const configJson = reader.string("topic config");
    const timestampTypeCode = reader.u8("timestampType");
    if (
      timestampTypeCode !== TIMESTAMP_TYPE_CREATE_TIME &&
      timestampTypeCode !== TIMESTAMP_TYPE_LOG_APPEND_TIME
    )
      throw new ProtocolError(`unknown timestampType ${timestampTypeCode}`);
    const timestampType: TimestampType =
      timestampTypeCode === TIMESTAMP_TYPE_LOG_APPEND_TIME ? "LogAppendTime" : "CreateTime";
    const partitionCount = reader.u32("partition count");
    const partitions: PartitionMetadata[] = [];
    for (let p = 0; p < partitionCount; p++) {
      partitions.push({
        partition: reader.u32("partition"),
        logStartOffset: reader.u64("logStartOffset"),
        nextOffset: reader.u64("nextOffset"),
      });
    }
    topics.push({ name, configJson, timestampType, partitions });
  }
  reader.expectEnd("METADATA response");
  return { brokerVersion, crc32cImplementation, topics };
}

export function encodeEmptyResponse(writer: ByteWriter, correlationId: number): void {
  const start = beginResponse(writer, correlationId);
  endFrame(writer, start);
}

export function encodeListOffsetsResponse(
  writer: ByteWriter,
  correlationId: number,
  response: ListOffsetsResponse,
): void {
  const start = beginResponse(writer, correlationId);
  writer
    .u64(response.logStartOffset)
    .u64(response.nextOffset)
    .i64(response.timestampOffset)
    .i64(response.offsetTimestampMs);
  endFrame(writer, start);
}

export function decodeListOffsetsResponse(reader: ByteReader): ListOffsetsResponse {
  const logStartOffset = reader.u64("logStartOffset");
  const nextOffset = reader.u64("nextOffset");
  const timestampOffset = reader.i64("timestampOffset");
  const offsetTimestampMs = reader.i64("offsetTimestampMs");
  reader.expectEnd("LIST_OFFSETS response");
  return { logStartOffset, nextOffset, timestampOffset, offsetTimestampMs };
}

export function encodeProduceResponse(
  writer: ByteWriter,
  correlationId: number,
  response: ProduceResponse,
): void {
  const start = beginResponse(writer, correlationId);
  writer
    .u64(response.firstOffset)
    .u32(response.recordCount)
    .u8(response.durability === "forced" ? DURABILITY_FORCED : DURABILITY_APPENDED)
    .i64(response.logAppendTimeMs);
  endFrame(writer, start);
}

export function decodeProduceResponse(reader: ByteReader): ProduceResponse {
  const firstOffset = reader.u64("firstOffset");
  const recordCount = reader.u32("recordCount");
  const durability = reader.u8("durability");
  if (durability !== DURABILITY_APPENDED && durability !== DURABILITY_FORCED) {
    throw new ProtocolError(`unknown durability ${durability}`);
  }
  const logAppendTimeMs = reader.i64("logAppendTimeMs");
  reader.expectEnd("PRODUCE response");
  return {
    firstOffset,
    recordCount,
    durability: durability === DURABILITY_FORCED ? "forced" : "appended",
    logAppendTimeMs,
  };
}

/**
 * Writes a FETCH response header whose frame size already counts `recordsBytes` that the server
 * sends right after it (from the file, with sendfile, or copied).
 */
export function encodeFetchResponseHeader(
  writer: ByteWriter,
  correlationId: number,
  header: FetchResponseHeader,
): void {
  const start = beginResponse(writer, correlationId);
  writer.u64(header.logStartOffset).u64(header.nextOffset).u32(header.recordsBytes);
  endFrame(writer, start, header.recordsBytes);
}

export function decodeFetchResponse(reader: ByteReader): FetchResponseHeader & { records: Uint8Array } {
  const logStartOffset = reader.u64("logStartOffset");
  const nextOffset = reader.u64("nextOffset");
  const recordsBytes = reader.u32("records length");
  if (recordsBytes !== reader.remaining) {
    throw new ProtocolError(
      `FETCH response says ${recordsBytes} record bytes but carries ${reader.remaining}`,
    );
  }
  return { logStartOffset, nextOffset, recordsBytes, records: reader.restView() };
}

export function encodeStatsResponse(writer: ByteWriter, correlationId: number, statsJson: string): void {
  const start = beginResponse(writer, correlationId);
  writer.string(statsJson);
  endFrame(writer, start);
}

export function decodeStatsResponse(reader: ByteReader): string {
  const json = reader.string("stats");
  reader.expectEnd("STATS response");
  return json;
}

// --- Errors -----------------------------------------------------------------------------------------

export interface ErrorBody {
  retriable: boolean;
  message: string;
  /** OFFSET_OUT_OF_RANGE only. */
  logStartOffset?: number;
  nextOffset?: number;
}

export function encodeErrorResponse(
  writer: ByteWriter,
  correlationId: number,
  errorCode: number,
  body: ErrorBody,
): void {
  const start = beginResponse(writer, correlationId, errorCode);
  // Messages are for people; cut very long ones so the error frame stays small.
  const message = body.message.length > 2000 ? `${body.message.slice(0, 2000)}…` : body.message;
  writer.u8(body.retriable ? 1 : 0).string(message);
  if (errorCode === WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE) {
    writer.u64(body.logStartOffset ?? 0).u64(body.nextOffset ?? 0);
  }
  endFrame(writer, start);
}

/**
 * The layout is fixed by the error code (the detail exists for OFFSET_OUT_OF_RANGE only, and is read
 * before the end check) and, like every payload, by the request's apiVersion: a detail added later
 * comes with a new version, so leftover bytes mean disagreement, as for every other decoder.
 */
export function decodeErrorBody(reader: ByteReader, errorCode: number): ErrorBody {
  const flags = reader.u8("error flags");
  const message = reader.string("error message");
  const body: ErrorBody = { retriable: (flags & 1) === 1, message };
  if (errorCode === WIRE_ERROR_CODES.OFFSET_OUT_OF_RANGE) {
    body.logStartOffset = reader.u64("logStartOffset");
    body.nextOffset = reader.u64("nextOffset");
  }
  reader.expectEnd("error body");
  return body;
}
