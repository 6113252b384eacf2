/**
 * PRODUCEs from many connections in one event-loop turn are written per partition as one append
 * (issue 13): through a broker process and raw sockets, every request still gets exactly its own
 * offsets, each connection's responses come back in request order, and a FETCH behind PRODUCEs on
 * the same connection sees them (the ordering rule holds across the deferred write). Requests the
 * group may not take (an idempotent batch, a MaxTimestamp to correct) keep their place in order.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { BooblikClient } from "../../src/client/client.ts";
import { ByteWriter } from "../../src/protocol/buffer.ts";
import {
  decodeFetchResponse,
  decodeProduceResponse,
  encodeFetchRequest,
  encodeProduceRequest,
} from "../../src/protocol/messages.ts";
import {
  CRC_OFFSET,
  computeBatchCrc,
  decodeBatch,
  encodeBatch,
  MAX_TIMESTAMP_OFFSET,
} from "../../src/record/batch.ts";
import { batchOfValues, scanEntries } from "../../src/record/entries.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { rawConnect, waitForResponses } from "../helpers/raw-socket.ts";
import { readValues, valuesOf } from "../helpers/records.ts";
import { tempDir } from "../helpers/temp-dir.ts";

setDefaultTimeout(60_000);

const text = (bytes: Uint8Array | null) => new TextDecoder().decode(bytes!);
const CONNECTIONS = 6;
const REQUESTS = 40;

describe.each(["append", "force"] as const)("pipelined PRODUCEs under %s", (durability) => {
  test("bursts from several connections: exact offsets per request, order per connection, FETCH behind sees them", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
    try {
      await client.createTopic("burst", { durability });
      const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, () => rawConnect(broker.port)));
      // Each connection sends its requests in one write (1 to 3 records each), then a FETCH of
      // offset 0 behind them on the last connection.
      const sent: string[][][] = [];
      for (let c = 0; c < CONNECTIONS; c++) {
        const writer = new ByteWriter();
        const requests: string[][] = [];
        for (let i = 0; i < REQUESTS; i++) {
          const values = Array.from({ length: (i % 3) + 1 }, (_, r) => `c${c}-r${i}-${r}`);
          requests.push(values);
          encodeProduceRequest(writer, i, { topic: "burst", partition: 0, records: batchOfValues(values) });
        }
        if (c === CONNECTIONS - 1)
          encodeFetchRequest(writer, REQUESTS, {
            topic: "burst",
            partition: 0,
            offset: 0,
            maxBytes: 1024 * 1024,
            maxWaitMs: 0,
          });
        sent.push(requests);
        sockets[c]!.write(writer.written().slice());
      }
      const byOffset = new Map<number, string>();
      let fetched: ReturnType<typeof decodeFetchResponse> | undefined;
      for (let c = 0; c < CONNECTIONS; c++) {
        const expected = REQUESTS + (c === CONNECTIONS - 1 ? 1 : 0);
        const answers = await waitForResponses(sockets[c]!, expected);
        expect(answers.length).toBe(expected);
        expect(answers.map((a) => a.correlationId)).toEqual(Array.from({ length: expected }, (_, i) => i));
        expect(answers.map((a) => a.message)).toEqual(answers.map(() => undefined));
        let previous = -1;
        for (let i = 0; i < REQUESTS; i++) {
          const ack = decodeProduceResponse(answers[i]!.body);
          expect(ack.recordCount).toBe(sent[c]![i]!.length);
          expect(ack.durability).toBe(durability === "force" ? "forced" : "appended");
          expect(ack.firstOffset).toBeGreaterThan(previous);
          previous = ack.firstOffset;
          sent[c]![i]!.forEach((value, r) => {
            expect(byOffset.has(ack.firstOffset + r)).toBe(false);
            byOffset.set(ack.firstOffset + r, value);
          });
        }
        if (c === CONNECTIONS - 1) fetched = decodeFetchResponse(answers[REQUESTS]!.body);
      }
      const total = byOffset.size;
      expect(total).toBe(sent.flat().flat().length);
      expect([...byOffset.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i));
      // The FETCH was read after that connection's PRODUCEs: it sees at least all of them.
      expect(fetched!.nextOffset).toBeGreaterThanOrEqual(REQUESTS * 2);
      const fetchedValues = valuesOf(fetched!.records).map(text);
      for (const [offset, value] of fetchedValues.entries()) expect(value).toBe(byOffset.get(offset)!);
      // Every acknowledged offset holds exactly the record its producer was told.
      const stored = (await readValues(client, "burst", 0, 0, total, 1024 * 1024)).map(text);
      expect(stored).toEqual(Array.from({ length: total }, (_, i) => byOffset.get(i)!));
      for (const socket of sockets) socket.close();
    } finally {
      client.close();
    }
  });
});

test("in one burst, idempotent batches, a resend and a MaxTimestamp to correct keep their order beside coalesced plain ones", async () => {
  using dir = tempDir();
  await using broker = await startBroker(dir.path);
  const client = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port });
  try {
    await client.createTopic("mixed");
    const { producerId } = await client.initProducerId();
    const records = (values: string[], timestampMs = 1_000) =>
      values.map((value) => ({ key: null, value: new TextEncoder().encode(value), timestamp: timestampMs }));
    const idempotent = (baseSequence: number, values: string[]) =>
      encodeBatch(records(values), { producerId, producerEpoch: 0, baseSequence });
    const lying = encodeBatch([...records(["f"], 1_000), ...records(["g"], 6_000)]);
    const view = new DataView(lying.buffer, lying.byteOffset, lying.byteLength);
    view.setBigInt64(MAX_TIMESTAMP_OFFSET, 1_000n); // the records say 6,000
    view.setUint32(CRC_OFFSET, computeBatchCrc(lying, 0, lying.length));
    const first = idempotent(0, ["b", "c"]);
    const requests = [
      batchOfValues(["a"]),
      first,
      batchOfValues(["d"]),
      idempotent(2, ["e"]),
      first, // a resend: the original offsets, nothing appended
      lying,
    ];
    const writer = new ByteWriter();
    requests.forEach((batch, i) => {
      encodeProduceRequest(writer, i, { topic: "mixed", partition: 0, records: batch });
    });
    const socket = await rawConnect(broker.port);
    socket.write(writer.written().slice());
    const answers = await waitForResponses(socket, requests.length);
    expect(answers.map((a) => a.message)).toEqual(answers.map(() => undefined));
    expect(answers.map((a) => decodeProduceResponse(a.body).firstOffset)).toEqual([0, 1, 3, 4, 1, 5]);
    const stored = (await readValues(client, "mixed", 0, 0, 7, 1024 * 1024)).map(text);
    expect(stored).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
    // The last entry was stored with the records' MaxTimestamp (and a batch CRC that matches it).
    const fetched = await client.fetch("mixed", 0, 5);
    const maxTimestamps: number[] = [];
    const scan = scanEntries(
      fetched.records,
      0,
      fetched.records.length,
      { framing: "framed", verifyCrc: true },
      undefined,
      (_entry, start, end) =>
        maxTimestamps.push(decodeBatch(fetched.records, start, end).header.maxTimestamp),
    );
    expect(scan.stop).toBe("end");
    expect(maxTimestamps.at(-1)).toBe(6_000);
    socket.close();
  } finally {
    client.close();
  }
});
