/**
 * `booblik-cli produce` when the broker refuses a batch while later ones, already pipelined, are
 * stored: the CLI must stop reading and say exactly which input lines were stored and which not
 * (issue 15: lines 1-17 refused, 18-20 stored, and the report only said "produced 3").
 *
 * The broker here is a stub on a real socket speaking the native protocol (src/protocol's codec):
 * it answers INIT_PRODUCER_ID and METADATA for one topic and holds the PRODUCE answers until three requests arrived, then
 * refuses the first (a disk-full STORAGE_ERROR) and stores the others, which is what a real broker
 * does when its disk fills and frees between two appends; a real broker cannot be made to do that
 * on cue.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { ByteWriter } from "../../src/protocol/buffer.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import { API, peekFrameSize, type RequestHeader, readRequestHeader } from "../../src/protocol/frame.ts";
import {
  encodeErrorResponse,
  encodeMetadataResponse,
  encodeProduceResponse,
} from "../../src/protocol/messages.ts";
import { encodeInitProducerIdResponse } from "../../src/protocol/producer-messages.ts";
import { runCli } from "../helpers/cli-process.ts";

setDefaultTimeout(60_000);

/** Records in the bare batches of a PRODUCE frame's records (LastOffsetDelta + 1 of each batch). */
function recordsIn(frame: Uint8Array, recordsStart: number): number {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.length);
  let count = 0;
  for (let at = recordsStart; at + 27 <= frame.length; at += 12 + view.getUint32(at + 8))
    count += view.getInt32(at + 23) + 1;
  return count;
}

function stubBroker() {
  const produces: { correlationId: number; records: number }[] = [];
  const stored: number[] = [];
  let nextOffset = 0;
  const server = Bun.listen<{ buffer: Uint8Array }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(socket) {
        socket.data = { buffer: new Uint8Array(0) };
      },
      data(socket, chunk) {
        const joined = new Uint8Array(socket.data.buffer.length + chunk.length);
        joined.set(socket.data.buffer);
        joined.set(chunk, socket.data.buffer.length);
        let at = 0;
        const header: RequestHeader = { apiKey: 0, apiVersion: 0, correlationId: 0 };
        while (joined.length - at >= 4) {
          const size = peekFrameSize(joined, at, joined.length);
          if (joined.length - at < 4 + size) break;
          const frame = joined.subarray(at, at + 4 + size);
          readRequestHeader(frame, 0, header);
          const writer = new ByteWriter();
          if (header.apiKey === API.INIT_PRODUCER_ID) {
            // The CLI's Producer is idempotent by default: it asks for an id before its first batch.
            encodeInitProducerIdResponse(writer, header.correlationId, {
              producerId: 1000,
              producerEpoch: 0,
            });
            socket.write(writer.written());
          } else if (header.apiKey === API.METADATA) {
            encodeMetadataResponse(writer, header.correlationId, {
              brokerVersion: "stub",
              crc32cImplementation: "stub",
              topics: [
                {
                  name: "t",
                  configJson: JSON.stringify({ partitions: 1, maxRecordBytes: 1024, segmentBytes: 1 << 20 }),
                  timestampType: "CreateTime",
                  partitions: [{ partition: 0, logStartOffset: 0, nextOffset: 0 }],
                },
              ],
            });
            socket.write(writer.written());
          } else if (header.apiKey === API.PRODUCE) {
            // The records follow the header: topic (2 + 1), partition (4), recordsBytes (4).
            produces.push({ correlationId: header.correlationId, records: recordsIn(frame, 12 + 3 + 4 + 4) });
            if (produces.length === 3) {
              for (const [i, produce] of produces.entries()) {
                if (i === 0) {
                  encodeErrorResponse(writer, produce.correlationId, WIRE_ERROR_CODES.STORAGE_ERROR, {
                    retriable: true,
                    message: "the disk is full (ENOSPC)",
                  });
                } else {
                  encodeProduceResponse(writer, produce.correlationId, {
                    firstOffset: nextOffset,
                    recordCount: produce.records,
                    durability: "appended",
                    logAppendTimeMs: -1,
                  });
                  stored.push(produce.records);
                  nextOffset += produce.records;
                }
              }
              socket.write(writer.written());
            } else if (produces.length > 3) {
              encodeProduceResponse(writer, header.correlationId, {
                firstOffset: nextOffset,
                recordCount: produces.at(-1)!.records,
                durability: "appended",
                logAppendTimeMs: -1,
              });
              nextOffset += produces.at(-1)!.records;
              socket.write(writer.written());
            }
          }
          at += 4 + size;
        }
        socket.data.buffer = joined.slice(at);
      },
    },
  });
  return { server, produces, stored };
}

test("produce: a refused batch among pipelined ones: reading stops, the stored and refused lines are named", async () => {
  const stub = stubBroker();
  try {
    // 100-byte lines: about 9 to a batch of the stub topic's 1,024 bytes, so 40 lines make 5 batches.
    const input = `${Array.from({ length: 40 }, (_, i) => `${i + 1}`.padEnd(100, ".")).join("\n")}\n`;
    const run = await runCli(["--broker", `127.0.0.1:${stub.server.port}`, "produce", "t"], { stdin: input });
    expect(run.exitCode).toBe(1);
    const first = stub.produces[0]!.records;
    const sent = stub.produces.reduce((sum, produce) => sum + produce.records, 0);
    const lines = run.stderr.trim().split("\n");
    expect(lines[0]).toBe(
      `booblik-cli: lines 1-${first} of stdin were refused (line 1: the disk is full (ENOSPC)); stopped reading after line ${sent}`,
    );
    expect(lines[1]).toBe(
      `booblik-cli: lines ${first + 1}-${sent} were stored (${sent - first} records): partition 0 offsets 0..${sent - first - 1} (${sent - first} records)`,
    );
    expect(lines.length).toBe(2);
    expect(run.stderr).not.toContain("    at ");
  } finally {
    stub.server.stop(true);
  }
});
