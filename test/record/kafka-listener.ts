/**
 * A listener that speaks just enough Kafka for a real client's producer to send, and keeps the
 * RecordBatch of every Produce request exactly as it crossed the socket: the golden bytes of
 * kafkajs.test.ts and kcat.test.ts. Test code only, never a broker.
 *
 * Spoken (layouts from kafka-wire.md §1; big-endian; request header v1 = api_key i16, api_version
 * i16, correlation_id i32, client_id string; v2 adds a tag buffer; responses start with the
 * correlation id):
 * - ApiVersions v0-2 (kafkajs) and v3 (librdkafka: flexible request header v2, compact array of
 *   keys, tag buffers; the response header stays v0). Advertised: Produce 0-7 (both clients pick
 *   7), Fetch 2-10 and FindCoordinator 0 (never served). librdkafka 2.0.2 switches features on by
 *   version overlap (rdkafka_feature.c, rdkafka_msgset_writer.c at v2.0.2): RecordBatch v2 needs
 *   Produce 3 + Fetch 4, zstd Produce 7 + Fetch 10, lz4 FindCoordinator 0, and any codec a Produce
 *   range that includes version 0 (with min 2 it sent `-z gzip` uncompressed). Metadata 0,
 *   ApiVersions 0-3.
 * - Metadata v0: one broker (this listener, node 0), each asked-for topic (or `golden` when none is
 *   named) with one partition led by node 0.
 * - Produce v3-7 (one request layout; responses add log_start_offset from v5): every partition's
 *   record set is captured; each answered with error 0.
 */

const API_PRODUCE = 0;
const API_FETCH = 1;
const API_METADATA = 3;
const API_FIND_COORDINATOR = 10;
const API_VERSIONS = 18;

class Reader {
  position = 0;
  constructor(private readonly bytes: Buffer) {}
  int16(): number {
    const value = this.bytes.readInt16BE(this.position);
    this.position += 2;
    return value;
  }
  int32(): number {
    const value = this.bytes.readInt32BE(this.position);
    this.position += 4;
    return value;
  }
  string(): string | null {
    const length = this.int16();
    if (length < 0) return null;
    const text = this.bytes.toString("utf8", this.position, this.position + length);
    this.position += length;
    return text;
  }
  bytesField(): Buffer {
    const length = this.int32();
    const bytes = this.bytes.subarray(this.position, this.position + length);
    this.position += length;
    return bytes;
  }
}

class Writer {
  private readonly parts: Buffer[] = [];
  int16(value: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(value);
    this.parts.push(b);
    return this;
  }
  int32(value: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(value);
    this.parts.push(b);
    return this;
  }
  int64(value: number): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(value));
    this.parts.push(b);
    return this;
  }
  /** One byte: every unsigned varint this listener writes is below 128. */
  uvarint(value: number): this {
    this.parts.push(Buffer.of(value));
    return this;
  }
  string(text: string): this {
    const b = Buffer.from(text);
    this.int16(b.length);
    this.parts.push(b);
    return this;
  }
  frame(): Buffer {
    const body = Buffer.concat(this.parts);
    const size = Buffer.alloc(4);
    size.writeInt32BE(body.length);
    return Buffer.concat([size, body]);
  }
}

const ADVERTISED: [number, number, number][] = [
  [API_PRODUCE, 0, 7],
  [API_FETCH, 2, 10],
  [API_METADATA, 0, 0],
  [API_FIND_COORDINATOR, 0, 0],
  [API_VERSIONS, 0, 3],
];

function answer(request: Buffer, port: number, captured: Uint8Array[]): Buffer | undefined {
  const reader = new Reader(request);
  const apiKey = reader.int16();
  const apiVersion = reader.int16();
  const correlationId = reader.int32();
  reader.string(); // client id
  const out = new Writer().int32(correlationId);
  if (apiKey === API_VERSIONS) {
    out.int16(0);
    if (apiVersion >= 3) {
      out.uvarint(ADVERTISED.length + 1);
      for (const [key, min, max] of ADVERTISED) out.int16(key).int16(min).int16(max).uvarint(0);
      return out.int32(0).uvarint(0).frame();
    }
    out.int32(ADVERTISED.length);
    for (const [key, min, max] of ADVERTISED) out.int16(key).int16(min).int16(max);
    if (apiVersion >= 1) out.int32(0);
    return out.frame();
  }
  if (apiKey === API_METADATA) {
    const count = reader.int32();
    const named = Array.from({ length: Math.max(count, 0) }, () => reader.string() ?? "");
    const topics = named.length === 0 ? ["golden"] : named;
    out.int32(1).int32(0).string("127.0.0.1").int32(port);
    out.int32(topics.length);
    for (const topic of topics) {
      out.int16(0).string(topic).int32(1);
      // partition: error, id 0, leader 0, replicas [0], isr [0]
      out.int16(0).int32(0).int32(0).int32(1).int32(0).int32(1).int32(0);
    }
    return out.frame();
  }
  if (apiKey === API_PRODUCE && apiVersion >= 3 && apiVersion <= 7) {
    reader.string(); // transactional id
    const acks = reader.int16();
    reader.int32(); // timeout
    const topicCount = reader.int32();
    const replies: [string, number][] = [];
    for (let t = 0; t < topicCount; t++) {
      const topic = reader.string() ?? "";
      const partitionCount = reader.int32();
      for (let p = 0; p < partitionCount; p++) {
        const partition = reader.int32();
        captured.push(Uint8Array.from(reader.bytesField()));
        replies.push([topic, partition]);
      }
    }
    if (acks === 0) return undefined; // Kafka sends nothing for acks=0
    out.int32(replies.length);
    for (const [topic, partition] of replies) {
      out.string(topic).int32(1).int32(partition).int16(0).int64(0).int64(-1);
      if (apiVersion >= 5) out.int64(0); // log_start_offset
    }
    return out.int32(0).frame();
  }
  throw new Error(`the golden listener does not speak api ${apiKey} v${apiVersion}`);
}

export interface KafkaListener {
  port: number;
  /** The record set of every Produce partition, in arrival order. */
  captured: Uint8Array[];
  /** Requests the listener could not answer (the connection was closed). */
  refused: string[];
  stop(): void;
}

export function listenLikeKafka(): KafkaListener {
  const captured: Uint8Array[] = [];
  const refused: string[] = [];
  const pending = new Map<unknown, Buffer>();
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(socket, chunk) {
        let buffer = Buffer.concat([pending.get(socket) ?? Buffer.alloc(0), chunk]);
        while (buffer.length >= 4 && buffer.length >= 4 + buffer.readInt32BE(0)) {
          const size = buffer.readInt32BE(0);
          try {
            const reply = answer(buffer.subarray(4, 4 + size), server.port, captured);
            if (reply !== undefined) socket.write(reply);
          } catch (error) {
            refused.push(error instanceof Error ? error.message : String(error));
            socket.end();
            return;
          }
          buffer = buffer.subarray(4 + size);
        }
        pending.set(socket, buffer);
      },
      close(socket) {
        pending.delete(socket);
      },
    },
  });
  return { port: server.port, captured, refused, stop: () => server.stop(true) };
}
