/**
 * Payloads of the APIs that change an existing topic: ALTER_TOPIC (12), ADD_PARTITIONS (13) and
 * PURGE (14).
 * Shared by the server and the client; the byte tables are in docs/protocol.md, field order here is
 * the order on the wire.
 *
 * Invariants: a decoder consumes its frame exactly (leftover bytes are an error); the settings
 * travel as a JSON object in a string, with the keys of CREATE_TOPIC, and the broker (not this
 * codec) decides which may change (Broker.alterTopic). A PURGE names at least one partition and
 * none twice (checked here, before the broker sees it).
 */
import { type ByteReader, type ByteWriter, ProtocolError } from "./buffer.ts";
import { API } from "./frame.ts";
import { beginRequest, beginResponse, endFrame } from "./messages.ts";

export interface AlterTopicRequest {
  name: string;
  /** The settings to change, as a JSON object (keys as for CREATE_TOPIC); keys not given keep their value. */
  changesJson: string;
}

export interface AddPartitionsRequest {
  name: string;
  /** The new partition count of the topic (not how many to add). */
  partitions: number;
}

export function encodeAlterTopicRequest(
  writer: ByteWriter,
  correlationId: number,
  request: AlterTopicRequest,
): void {
  const start = beginRequest(writer, API.ALTER_TOPIC, correlationId);
  writer.string(request.name).string(request.changesJson);
  endFrame(writer, start);
}

export function decodeAlterTopicRequest(reader: ByteReader): AlterTopicRequest {
  const name = reader.string("topic name");
  const changesJson = reader.string("topic changes");
  reader.expectEnd("ALTER_TOPIC request");
  return { name, changesJson };
}

/** The answer of ALTER_TOPIC: every setting of the topic after the change, as METADATA's config. */
export function encodeAlterTopicResponse(
  writer: ByteWriter,
  correlationId: number,
  configJson: string,
): void {
  const start = beginResponse(writer, correlationId);
  writer.string(configJson);
  endFrame(writer, start);
}

export function decodeAlterTopicResponse(reader: ByteReader): string {
  const configJson = reader.string("topic config");
  reader.expectEnd("ALTER_TOPIC response");
  return configJson;
}

export function encodeAddPartitionsRequest(
  writer: ByteWriter,
  correlationId: number,
  request: AddPartitionsRequest,
): void {
  const start = beginRequest(writer, API.ADD_PARTITIONS, correlationId);
  writer.string(request.name).u32(request.partitions);
  endFrame(writer, start);
}

export function decodeAddPartitionsRequest(reader: ByteReader): AddPartitionsRequest {
  const name = reader.string("topic name");
  const partitions = reader.u32("partition count");
  reader.expectEnd("ADD_PARTITIONS request");
  return { name, partitions };
}

export interface PurgePartition {
  partition: number;
  /** Records below this offset stop being readable; −1: the partition's visible end. */
  beforeOffset: number;
}

export interface PurgeRequest {
  name: string;
  partitions: PurgePartition[];
}

export interface PurgedPartition {
  partition: number;
  /** The first readable offset after the purge (Kafka's low_watermark). */
  logStartOffset: number;
}

/** partition (4) + beforeOffset (8): what each entry of a PURGE request takes. */
const PURGE_ENTRY_BYTES = 12;

export function encodePurgeRequest(writer: ByteWriter, correlationId: number, request: PurgeRequest): void {
  const start = beginRequest(writer, API.PURGE, correlationId);
  writer.string(request.name).u32(request.partitions.length);
  for (const entry of request.partitions) writer.u32(entry.partition).i64(entry.beforeOffset);
  endFrame(writer, start);
}

export function decodePurgeRequest(reader: ByteReader): PurgeRequest {
  const name = reader.string("topic name");
  const count = reader.u32("partition count");
  if (count === 0) throw new ProtocolError("PURGE request names no partition");
  // Checked against the bytes left before anything is allocated.
  if (count > reader.remaining / PURGE_ENTRY_BYTES)
    throw new ProtocolError(`PURGE partition count ${count} is more than the request's bytes hold`);
  const partitions: PurgePartition[] = [];
  const seen = new Set<number>();
  for (let i = 0; i < count; i++) {
    const partition = reader.u32("partition");
    const beforeOffset = reader.i64("beforeOffset");
    if (seen.has(partition)) throw new ProtocolError(`PURGE names partition ${partition} twice`);
    seen.add(partition);
    partitions.push({ partition, beforeOffset });
  }
  reader.expectEnd("PURGE request");
  return { name, partitions };
}

export function encodePurgeResponse(
  writer: ByteWriter,
  correlationId: number,
  partitions: readonly PurgedPartition[],
): void {
  const start = beginResponse(writer, correlationId);
  writer.u32(partitions.length);
  for (const entry of partitions) writer.u32(entry.partition).u64(entry.logStartOffset);
  endFrame(writer, start);
}

export function decodePurgeResponse(reader: ByteReader): PurgedPartition[] {
  const count = reader.u32("partition count");
  if (count > reader.remaining / PURGE_ENTRY_BYTES)
    throw new ProtocolError(`PURGE response partition count ${count} is more than its bytes hold`);
  const partitions: PurgedPartition[] = [];
  for (let i = 0; i < count; i++)
    partitions.push({ partition: reader.u32("partition"), logStartOffset: reader.u64("logStartOffset") });
  reader.expectEnd("PURGE response");
  return partitions;
}
