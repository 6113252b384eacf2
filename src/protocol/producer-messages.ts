/**
 * Payloads of INIT_PRODUCER_ID (15): a producer id for an idempotent producer. Shared by the server
 * and the client; the byte table is in docs/protocol.md, field order here is the order on the wire.
 *
 * Invariants: a decoder consumes its frame exactly (leftover bytes are an error). The request has an
 * empty payload; the response is the id (u64, below 2^53) and the epoch (u16, 0 from this broker).
 */
import type { ByteReader, ByteWriter } from "./buffer.ts";
import { API } from "./frame.ts";
import { beginRequest, beginResponse, endFrame } from "./messages.ts";

export interface InitProducerIdResponse {
  producerId: number;
  producerEpoch: number;
}

export function encodeInitProducerIdRequest(writer: ByteWriter, correlationId: number): void {
  const start = beginRequest(writer, API.INIT_PRODUCER_ID, correlationId);
  endFrame(writer, start);
}

export function decodeInitProducerIdRequest(reader: ByteReader): void {
  reader.expectEnd("INIT_PRODUCER_ID request");
}

export function encodeInitProducerIdResponse(
  writer: ByteWriter,
  correlationId: number,
  response: InitProducerIdResponse,
): void {
  const start = beginResponse(writer, correlationId);
  writer.u64(response.producerId).u16(response.producerEpoch);
  endFrame(writer, start);
}

export function decodeInitProducerIdResponse(reader: ByteReader): InitProducerIdResponse {
  const producerId = reader.u64("producerId");
  const producerEpoch = reader.u16("producerEpoch");
  reader.expectEnd("INIT_PRODUCER_ID response");
  return { producerId, producerEpoch };
}
