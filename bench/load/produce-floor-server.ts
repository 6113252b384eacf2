/**
 * The floor under booblik's per-request cost (issue 13): a bare Bun TCP server that answers every
 * booblik PRODUCE frame with a fixed success answer of the same size as the broker's, and does
 * nothing else (no validation, no storage, no metrics). It receives and sends the way the broker
 * does (Bun.listen, a `data` callback per readable socket, one `socket.write` for all the answers to
 * what one callback brought, as the broker sends all the answers ready in a turn at once), so what
 * it costs per request is what the runtime and the kernel cost before booblik's own code runs.
 *
 * Usage: bun produce-floor-server.ts — prints `{"port":N}` once listening on 127.0.0.1 (port 0).
 * Request frame: [size u32][apiKey u16][apiVersion u16][correlationId u32]… (docs/protocol.md); the
 * answer: [size u32 = 27][correlationId u32][errorCode u16 = 0][21 bytes of zeros], which is what
 * bench/load/produce-pipelined.ts checks.
 */

const ANSWER_BYTES = 31;
const HEADER_BYTES = 12;
/** Larger than any request the pipelined generator sends in one round (8 × 170 B). */
const PENDING_BYTES_MAX = 1 << 16;

interface Lane {
  pending: Uint8Array;
  pendingLength: number;
}

/** Answers to one callback's frames, written at once; grown when a callback brings more frames. */
let answers = new Uint8Array(64 * ANSWER_BYTES);

const server = Bun.listen<Lane>({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    binaryType: "uint8array",
    open(socket) {
      socket.data = { pending: new Uint8Array(PENDING_BYTES_MAX), pendingLength: 0 };
    },
    data(socket, chunk: Uint8Array) {
      const lane = socket.data;
      let bytes = chunk;
      if (lane.pendingLength > 0) {
        if (lane.pendingLength + chunk.length > PENDING_BYTES_MAX) {
          socket.end();
          return;
        }
        lane.pending.set(chunk, lane.pendingLength);
        lane.pendingLength += chunk.length;
        bytes = lane.pending.subarray(0, lane.pendingLength);
      }
      let at = 0;
      let answered = 0;
      while (bytes.length - at >= HEADER_BYTES) {
        const size =
          ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
        if (bytes.length - at < 4 + size) break;
        if (answered + ANSWER_BYTES > answers.length) {
          const grown = new Uint8Array(answers.length * 2);
          grown.set(answers.subarray(0, answered));
          answers = grown;
        }
        // [size u32 = 27][correlationId u32][errorCode u16 = 0][21 bytes of zeros].
        answers.fill(0, answered, answered + ANSWER_BYTES);
        answers[answered + 3] = ANSWER_BYTES - 4;
        answers[answered + 4] = bytes[at + 8]!;
        answers[answered + 5] = bytes[at + 9]!;
        answers[answered + 6] = bytes[at + 10]!;
        answers[answered + 7] = bytes[at + 11]!;
        answered += ANSWER_BYTES;
        at += 4 + size;
      }
      // A round's answers (at most a few hundred bytes) always fit the socket's send buffer, since the
      // generator waits for them before it sends more; a short write would be a broken assumption.
      if (answered > 0 && socket.write(answers, 0, answered) !== answered) {
        console.error("produce-floor-server: a short socket write; this server does not queue");
        process.exit(1);
      }
      const rest = bytes.length - at;
      if (rest > PENDING_BYTES_MAX) {
        socket.end();
        return;
      }
      if (rest > 0) lane.pending.set(bytes.subarray(at), 0);
      lane.pendingLength = rest;
    },
  },
});
console.log(JSON.stringify({ port: server.port }));
