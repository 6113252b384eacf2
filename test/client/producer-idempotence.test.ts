/**
 * The Producer against a broker that does not know INIT_PRODUCER_ID (one from before idempotent
 * producers): a fake broker on 127.0.0.1:0 that answers METADATA and PRODUCE and refuses
 * INIT_PRODUCER_ID with UNSUPPORTED_VERSION, as such a broker does for an API version it does not
 * speak. The producer asks once, then sends plain batches to every partition.
 */
import { expect, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { Producer } from "../../src/client/producer.ts";
import { ByteReader, ByteWriter } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import {
  API,
  peekFrameSize,
  REQUEST_HEADER_BYTES,
  readRequestHeader,
  SIZE_BYTES,
} from "../../src/protocol/frame.ts";
import {
  decodeProduceRequest,
  encodeErrorResponse,
  encodeMetadataResponse,
  encodeProduceResponse,
} from "../../src/protocol/messages.ts";
import { readBatchHeader } from "../../src/record/batch.ts";

test("a broker without INIT_PRODUCER_ID: one refused request, then plain batches to every partition", async () => {
  const asked: number[] = [];
  const producerIds: number[] = [];
  let nextOffset = 0;
  let inbound = new Uint8Array(0);
  const listener = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      binaryType: "uint8array",
      data(socket, chunk) {
        const joined = new Uint8Array(inbound.length + chunk.length);
        joined.set(inbound);
        joined.set(chunk, inbound.length);
        let at = 0;
        const writer = new ByteWriter();
        for (;;) {
          const size = peekFrameSize(joined, at, joined.length);
          if (size < 0 || at + SIZE_BYTES + size > joined.length) break;
          const frame = joined.slice(at, at + SIZE_BYTES + size);
          at += SIZE_BYTES + size;
          const { apiKey, correlationId } = readRequestHeader(frame, 0, {
            apiKey: 0,
            apiVersion: 0,
            correlationId: 0,
          });
          asked.push(apiKey);
          if (apiKey === API.METADATA) {
            encodeMetadataResponse(writer, correlationId, {
              brokerVersion: "old",
              crc32cImplementation: "fake",
              topics: [
                {
                  name: "t",
                  configJson: JSON.stringify({
                    partitions: 2,
                    segmentBytes: 1 << 20,
                    maxRecordBytes: 1 << 16,
                  }),
                  timestampType: "CreateTime",
                  partitions: [0, 1].map((partition) => ({ partition, logStartOffset: 0, nextOffset: 0 })),
                },
              ],
            });
          } else if (apiKey === API.INIT_PRODUCER_ID) {
            encodeErrorResponse(writer, correlationId, WIRE_ERROR_CODES.UNSUPPORTED_VERSION, {
              retriable: false,
              message: "unknown apiVersion 0 of apiKey 14",
            });
          } else {
            const { records } = decodeProduceRequest(
              new ByteReader(frame, REQUEST_HEADER_BYTES, frame.length),
            );
            const header = readBatchHeader(records, 0);
            producerIds.push(header.producerId);
            encodeProduceResponse(writer, correlationId, {
              firstOffset: nextOffset,
              recordCount: header.recordCount,
              durability: "appended",
              logAppendTimeMs: -1,
            });
            nextOffset += header.recordCount;
          }
        }
        inbound = joined.slice(at);
        socket.write(writer.written().slice());
      },
    },
  });
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: listener.port });
  try {
    const producer = new Producer(client, { lingerMs: 0 });
    await producer.send("t", "a", { partition: 0 });
    await producer.send("t", "b", { partition: 1 });
    await producer.send("t", "c", { partition: 0 });
    await producer.close();
    expect(asked.filter((key) => key === API.INIT_PRODUCER_ID).length).toBe(1);
    expect(producerIds).toEqual([-1, -1, -1]);
  } finally {
    client.close();
    listener.stop(true);
  }
});
