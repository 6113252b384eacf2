/**
 * A lean produce load generator shaped like `redis-benchmark -P <pipeline>`, so that the two brokers
 * are driven alike (a separate process from the broker): each of N connections writes `pipeline`
 * PRODUCE requests in one socket write, waits for all their responses, and writes the next round.
 * Requests are pre-encoded RecordBatch v2 (null keys, `batchRecords` per batch, every value the
 * peers' shared value PEER_VALUE repeated to `recordBytes`, so that Redis and NATS are sent the same
 * bytes: bench/lib/peer-tools.ts); no promise, no allocation per request, so the client's CPU cost stays close to
 * redis-benchmark's and the broker is what is measured. Every response is checked: its frame size,
 * its correlation id (the one sent in that position) and error code 0; anything else ends the run
 * with exit code 1.
 *
 * Usage: bun produce-pipelined.ts <port> <topic> <recordBytes> <batchRecords> <connections> <seconds> <pipeline>
 * Prints one JSON line (ThroughputResult) plus `requests` and `requestsPerSecond`.
 */
import { ByteWriter } from "../../src/protocol/buffer.ts";
import { encodeProduceRequest } from "../../src/protocol/messages.ts";
import { encodeBatch } from "../../src/record/batch.ts";
import { PEER_VALUE } from "../lib/peer-tools.ts";

const [portText, topic, recordBytesText, batchText, connectionsText, secondsText, pipelineText] =
  process.argv.slice(2);
const port = Number(portText);
const recordBytes = Number(recordBytesText);
const batchRecords = Number(batchText);
const connectionCount = Number(connectionsText);
const seconds = Number(secondsText);
const pipeline = Number(pipelineText);
if (![port, recordBytes, batchRecords, connectionCount, seconds, pipeline].every((n) => n > 0) || !topic) {
  console.error(
    "usage: bun produce-pipelined.ts <port> <topic> <recordBytes> <batchRecords> <connections> <seconds> <pipeline>",
  );
  process.exit(2);
}

/** The produce response: [size u32][correlationId u32][errorCode u16][firstOffset u64][recordCount u32][durability u8][logAppendTime i64]. */
const RESPONSE_BYTES = 4 + 4 + 2 + 8 + 4 + 1 + 8;

const now = Date.now();
const value = new Uint8Array(recordBytes);
for (let i = 0; i < recordBytes; i++) value[i] = PEER_VALUE[i % PEER_VALUE.length]!;
const writer = new ByteWriter(pipeline * (batchRecords * (recordBytes + 16) + 256));
for (let i = 0; i < pipeline; i++) {
  const records = Array.from({ length: batchRecords }, () => ({
    key: null,
    value,
    timestamp: now,
  }));
  // Correlation id = the position in the round: each response must come back in its place.
  encodeProduceRequest(writer, i, { topic, partition: 0, records: encodeBatch(records) });
}
const round = writer.written().slice();

interface Lane {
  received: number;
  /** Response bytes of the current round seen so far (responses are fixed-size). */
  pendingBytes: Uint8Array;
  pendingLength: number;
  unsent: Uint8Array | undefined;
}

let requests = 0;
let open = connectionCount;
let failed = false;
const start = performance.now();
const end = start + seconds * 1000;
let finishedAt = 0;

function fail(reason: string): void {
  if (failed) return;
  failed = true;
  console.error(`produce-pipelined: ${reason}`);
  process.exit(1);
}

function sendRound(socket: { write(bytes: Uint8Array): number }, lane: Lane): void {
  const written = socket.write(round);
  if (written < 0) fail("the broker closed the connection");
  else if (written < round.length) lane.unsent = round.subarray(written);
}

function check(bytes: Uint8Array, at: number, index: number): void {
  const size = ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
  const id = ((bytes[at + 4]! << 24) | (bytes[at + 5]! << 16) | (bytes[at + 6]! << 8) | bytes[at + 7]!) >>> 0;
  const errorCode = (bytes[at + 8]! << 8) | bytes[at + 9]!;
  if (size !== RESPONSE_BYTES - 4 || id !== index || errorCode !== 0)
    fail(`response ${index} of a round: size ${size}, correlation id ${id}, error code ${errorCode}`);
}

await Promise.all(
  Array.from(
    { length: connectionCount },
    () =>
      new Promise<void>((resolve, reject) => {
        const lane: Lane = {
          received: 0,
          pendingBytes: new Uint8Array(RESPONSE_BYTES),
          pendingLength: 0,
          unsent: undefined,
        };
        Bun.connect({
          hostname: "127.0.0.1",
          port,
          socket: {
            binaryType: "uint8array",
            open(socket) {
              resolve();
              sendRound(socket, lane);
            },
            data(socket, chunk: Uint8Array) {
              let at = 0;
              if (lane.pendingLength > 0) {
                const take = Math.min(RESPONSE_BYTES - lane.pendingLength, chunk.length);
                lane.pendingBytes.set(chunk.subarray(0, take), lane.pendingLength);
                lane.pendingLength += take;
                at = take;
                if (lane.pendingLength < RESPONSE_BYTES) return;
                check(lane.pendingBytes, 0, lane.received++);
                lane.pendingLength = 0;
              }
              while (chunk.length - at >= RESPONSE_BYTES) {
                check(chunk, at, lane.received++);
                at += RESPONSE_BYTES;
              }
              if (at < chunk.length) {
                lane.pendingBytes.set(chunk.subarray(at), 0);
                lane.pendingLength = chunk.length - at;
              }
              if (lane.received > pipeline) fail("more responses than requests");
              if (lane.received < pipeline) return;
              requests += pipeline;
              lane.received = 0;
              if (performance.now() < end) {
                sendRound(socket, lane);
                return;
              }
              socket.end();
            },
            drain(socket) {
              const unsent = lane.unsent;
              if (unsent === undefined) return;
              lane.unsent = undefined;
              const written = socket.write(unsent);
              if (written < 0) fail("the broker closed the connection");
              else if (written < unsent.length) lane.unsent = unsent.subarray(written);
            },
            close() {
              if (--open === 0) finishedAt = performance.now();
            },
            error(_socket, error) {
              fail(`socket error: ${error.message}`);
            },
            connectError(_socket, error) {
              reject(error);
            },
          },
        }).catch(reject);
      }),
  ),
);
while (open > 0) await Bun.sleep(5);
const elapsed = (finishedAt - start) / 1000;
const records = requests * batchRecords;
console.log(
  JSON.stringify({
    records,
    bytes: (requests / pipeline) * round.length,
    seconds: elapsed,
    recordsPerSecond: records / elapsed,
    megabytesPerSecond: ((requests / pipeline) * round.length) / elapsed / 1e6,
    requests,
    requestsPerSecond: requests / elapsed,
  }),
);
process.exit(0);
