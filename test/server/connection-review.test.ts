/**
 * The connection state machine under the defects an independent review reproduced (issue 17), each
 * through raw sockets against a broker process: requests held back at shutdown are answered, closes
 * after a linger or at shutdown are FINs (not resets), a connection waiting for the inbound budget
 * is neither swept as idle nor kept after its client left, lingering refused connections are
 * capped, a waiting FETCH does not stall the requests behind it for its whole wait, and a stalled
 * broker does not charge its stall to the client's request timeout.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import net from "node:net";
import { BooblikClient } from "../../src/client/client.ts";
import { WIRE_ERROR_CODES } from "../../src/protocol/error-codes.ts";
import {
  encodeFetchRequest,
  encodeListOffsetsRequest,
  encodeMetadataRequest,
  encodeProduceRequest,
} from "../../src/protocol/messages.ts";
import { frameRecords } from "../../src/record/batch-builder.ts";
import { startBroker } from "../helpers/broker-process.ts";
import { frame, responses } from "../helpers/raw-socket.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitUntil } from "../helpers/wait.ts";

setDefaultTimeout(60_000);

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * A node:net client that records how the broker closed: its FIN ("end") or a reset (an error such
 * as ECONNRESET). `closeOnEnd: false` keeps the client's side open after the broker's FIN (a client
 * that has not noticed yet); `paused` starts it without reading.
 */
interface Observer {
  socket: net.Socket;
  received: () => Uint8Array;
  sawEnd: () => boolean;
  error: () => string | undefined;
  done: Promise<void>;
}

function observe(
  port: number,
  writes: Uint8Array[],
  options: { closeOnEnd?: boolean; paused?: boolean } = {},
): Observer {
  const chunks: Buffer[] = [];
  let sawEnd = false;
  let error: string | undefined;
  const socket = net.connect({ host: "127.0.0.1", port, allowHalfOpen: true });
  if (options.paused) socket.pause();
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("end", () => {
    sawEnd = true;
    if (options.closeOnEnd !== false) socket.end();
  });
  socket.on("error", (e: NodeJS.ErrnoException) => {
    error = e.code ?? e.message;
  });
  socket.on("connect", () => {
    for (const bytes of writes) socket.write(bytes);
  });
  const done = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return {
    socket,
    received: () => new Uint8Array(Buffer.concat(chunks)),
    sawEnd: () => sawEnd,
    error: () => error,
    done,
  };
}

async function stats(port: number): Promise<Record<string, number>> {
  const client = await BooblikClient.connect({ host: "127.0.0.1", port, retries: 0 });
  try {
    return (await client.stats()) as unknown as Record<string, number>;
  } finally {
    client.close();
  }
}

/** The first `sentBytes` bytes of a PRODUCE frame whose size field claims `frameBytes` in all. */
function partialLargeFrame(frameBytes: number, sentBytes: number): Uint8Array {
  const bytes = new Uint8Array(sentBytes);
  new DataView(bytes.buffer).setUint32(0, frameBytes - 4);
  new DataView(bytes.buffer).setUint16(4, 4); // PRODUCE
  return bytes;
}

const metadata = (id: number) => frame((w) => encodeMetadataRequest(w, id, { topics: [] }));

describe("shutdown", () => {
  test("requests read but not yet applied when the broker stops each get BROKER_SHUTTING_DOWN, in order, then FIN", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, ["--durability", "append"]);
    const admin = await BooblikClient.connect({ host: "127.0.0.1", port: broker.port, retries: 0 });
    await admin.createTopic("big");
    for (let i = 0; i < 12; i++)
      await admin.produce("big", 0, frameRecords([new Uint8Array(1024 * 1024 - 64)]));
    admin.close();
    // A FETCH of 12 MiB the client does not read yet: the requests behind it stay unapplied.
    const client = observe(
      broker.port,
      [
        concat([
          frame((w) =>
            encodeFetchRequest(w, 1, {
              topic: "big",
              partition: 0,
              offset: 0,
              maxBytes: 12 << 20,
              maxWaitMs: 0,
            }),
          ),
          ...[2, 3, 4, 5, 6].map(metadata),
        ]),
      ],
      { paused: true },
    );
    await waitUntil(async () => (await stats(broker.port)).connectionsPaused === 1, "the paused connection");
    broker.process.kill("SIGTERM");
    await broker.lines.waitFor((line) => line.includes("SIGTERM: stopping"), "the stopping line");
    client.socket.resume();
    await client.done;
    const said = responses(client.received());
    expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
      [1, 0],
      ...[2, 3, 4, 5, 6].map((id) => [id, WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN]),
    ]);
    expect(said[1]!.message).toContain("shutting down");
    expect(client.sawEnd()).toBe(true);
    expect(client.error()).toBeUndefined();
    expect(await broker.process.exited).toBe(0);
  });

  test("a connection waiting for the inbound budget at shutdown gets BROKER_SHUTTING_DOWN and a FIN, not a reset", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path, [
      "--max-frame-size",
      "1MiB",
      "--max-inbound-memory",
      "1MiB",
    ]);
    const holder = observe(broker.port, [partialLargeFrame(1 << 20, 900 * 1024)]);
    await waitUntil(
      async () => ((await stats(broker.port)).inboundBudgetUsedBytes ?? 0) > 512 * 1024,
      "the first frame holding the budget",
    );
    const waiter = observe(broker.port, [partialLargeFrame(1 << 20, 300 * 1024)]);
    await waitUntil(async () => (await stats(broker.port)).inboundBudgetWaiting === 1, "a waiting connection");
    broker.process.kill("SIGTERM");
    await Promise.all([holder.done, waiter.done]);
    for (const client of [holder, waiter]) {
      const said = responses(client.received());
      expect(said.map((r) => [r.correlationId, r.errorCode])).toEqual([
        [0, WIRE_ERROR_CODES.BROKER_SHUTTING_DOWN],
      ]);
      expect(client.sawEnd()).toBe(true);
      expect(client.error()).toBeUndefined();
    }
    expect(await broker.process.exited).toBe(0);
  });
});

describe("closing after a linger", () => {
  test("a connection ended by a protocol violation whose client never closes is closed with FIN only, no reset", async () => {
    using dir = tempDir();
    await using broker = await startBroker(dir.path);
    const client = observe(broker.port, [concat([metadata(9), new Uint8Array([0, 0, 0, 3, 1, 2, 3])])], {
      closeOnEnd: false,
    });
    await waitUntil(() => client.sawEnd(), "the broker's FIN");
    expect(responses(client.received()).map((r) => [r.correlationId, r.errorCode])).toEqual([
      [9, 0],
      [0, WIRE_ERROR_CODES.INVALID_REQUEST],
    ]);
    // The broker lingers (5 s) for input to discard, then closes its side for good.
    await waitUntil(
      async () => (await stats(broker.port)).connectionsActive === 1,
      "the lingering connection closed",
      20_000,
    );
    client.socket.end();
    await client.done;
    expect(client.error()).toBeUndefined();
  });
});
