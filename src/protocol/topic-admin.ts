/**
 * Payloads of the APIs that change an existing topic: ALTER_TOPIC (12) and ADD_PARTITIONS (13).
 * Shared by the server and the client; the byte tables are in docs/protocol.md, field order here is
 * the order on the wire.
 *
 * Invariants: a decoder consumes its frame exactly (leftover bytes are an error); the settings
 * travel as a JSON object in a string, with the keys of CREATE_TOPIC, and the broker (not this
 * codec) decides which may change (Broker.alterTopic).
 */
import type { ByteReader, ByteWriter } from "./buffer.ts";
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
