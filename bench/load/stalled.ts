/**
 * Stalled-request load generator (a separate process from the broker): opens N connections and on
 * each sends a PRODUCE frame header claiming `frameBytes` in all, then all of it but the last byte,
 * and never the last byte. Writes go from one shared buffer (views, no copies) and follow the
 * socket's backpressure, so the generator's own memory stays small whatever the broker does.
 * Usage: bun stalled.ts <port> <connections> <frameBytes>
 * Prints one JSON line once every connection either sent all it will send or made no progress for
 * a second: { sentBytes, finishedConnections }. Then holds the connections until killed.
 */
import type { Socket } from "bun";

const [portText, connectionsText, frameBytesText] = process.argv.slice(2);
const port = Number(portText);
const connectionCount = Number(connectionsText);
const frameBytes = Number(frameBytesText);
const payload = new Uint8Array(frameBytes - 1);
new DataView(payload.buffer).setUint32(0, frameBytes - 4); // size: everything after this field
new DataView(payload.buffer).setUint16(4, 4); // apiKey PRODUCE

interface State {
  sent: number;
  lastProgressMs: number;
}
const states: State[] = [];
function push(socket: Socket<State>): void {
  const state = socket.data;
  while (state.sent < payload.length) {
    const written = socket.write(
      payload.subarray(state.sent, Math.min(payload.length, state.sent + 1024 * 1024)),
    );
    if (written <= 0) return; // `drain` calls again
    state.sent += written;
    state.lastProgressMs = performance.now();
  }
}
for (let i = 0; i < connectionCount; i++) {
  const state: State = { sent: 0, lastProgressMs: performance.now() };
  states.push(state);
  const socket = await Bun.connect<State>({
    hostname: "127.0.0.1",
    port,
    data: state,
    socket: { binaryType: "uint8array", data() {}, drain: push },
  });
  push(socket);
}
for (;;) {
  await Bun.sleep(100);
  const now = performance.now();
  if (states.every((s) => s.sent === payload.length || now - s.lastProgressMs > 1000)) break;
}
const sentBytes = states.reduce((sum, s) => sum + s.sent, 0);
const finishedConnections = states.filter((s) => s.sent === payload.length).length;
console.log(JSON.stringify({ sentBytes, finishedConnections }));
setInterval(() => undefined, 1 << 30); // hold the connections until killed
