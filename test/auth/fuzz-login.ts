/**
 * The login fuzzer, shared by the gate (fuzz-login.test.ts, a bounded run) and the longer run
 * (`bun run fuzz:login`, fuzz-login-run.ts). Against a broker child process started with a users
 * file and `--sasl-plain-without-tls yes`, hostile connections mutate valid login conversations:
 * Kafka's SaslHandshake (17) then SaslAuthenticate (36) (SCRAM client-first and client-final, the
 * PLAIN message) and the native AUTHENTICATE (7) (SCRAM), mutating both the framing (versions,
 * lengths, correlation ids, sizes, bit flips) and the SASL text (attributes, nonces, base64,
 * commas, '=' escapes, gs2 headers, huge and empty fields, non-UTF-8, truncations), and the order
 * of the steps (repeated, skipped, swapped, another API before the login, steps after a failure).
 *
 * Addresses. A failed login holds its client address (src/auth/login-delays.ts: 100 ms doubling to
 * 5 s; one password check per delay per address; at most 16 logins of an address wait). So that
 * the fuzzer reaches the decoders at more than one failure per 5 s, hostile connections come from
 * other loopback addresses (Linux routes all of 127/8 to lo): interactive conversations from
 * 127.1.x.y, each address used by one conversation at a time (so every answer has a bound: the
 * address's own hold, at most 5 s, then its failure delay, at most 5 s), blind ones (every frame
 * written at once, then a close) from 127.2.x.y. Both cycle through 64,516 addresses, more than the
 * failure table keeps (LOGIN_FAILURE_ADDRESSES_MAX, 10,000), so its eviction runs too.
 *
 * The flood. Every `floodEvery`-th round, `floodConnections` connections from 127.0.0.1, the good
 * client's own address, repeat mutated conversations (a new one as soon as one ends) for the
 * round's length, at least `floodMinMs`: the address stays
 * held and more logins come than may wait. The fuzzer counts, from the client side, the login
 * frames of 127.0.0.1 sent and neither answered nor closed (those waiting for the hold, plus at most
 * one or two whose failure is being delayed), counting only frames out for more than 300 ms (a
 * refusal comes at once; the client sees it a little later): never more than 16 + FLOOD_SLACK.
 *
 * The good client, all from 127.0.0.1, and what "not disturbed" means under the documented delays:
 * - a kafkajs producer logged in (SCRAM-SHA-512) before the fuzzing appends one record per round;
 *   every acknowledgement must be right and in order (a logged-in connection is never held), and
 *   the records are read back at the end by a SASL consumer;
 * - every round a fresh raw Kafka login (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN in turn) and a fresh
 *   native login (BooblikClient, SCRAM-SHA-256 and -512 in turn, then a produce and a fetch of one
 *   record) with the right password. A right password must never be answered as a failure. While
 *   127.0.0.1 is flooded it may be refused because 16 logins already wait (native: retriable
 *   LIMIT_EXCEEDED; Kafka: the connection closes without an answer) and retries after 50 ms, as a
 *   well-behaved client backs off; it may be starved for as long as the flood lasts (the holds
 *   exist so that an address cannot out-guess them; they do not tell a right guess from a wrong one
 *   before the check). So the bound is checked from the moment the flood stopped (its connections
 *   closed): a waiting login whose client left is dropped when it wakes, at the latest when the hold
 *   ends (5 s), and the next check then is the good one's: logged in within 2 × 5 s + the margin.
 *   Outside a flood 127.0.0.1 is not held (hostile failures from other addresses never hold it), so
 *   a good login must not wait for any hold: within the margin alone.
 * Hang watch: an interactive hostile frame (true size prefix) must be answered or its connection
 * closed within 10 s (hold + failure delay) + the margin; a flood frame within 17 × 5 s + the margin
 * (16 waiters before it, each at most one delay), which the round's end cuts short by closing.
 * Everything random comes from one seed: a seed replays the same decisions (the broker's nonces,
 * and so the bytes of a client-final, differ from run to run).
 */
import net from "node:net";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { ScramClient, type ScramMechanism } from "../../src/auth/scram.ts";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { BooblikClient } from "../../src/client/client.ts";
import { Consumer } from "../../src/client/consumer.ts";
import { Producer as NativeProducer } from "../../src/client/producer.ts";
import { type BrokerProcess, kafkaPortOf, startBroker } from "../helpers/broker-process.ts";
import { readValuesWithKafkajs } from "../helpers/kafkajs-read.ts";
import { Random } from "../helpers/random.ts";

export const USER = "alice";
export const PASSWORD = "correct horse";
/** A second user (names are A-Z a-z 0-9 . _ @ -: no SCRAM escapes needed; the mutations add them). */
export const ODD_USER = "bob.o_b@x-y";
export const ODD_PASSWORD = "pässwörd";
export const GOOD_TOPIC = "login-good";
export const NATIVE_TOPIC = "login-good-native";

export const MAX_DELAY_MS = 5_000;
export const WAITERS_MAX = 16;
/** Frames of 127.0.0.1 counted outstanding beyond the 16 waiters: failures in their delay. */
export const FLOOD_SLACK = 2;

const text = new TextEncoder();

// --- Frames ----------------------------------------------------------------------------------------

function int16(value: number): number[] {
  return [(value >> 8) & 0xff, value & 0xff];
}
function int32(value: number): number[] {
  return [(value >>> 24) & 0xff, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff];
}
function sized(body: number[] | Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** Kafka request header v1 (api key, version, correlation id, client id). */
function kafkaHeader(apiKey: number, version: number, correlationId: number, clientId = "fuzz"): number[] {
  const id = text.encode(clientId);
  return [...int16(apiKey), ...int16(version), ...int32(correlationId), ...int16(id.length), ...id];
}

export const kafka = {
  apiVersions: (correlationId: number) => sized(kafkaHeader(18, 0, correlationId)),
  metadata: (correlationId: number) => sized([...kafkaHeader(3, 0, correlationId), ...int32(0)]),
  handshake: (correlationId: number, mechanism: Uint8Array, version = 1) =>
    sized([...kafkaHeader(17, version, correlationId), ...int16(mechanism.length), ...mechanism]),
  authenticate: (correlationId: number, authBytes: Uint8Array | null, version = 1) =>
    sized([
      ...kafkaHeader(36, version, correlationId),
      ...int32(authBytes === null ? -1 : authBytes.length),
      ...(authBytes ?? []),
    ]),
};

export const native = {
  authenticate: (correlationId: number, mechanism: Uint8Array, authBytes: Uint8Array, version = 0) =>
    sized([
      ...int16(7),
      ...int16(version),
      ...int32(correlationId),
      ...int16(mechanism.length),
      ...mechanism,
      ...int32(authBytes.length),
      ...authBytes,
    ]),
  /** METADATA v1, all topics: a request before the login. */
  metadata: (correlationId: number) =>
    sized([...int16(0), ...int16(1), ...int32(correlationId), ...int32(0)]),
};

/** Kafka SaslAuthenticate v0-1 response: error code, message, auth bytes. */
export function kafkaAuthenticateAnswer(
  frame: Uint8Array,
): { errorCode: number; message: string | null; authBytes: Uint8Array } | undefined {
  try {
    const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    let at = 8;
    const errorCode = view.getInt16(at);
    at += 2;
    const messageLength = view.getInt16(at);
    at += 2;
    const message =
      messageLength < 0 ? null : new TextDecoder().decode(frame.subarray(at, at + messageLength));
    at += Math.max(0, messageLength);
    const bytesLength = view.getInt32(at);
    at += 4;
    return { errorCode, message, authBytes: frame.subarray(at, at + Math.max(0, bytesLength)) };
  } catch {
    return undefined;
  }
}

/** Kafka SaslHandshake v1 response's error code. */
export function kafkaHandshakeError(frame: Uint8Array): number {
  return frame.length >= 10 ? new DataView(frame.buffer, frame.byteOffset).getInt16(8) : -1;
}

/** Native response: error code and, on success, AUTHENTICATE's auth bytes. */
export function nativeAnswer(frame: Uint8Array): { errorCode: number; authBytes: Uint8Array } {
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
  const errorCode = frame.length >= 10 ? view.getUint16(8) : -1;
  if (errorCode !== 0 || frame.length < 14) return { errorCode, authBytes: new Uint8Array(0) };
  return { errorCode, authBytes: frame.subarray(14, 14 + view.getUint32(10)) };
}

// --- Sockets ---------------------------------------------------------------------------------------

export type Outcome = { kind: "answer"; frame: Uint8Array } | { kind: "closed" } | { kind: "silent" };

/** A client connection from `localAddress` that reads whole frames (int32 size prefix). */
export class Conn {
  private readonly socket: net.Socket;
  private buffered = new Uint8Array(0);
  private readonly frames: Uint8Array[] = [];
  private closedFlag = false;
  private wake: (() => void) | undefined;
  readonly connected: Promise<boolean>;

  constructor(port: number, localAddress: string) {
    this.socket = net.connect({ port, host: "127.0.0.1", localAddress });
    this.socket.setNoDelay(true);
    this.connected = new Promise((resolve) => {
      this.socket.once("connect", () => resolve(true));
      this.socket.once("close", () => resolve(false));
    });
    this.socket.on("data", (chunk: Buffer) => {
      const joined = new Uint8Array(this.buffered.length + chunk.length);
      joined.set(this.buffered);
      joined.set(chunk, this.buffered.length);
      let at = 0;
      while (joined.length - at >= 4) {
        const size = new DataView(joined.buffer, at).getUint32(0);
        if (joined.length - at - 4 < size) break;
        this.frames.push(joined.slice(at, at + 4 + size));
        at += 4 + size;
      }
      this.buffered = joined.slice(at);
      this.wake?.();
    });
    this.socket.on("error", () => undefined);
    this.socket.on("close", () => {
      this.closedFlag = true;
      this.wake?.();
    });
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  write(bytes: Uint8Array): void {
    if (!this.closedFlag) this.socket.write(bytes);
  }

  /** The next whole frame, "closed" (the broker closed, nothing more queued), or "silent" after `deadlineMs`. */
  async next(deadlineMs: number): Promise<Outcome> {
    const until = performance.now() + deadlineMs;
    for (;;) {
      const frame = this.frames.shift();
      if (frame !== undefined) return { kind: "answer", frame };
      if (this.closedFlag) return { kind: "closed" };
      const left = until - performance.now();
      if (left <= 0) return { kind: "silent" };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  end(): void {
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 50).unref();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

// --- Mutations -------------------------------------------------------------------------------------

const LONG = (random: Random) =>
  "x".repeat(random.int(0, 1) === 0 ? random.int(4000, 4200) : random.int(1, 300));

const ODD_BYTES: number[][] = [
  [0xff],
  [0xc3],
  [0xc0, 0x80],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x00],
  [0xe2, 0x82],
];

const PIECES = [
  "",
  ",",
  ",,",
  "=",
  "==",
  "=2C",
  "=3D",
  "=2c",
  "=3d",
  "=2",
  "=XY",
  "n=",
  "r=",
  "p=",
  "c=",
  "m=ext",
  "x=1",
  "a=alice",
  "\u0000",
  "é",
  "\u{1F600}",
  "biws",
  "eSws",
  "cD10bHMtdW5pcXVlLCw=",
  "n,,",
  "y,,",
  "p=tls-unique,,",
  "n,a=alice,",
  "!!!",
  "====",
  "AAAA",
  "\ud800",
];

/** Mutates SASL text: attributes, escapes, commas, huge and empty fields; sometimes non-UTF-8. */
export function mutateText(random: Random, message: string): Uint8Array {
  let out = message;
  const count = random.int(1, 3);
  for (let i = 0; i < count; i++) {
    const how = random.int(0, 11);
    const parts = out.split(",");
    const at = random.int(0, out.length);
    switch (how) {
      case 0: // drop an attribute
        parts.splice(random.int(0, parts.length - 1), 1);
        out = parts.join(",");
        break;
      case 1: // repeat an attribute
        parts.splice(random.int(0, parts.length), 0, parts[random.int(0, parts.length - 1)] ?? "");
        out = parts.join(",");
        break;
      case 2: // swap two attributes
        {
          const a = random.int(0, parts.length - 1);
          const b = random.int(0, parts.length - 1);
          [parts[a], parts[b]] = [parts[b] ?? "", parts[a] ?? ""];
          out = parts.join(",");
        }
        break;
      case 3: // empty an attribute's value
        {
          const k = random.int(0, parts.length - 1);
          parts[k] = (parts[k] ?? "").slice(0, 2);
          out = parts.join(",");
        }
        break;
      case 4: // a huge value (around the 4,096-byte limit) or a long one
        {
          const k = random.int(0, parts.length - 1);
          parts[k] = `${parts[k] ?? ""}${LONG(random)}`;
          out = parts.join(",");
        }
        break;
      case 5: // insert a piece
        out = out.slice(0, at) + PIECES[random.int(0, PIECES.length - 1)]! + out.slice(at);
        break;
      case 6: // truncate
        out = out.slice(0, at);
        break;
      case 7: // delete a character
        out = out.slice(0, at) + out.slice(at + 1);
        break;
      case 8: // replace a character by a printable one
        out = out.slice(0, at) + String.fromCharCode(random.int(0x20, 0x7e)) + out.slice(at + 1);
        break;
      case 9: // an attribute key changed
        {
          const k = random.int(0, parts.length - 1);
          parts[k] = String.fromCharCode(random.int(0x21, 0x7e)) + (parts[k] ?? "").slice(1);
          out = parts.join(",");
        }
        break;
      case 10: // base64 damaged: padding, a non-alphabet character
        out = out.replace(/([A-Za-z0-9+/]{4})/, (m) => (random.next() < 0.5 ? `${m}=` : `${m}*`));
        break;
      default: // an empty message
        out = random.next() < 0.5 ? "" : out;
    }
  }
  const bytes = text.encode(out);
  if (random.next() < 0.15) {
    // Not UTF-8 (or with NULs): a byte sequence put in at a random place.
    const odd = ODD_BYTES[random.int(0, ODD_BYTES.length - 1)]!;
    const at = random.int(0, bytes.length);
    return Uint8Array.from([...bytes.subarray(0, at), ...odd, ...bytes.subarray(at)]);
  }
  return bytes;
}

const INTERESTING: number[][] = [
  [0xff, 0xff, 0xff, 0xff],
  [0x7f, 0xff, 0xff, 0xff],
  [0x80, 0x00, 0x00, 0x00],
  [0x00, 0x00, 0x00, 0x00],
  [0x00, 0x00, 0x10, 0x01],
  [0xff, 0xff],
  [0x7f, 0xff],
  [0x00, 0x00],
  [0x00, 0x02],
];

/**
 * Mutates a frame's bytes past its size prefix (the size is then made true again unless `lieSize`):
 * bit flips, random bytes, interesting length values, truncation, extra bytes.
 */
export function mutateFrame(random: Random, frame: Uint8Array, lieSize: boolean): Uint8Array {
  let body = frame.slice(4);
  const mutations = random.int(1, 3);
  for (let m = 0; m < mutations && body.length > 0; m++) {
    // Mostly past the api key, version and correlation id, so the damage reaches the login code.
    const from = random.next() < 0.75 ? Math.min(8, body.length - 1) : 0;
    const at = random.int(from, body.length - 1);
    const how = random.next();
    if (how < 0.35) body[at] = body[at]! ^ (1 << random.int(0, 7));
    else if (how < 0.55) body[at] = random.int(0, 255);
    else {
      const value = INTERESTING[random.int(0, INTERESTING.length - 1)]!;
      for (let i = 0; i < value.length && at + i < body.length; i++) body[at + i] = value[i]!;
    }
  }
  const shape = random.next();
  if (shape < 0.15) body = body.subarray(0, random.int(0, body.length));
  else if (shape < 0.25) body = Uint8Array.from([...body, ...random.bytes(random.int(1, 16))]);
  const out = sized(body);
  if (lieSize && random.next() < 0.2) {
    const view = new DataView(out.buffer);
    const lie = random.next();
    view.setUint32(
      0,
      lie < 0.3
        ? random.int(0, 12)
        : lie < 0.6
          ? body.length + random.int(1, 64)
          : random.int(0, 2 ** 32 - 1),
    );
  }
  return out;
}

// --- Conversations ---------------------------------------------------------------------------------

export type Listener = "kafka" | "native";

type Mechanism = ScramMechanism | "PLAIN";

interface Plan {
  listener: Listener;
  mechanism: Mechanism;
  /** The mechanism named in the handshake (Kafka) or each AUTHENTICATE (native), maybe another. */
  handshakeName: Uint8Array;
  user: string;
  password: string;
  /** The right password for `user` (a hostile conversation may log in: then it goes on). */
  steps: Step[];
}

/** What a step sends; `final` is built from the server-first answer when there is one. */
type Step =
  | { kind: "apiVersions" }
  | { kind: "otherApi" }
  | { kind: "handshake"; version: number; mutate: boolean }
  | { kind: "first"; version: number; mutateText: boolean; mutateFrame: boolean; nullBytes: boolean }
  | { kind: "final"; version: number; mutateText: boolean; mutateFrame: boolean; mechanismSwap: boolean };

const MECHANISMS: Mechanism[] = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"];

function pick<T>(random: Random, items: readonly T[]): T {
  return items[random.int(0, items.length - 1)]!;
}

/** A valid conversation's steps, then mutated: their frames, text and order. */
export function planConversation(random: Random): Plan {
  const listener: Listener = random.next() < 0.6 ? "kafka" : "native";
  const mechanism: Mechanism =
    listener === "kafka" ? pick(random, MECHANISMS) : pick(random, MECHANISMS.slice(0, 2));
  const who = random.next();
  const [user, password] =
    who < 0.5
      ? [USER, random.next() < 0.3 ? PASSWORD : "wrong"]
      : who < 0.7
        ? [ODD_USER, random.next() < 0.3 ? ODD_PASSWORD : "wrong"]
        : ["mallory", "anything"];
  let handshakeName = text.encode(mechanism);
  if (random.next() < 0.1)
    handshakeName = text.encode(
      pick(random, [
        "scram-sha-256",
        "SCRAM-SHA-1",
        "GSSAPI",
        "OAUTHBEARER",
        "",
        "PLAIN\u0000",
        "SCRAM-SHA-512 ",
      ]),
    );
  else if (random.next() < 0.05) handshakeName = Uint8Array.from([...handshakeName, 0xff]);
  const version = (base: number[]) => (random.next() < 0.08 ? random.int(-1, 4) : pick(random, base));
  const textRate = 0.45;
  const frameRate = 0.2;
  let steps: Step[] = [];
  if (random.next() < 0.15) steps.push({ kind: "apiVersions" });
  if (listener === "kafka")
    steps.push({ kind: "handshake", version: version([1]), mutate: random.next() < frameRate });
  steps.push({
    kind: "first",
    version: version([0, 1]),
    mutateText: random.next() < textRate,
    mutateFrame: random.next() < frameRate,
    nullBytes: random.next() < 0.03,
  });
  if (mechanism !== "PLAIN")
    steps.push({
      kind: "final",
      version: version([0, 1]),
      mutateText: random.next() < textRate,
      mutateFrame: random.next() < frameRate,
      mechanismSwap: listener === "native" && random.next() < 0.05,
    });
  // The order: a step repeated, dropped, swapped; another API first; a step after the end.
  const order = random.next();
  if (order < 0.06 && steps.length > 1) steps.splice(random.int(0, steps.length - 1), 1);
  else if (order < 0.12) {
    const k = random.int(0, steps.length - 1);
    steps.splice(k, 0, steps[k]!);
  } else if (order < 0.17 && steps.length > 1) {
    const k = random.int(0, steps.length - 2);
    [steps[k], steps[k + 1]] = [steps[k + 1]!, steps[k]!];
  } else if (order < 0.21) steps.splice(random.int(0, steps.length), 0, { kind: "otherApi" });
  if (random.next() < 0.15) steps.push(pick(random, steps));
  if (steps.length > 8) steps = steps.slice(0, 8);
  return { listener, mechanism, handshakeName, user, password, steps };
}

/** Builds a step's frame; `serverFirst` is the last SCRAM answer (for a client-final). */
function stepFrame(
  random: Random,
  plan: Plan,
  step: Step,
  correlationId: number,
  scram: ScramClient | undefined,
  serverFirst: string | undefined,
  lieSize: boolean,
): Uint8Array {
  if (step.kind === "apiVersions")
    return plan.listener === "kafka" ? kafka.apiVersions(correlationId) : native.metadata(correlationId);
  if (step.kind === "otherApi")
    return plan.listener === "kafka" ? kafka.metadata(correlationId) : native.metadata(correlationId);
  if (step.kind === "handshake") {
    const frame = kafka.handshake(correlationId, plan.handshakeName, step.version);
    return step.mutate ? mutateFrame(random, frame, lieSize) : frame;
  }
  let message: string;
  if (step.kind === "first") {
    message =
      plan.mechanism === "PLAIN"
        ? random.next() < 0.1
          ? `${plan.user}\u0000${plan.user}\u0000${plan.password}`
          : `\u0000${plan.user}\u0000${plan.password}`
        : (scram?.first() ?? "n,,n=x,r=abc");
  } else {
    message = "c=biws,r=nonce,p=AAAA";
    if (serverFirst !== undefined && scram !== undefined) {
      try {
        message = scram.final(serverFirst);
      } catch {
        // The server-first did not fit ours (the client-first was mutated): a made-up final.
        message = `c=biws,r=${/r=([^,]*)/.exec(serverFirst)?.[1] ?? "x"},p=${Buffer.from(random.bytes(32)).toString("base64")}`;
      }
    }
  }
  const authBytes =
    step.kind === "first" && step.nullBytes
      ? null
      : step.mutateText
        ? mutateText(random, message)
        : text.encode(message);
  let frame: Uint8Array;
  if (plan.listener === "kafka") frame = kafka.authenticate(correlationId, authBytes, step.version);
  else {
    const name =
      step.kind === "final" && step.mechanismSwap
        ? text.encode(plan.mechanism === "SCRAM-SHA-256" ? "SCRAM-SHA-512" : "SCRAM-SHA-256")
        : plan.handshakeName;
    frame = native.authenticate(
      correlationId,
      name,
      authBytes ?? new Uint8Array(0),
      step.version === 1 ? 0 : step.version,
    );
  }
  return step.mutateFrame ? mutateFrame(random, frame, lieSize) : frame;
}

function scramOf(plan: Plan): ScramClient | undefined {
  return plan.mechanism === "PLAIN" ? undefined : new ScramClient(plan.mechanism, plan.user, plan.password);
}

/** The SCRAM text of an answer (server-first), when it is one. */
function serverTextOf(plan: Plan, frame: Uint8Array): string | undefined {
  const authBytes =
    plan.listener === "kafka" ? kafkaAuthenticateAnswer(frame)?.authBytes : nativeAnswer(frame).authBytes;
  if (authBytes === undefined || authBytes.length === 0) return undefined;
  const decoded = new TextDecoder().decode(authBytes);
  return decoded.startsWith("r=") ? decoded : undefined;
}

export interface Stats {
  frames: number;
  conversations: number;
  blind: number;
  answered: number;
  closed: number;
  /** Hostile conversations that logged in (right password, unmutated enough). */
  hostileLogins: number;
  /** Frames that got neither an answer nor a close within their bound: the frames' hex. */
  silent: string[];
  floodFrames: number;
  /** 127.0.0.1 login frames refused because 16 already waited (Kafka: closed unanswered at once). */
  floodRefused: number;
  /** The most 127.0.0.1 login frames outstanding at once (client side). */
  floodOutstandingMax: number;
  floodWaitMaxMs: number;
}

export function emptyStats(): Stats {
  return {
    frames: 0,
    conversations: 0,
    blind: 0,
    answered: 0,
    closed: 0,
    hostileLogins: 0,
    silent: [],
    floodFrames: 0,
    floodRefused: 0,
    floodOutstandingMax: 0,
    floodWaitMaxMs: 0,
  };
}

/**
 * 127.0.0.1's login frames in flight (sent, neither answered nor closed), sampled every 25 ms:
 * `max` counts those out for more than SETTLED_MS, which a refusal (at once) never is, so that the
 * client's lag in seeing refusals does not count them as waiting.
 */
export class Outstanding {
  private readonly sentAt = new Map<number, number>();
  private next = 0;
  max = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  static readonly SETTLED_MS = 300;

  start(): void {
    this.timer ??= setInterval(() => {
      const now = performance.now();
      let count = 0;
      for (const at of this.sentAt.values()) if (now - at > Outstanding.SETTLED_MS) count++;
      if (count > this.max) this.max = count;
    }, 25);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  enter(): number {
    const id = this.next++;
    this.sentAt.set(id, performance.now());
    return id;
  }

  leave(id: number): void {
    this.sentAt.delete(id);
  }
}

function isLoginFrame(frame: Uint8Array, listener: Listener): boolean {
  const key = frame.length >= 6 ? (frame[4]! << 8) | frame[5]! : -1;
  return listener === "kafka" ? key === 36 : key === 7;
}

/**
 * Runs one conversation interactively: each frame waits for its answer or the close (at most
 * `deadlineMs`; none: recorded silent). `outstanding` counts the login frames of a flood.
 */
export async function runConversation(
  random: Random,
  ports: { kafka: number; native: number },
  localAddress: string,
  stats: Stats,
  deadlineMs: number,
  flood?: { outstanding: Outstanding; stop: () => boolean; conns: Set<Conn> },
): Promise<void> {
  const plan = planConversation(random);
  const scram = scramOf(plan);
  const conn = new Conn(plan.listener === "kafka" ? ports.kafka : ports.native, localAddress);
  flood?.conns.add(conn);
  stats.conversations++;
  try {
    if (!(await conn.connected)) return;
    let serverFirst: string | undefined;
    let correlationId = random.int(1, 1000);
    for (const step of plan.steps) {
      if (flood?.stop() === true) return;
      const frame = stepFrame(random, plan, step, correlationId++, scram, serverFirst, false);
      const login = flood !== undefined && isLoginFrame(frame, plan.listener);
      const sentAt = performance.now();
      const id = login ? flood.outstanding.enter() : -1;
      conn.write(frame);
      stats.frames++;
      if (flood !== undefined) stats.floodFrames++;
      const outcome = await conn.next(deadlineMs);
      if (login) {
        flood.outstanding.leave(id);
        const waited = performance.now() - sentAt;
        if (outcome.kind !== "silent" || !flood.stop())
          stats.floodWaitMaxMs = Math.max(stats.floodWaitMaxMs, waited);
        if (refusedAsBusy(plan.listener, outcome, waited)) stats.floodRefused++;
      }
      if (outcome.kind === "silent") {
        // Cut short by the end of the flood: not a hang.
        if (flood?.stop() !== true) stats.silent.push(Buffer.from(frame).toString("hex").slice(0, 400));
        return;
      }
      if (outcome.kind === "closed") {
        stats.closed++;
        return;
      }
      stats.answered++;
      const answerText = serverTextOf(plan, outcome.frame);
      if (answerText !== undefined) serverFirst = answerText;
      if (
        step.kind === "final" &&
        (plan.listener === "kafka"
          ? kafkaAuthenticateAnswer(outcome.frame)?.errorCode === 0
          : nativeAnswer(outcome.frame).errorCode === 0)
      )
        stats.hostileLogins++;
    }
    // Sometimes a step after the end (a failure's close may not have come yet).
    if (random.next() < 0.2) {
      conn.write(stepFrame(random, plan, pick(random, plan.steps), correlationId, scram, serverFirst, false));
      stats.frames++;
    }
  } finally {
    conn.destroy();
    flood?.conns.delete(conn);
  }
}

/** A flood login frame refused because 16 of the address already waited. */
function refusedAsBusy(listener: Listener, outcome: Outcome, waitedMs: number): boolean {
  if (listener === "native")
    return (
      outcome.kind === "answer" && new TextDecoder().decode(outcome.frame).includes("too many logins from")
    );
  // Kafka closes such a connection without an answer: at once, while the hold lasts for seconds.
  return outcome.kind === "closed" && waitedMs < 50;
}

/** Writes a whole conversation at once (no answers awaited; size prefixes may lie), then closes. */
export async function runBlind(
  random: Random,
  ports: { kafka: number; native: number },
  localAddress: string,
  stats: Stats,
): Promise<void> {
  const plan = planConversation(random);
  const scram = scramOf(plan);
  const frames: Uint8Array[] = [];
  let correlationId = random.int(1, 1000);
  for (const step of plan.steps)
    frames.push(
      stepFrame(random, plan, step, correlationId++, scram, `r=${"A".repeat(20)},s=QUFBQQ==,i=4096`, true),
    );
  const destroy = random.next() < 0.5;
  stats.blind++;
  stats.frames += frames.length;
  const conn = new Conn(plan.listener === "kafka" ? ports.kafka : ports.native, localAddress);
  if (!(await conn.connected)) return;
  for (const frame of frames) conn.write(frame);
  if (destroy) conn.destroy();
  else {
    conn.end();
    await conn.next(2_000);
    conn.destroy();
  }
}

// --- Addresses -------------------------------------------------------------------------------------

/** The n-th address of 127.<net>.x.y (x 0-253, y 1-254: 64,516 of them). */
export function poolAddress(net8: number, n: number): string {
  const k = n % (254 * 254);
  return `127.${net8}.${Math.floor(k / 254)}.${(k % 254) + 1}`;
}

// --- The good client -------------------------------------------------------------------------------

/** One raw Kafka login with the right password; "busy": closed unanswered (16 already wait). */
export async function goodKafkaLogin(
  port: number,
  mechanism: Mechanism,
  deadlineMs: number,
): Promise<"ok" | "busy" | string> {
  const conn = new Conn(port, "127.0.0.1");
  try {
    if (!(await conn.connected)) return "could not connect";
    conn.write(kafka.handshake(1, text.encode(mechanism)));
    const shake = await conn.next(deadlineMs);
    if (shake.kind !== "answer" || kafkaHandshakeError(shake.frame) !== 0) return `handshake: ${shake.kind}`;
    const sendStep = async (correlationId: number, message: string) => {
      conn.write(kafka.authenticate(correlationId, text.encode(message)));
      const started = performance.now();
      const outcome = await conn.next(deadlineMs);
      if (outcome.kind === "closed" && performance.now() - started < 1_000) return "busy" as const;
      if (outcome.kind !== "answer") return `step ${correlationId}: ${outcome.kind}`;
      const answer = kafkaAuthenticateAnswer(outcome.frame);
      if (answer?.errorCode !== 0)
        return `step ${correlationId}: error ${answer?.errorCode} ${answer?.message}`;
      return answer.authBytes;
    };
    if (mechanism === "PLAIN") {
      const result = await sendStep(2, `\u0000${USER}\u0000${PASSWORD}`);
      if (typeof result === "string") return result;
    } else {
      const scram = new ScramClient(mechanism, USER, PASSWORD);
      const first = await sendStep(2, scram.first());
      if (typeof first === "string") return first;
      const final = await sendStep(3, scram.final(new TextDecoder().decode(first)));
      if (typeof final === "string") return final;
      scram.verify(new TextDecoder().decode(final));
    }
    // Logged in: a request other than the login's is served.
    conn.write(kafka.metadata(4));
    const metadata = await conn.next(deadlineMs);
    if (metadata.kind !== "answer") return `metadata after the login: ${metadata.kind}`;
    return "ok";
  } finally {
    conn.destroy();
  }
}

/**
 * A native login (BooblikClient) with the right password, then one record produced to
 * NATIVE_TOPIC and fetched back at its offset. "busy": the retriable LIMIT_EXCEEDED.
 */
export async function goodNativeLogin(
  port: number,
  mechanism: ScramMechanism,
  value: string,
): Promise<"ok" | "busy" | string> {
  let client: BooblikClient;
  try {
    client = await BooblikClient.connect({
      host: "127.0.0.1",
      port,
      retries: 0,
      user: USER,
      password: PASSWORD,
      mechanism,
    });
  } catch (error) {
    const message = (error as Error).message;
    return message.includes("too many logins from") ? "busy" : `native login: ${message}`;
  }
  try {
    const producer = new NativeProducer(client);
    const sent = await producer.send(NATIVE_TOPIC, value, { partition: 0 });
    await producer.close();
    const records = [];
    for await (const record of new Consumer(client, {
      topic: NATIVE_TOPIC,
      partition: 0,
      from: sent.offset,
      stopAtEnd: true,
    })) {
      records.push(new TextDecoder().decode(record.value ?? new Uint8Array(0)));
      break;
    }
    return records[0] === value ? "ok" : `native read back ${JSON.stringify(records)} at ${sent.offset}`;
  } catch (error) {
    return `native produce/fetch: ${(error as Error).message}`;
  } finally {
    client.close();
  }
}

/**
 * Logs in (`attempt`) until "ok", retrying "busy" after 50 ms; fails on anything else or when the
 * login took longer than `boundMs()` measured from `since()` (the bound may change while it waits:
 * a flood that ends starts its clock).
 */
export async function goodLoginWithin(
  what: string,
  attempt: () => Promise<"ok" | "busy" | string>,
  bound: () => { sinceMs: number; boundMs: number } | undefined,
): Promise<{ tries: number; busy: number; tookMs: number; finishedAt: number }> {
  const started = performance.now();
  let tries = 0;
  let busy = 0;
  for (;;) {
    tries++;
    const result = await attempt();
    const now = performance.now();
    if (result === "ok") return { tries, busy, tookMs: now - started, finishedAt: now };
    if (result !== "busy") throw new Error(`${what}: ${result}`);
    busy++;
    const limit = bound();
    if (limit !== undefined && performance.now() - limit.sinceMs > limit.boundMs)
      throw new Error(
        `${what}: still refused ${Math.round(performance.now() - limit.sinceMs)} ms after the bound began (${limit.boundMs} ms)`,
      );
    await Bun.sleep(50);
  }
}

// --- The broker --------------------------------------------------------------------------------------

export function writeUsers(file: string): string {
  const users = readUsersFileOrEmpty(file);
  setUser(users, USER, PASSWORD);
  setUser(users, ODD_USER, ODD_PASSWORD);
  writeUsersFile(file, users);
  return file;
}

export interface LoginBroker {
  broker: BrokerProcess;
  ports: { kafka: number; native: number };
  /** Log lines the fuzzer keeps (internal errors, unhandled ones, stderr), and counts by kind. */
  log: { kept: string[]; counts: Map<string, number>; stderr: string[]; done: Promise<void> };
}

/** What a log line is about, for the counts ("audit: … authentication failed", "kafka: closing …"). */
function kindOf(line: string): string {
  const l = line.replace(/^booblik: /, "");
  if (l.startsWith("audit:")) {
    const what = /\): (.*)$/.exec(l)?.[1] ?? /: ([^:]*)$/.exec(l)?.[1] ?? l;
    return `audit: ${what
      .replace(/"[^"]*"/g, '"…"')
      .replace(/\d+/g, "N")
      .slice(0, 80)}`;
  }
  return l
    .replace(/from [0-9.:]+/, "from …")
    .replace(/\d+/g, "N")
    .slice(0, 90);
}

/** A broker child with users, both listeners, PLAIN allowed without TLS; its log read as it comes. */
export async function startLoginBroker(dataDir: string, usersFile: string): Promise<LoginBroker> {
  const broker = await startBroker(dataDir, [
    "--users-file",
    usersFile,
    "--kafka-port",
    "0",
    "--sasl-plain-without-tls",
    "yes",
  ]);
  const kafkaPort = await kafkaPortOf(broker);
  const kept: string[] = [];
  const counts = new Map<string, number>();
  const stderr: string[] = [];
  const stdoutDone = (async () => {
    for (;;) {
      const line = await broker.lines.nextLine();
      if (line === undefined) return;
      const kind = kindOf(line);
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      if (/internal error|unhandled|uncaught|TypeError|RangeError/i.test(line) && kept.length < 100)
        kept.push(line);
    }
  })();
  const stderrDone = (async () => {
    const reader = broker.process.stderr.getReader();
    const decoder = new TextDecoder();
    let rest = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
      const lines = rest.split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) if (stderr.length < 200) stderr.push(line);
    }
    if (rest !== "") stderr.push(rest);
  })();
  return {
    broker,
    ports: { kafka: kafkaPort, native: broker.port },
    log: { kept, counts, stderr, done: Promise.all([stdoutDone, stderrDone]).then(() => undefined) },
  };
}

export function goodKafka(port: number, clientId: string): Kafka {
  return new Kafka({
    brokers: [`127.0.0.1:${port}`],
    clientId,
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "scram-sha-512", username: USER, password: PASSWORD },
  });
}

/** Creates the good topics (Kafka's through kafkajs, the native one through the client). */
export async function createGoodTopics(ports: { kafka: number; native: number }): Promise<void> {
  const admin = goodKafka(ports.kafka, "login-fuzz-admin").admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: GOOD_TOPIC, numPartitions: 1 }] });
  await admin.disconnect();
  const client = await BooblikClient.connect({
    host: "127.0.0.1",
    port: ports.native,
    user: USER,
    password: PASSWORD,
  });
  await client.createTopic(NATIVE_TOPIC, { partitions: 1 });
  client.close();
}

/** Every value of partition 0 of GOOD_TOPIC, read by a SASL kafkajs consumer. */
export function readGoodValues(port: number, count: number): Promise<string[]> {
  return readValuesWithKafkajs(
    goodKafka(port, "login-fuzz-reader"),
    `login-fuzz-${process.pid}`,
    GOOD_TOPIC,
    count,
  );
}

// --- The run -----------------------------------------------------------------------------------------

export interface FuzzOptions {
  ports: { kafka: number; native: number };
  seed: number;
  rounds: number;
  /** Interactive conversations per round (each from its own address). */
  conversationsPerRound: number;
  /** Blind conversations per round. */
  blindPerRound: number;
  /** At most this many interactive conversations at once. */
  concurrency: number;
  /** Every floodEvery-th round floods 127.0.0.1 (0: never). */
  floodEvery: number;
  floodConnections: number;
  /** A flood lasts at least this long (past the round's hostile traffic), so that holds grow. */
  floodMinMs: number;
  /** Added to every documented bound (loaded machines). */
  marginMs: number;
  onRound?: (round: number, stats: Stats) => void;
}

export interface FuzzResult {
  stats: Stats;
  good: {
    kafkaLogins: number;
    nativeLogins: number;
    busyRefusals: number;
    loginMaxMs: number;
    produceMaxMs: number;
    acknowledged: number;
  };
}

/**
 * Runs the rounds. Throws, naming the seed and round, when the good client is disturbed beyond
 * what the documented delays allow; the hostile side's findings are in the stats (silent frames,
 * the flood's outstanding maximum) for the caller to judge, with the broker's log.
 */
export async function fuzzLogins(options: FuzzOptions): Promise<FuzzResult> {
  const random = new Random(options.seed);
  const stats = emptyStats();
  const good = {
    kafkaLogins: 0,
    nativeLogins: 0,
    busyRefusals: 0,
    loginMaxMs: 0,
    produceMaxMs: 0,
    acknowledged: 0,
  };
  const producer: Producer = goodKafka(options.ports.kafka, "login-fuzz-good").producer({
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const interactiveDeadline = 2 * MAX_DELAY_MS + options.marginMs;
  const floodDeadline = (WAITERS_MAX + 1) * MAX_DELAY_MS + options.marginMs;
  let interactiveN = 0;
  let blindN = 0;
  let floodEndedAt = Number.NEGATIVE_INFINITY;
  let flooding = false;
  const outstanding = new Outstanding();
  outstanding.start();
  /** The bound a good login runs under now (see the header): undefined while flooded. */
  const bound = () =>
    flooding ? undefined : { sinceMs: floodEndedAt, boundMs: 2 * MAX_DELAY_MS + options.marginMs };
  try {
    for (let round = 0; round < options.rounds; round++) {
      const roundRandom = new Random((random.next() * 2 ** 32) >>> 0);
      const floodRandom = new Random((random.next() * 2 ** 32) >>> 0);
      const flood = options.floodEvery > 0 && round % options.floodEvery === options.floodEvery - 1;
      // Hostile: interactive conversations from their own addresses, and blind ones.
      const queue = Array.from({ length: options.conversationsPerRound }, () => interactiveN++);
      const hostile = (async () => {
        const workers = Array.from({ length: options.concurrency }, async () => {
          for (let n = queue.shift(); n !== undefined; n = queue.shift()) {
            const r = new Random((roundRandom.next() * 2 ** 32) >>> 0);
            await runConversation(r, options.ports, poolAddress(1, n), stats, interactiveDeadline);
          }
        });
        const blind = (async () => {
          for (let i = 0; i < options.blindPerRound; i += 8) {
            const batch: Promise<void>[] = [];
            for (let j = i; j < Math.min(options.blindPerRound, i + 8); j++) {
              const r = new Random((roundRandom.next() * 2 ** 32) >>> 0);
              batch.push(runBlind(r, options.ports, poolAddress(2, blindN++), stats));
            }
            await Promise.all(batch);
          }
        })();
        await Promise.all([...workers, blind]);
      })();
      // The flood of 127.0.0.1, for as long as the round's hostile traffic.
      let stopFlood = false;
      const floodBegan = performance.now();
      const floodConns = new Set<Conn>();
      const floodDone = flood
        ? (async () => {
            flooding = true;
            await Promise.all(
              Array.from({ length: options.floodConnections }, async () => {
                while (!stopFlood) {
                  const r = new Random((floodRandom.next() * 2 ** 32) >>> 0);
                  await runConversation(r, options.ports, "127.0.0.1", stats, floodDeadline, {
                    outstanding,
                    stop: () => stopFlood,
                    conns: floodConns,
                  });
                }
              }),
            );
          })()
        : Promise.resolve();
      // The good client meanwhile.
      const mechanism = (["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"] as const)[round % 3]!;
      const goodStarted = performance.now();
      const goodWork = (async () => {
        const kafkaLogin = await goodLoginWithin(
          `seed ${options.seed}, round ${round}: good Kafka login (${mechanism})`,
          () => goodKafkaLogin(options.ports.kafka, mechanism, floodDeadline),
          bound,
        );
        const nativeLogin = await goodLoginWithin(
          `seed ${options.seed}, round ${round}: good native login`,
          () =>
            goodNativeLogin(
              options.ports.native,
              round % 2 === 0 ? "SCRAM-SHA-256" : "SCRAM-SHA-512",
              `native ${round}`,
            ),
          bound,
        );
        good.kafkaLogins++;
        good.nativeLogins++;
        good.busyRefusals += kafkaLogin.busy + nativeLogin.busy;
        return [kafkaLogin, nativeLogin];
      })();
      const produceStarted = performance.now();
      const sent = await producer.send({
        topic: GOOD_TOPIC,
        messages: [{ key: `k${round}`, value: `good ${round}` }],
      });
      good.produceMaxMs = Math.max(good.produceMaxMs, performance.now() - produceStarted);
      if (sent[0]?.errorCode !== 0 || sent[0]?.baseOffset !== String(round))
        throw new Error(
          `seed ${options.seed}, round ${round}: the logged-in producer got ${JSON.stringify(sent)}, expected offset ${round}`,
        );
      good.acknowledged++;
      await hostile;
      if (flood) {
        // The flood's length (load, not a wait for a condition): at least floodMinMs.
        const left = floodBegan + options.floodMinMs - performance.now();
        if (left > 0) await Bun.sleep(left);
        // The flood ends: its connections close (their waiting logins are dropped unchecked).
        stopFlood = true;
        for (const conn of floodConns) conn.destroy();
        await floodDone;
        floodEndedAt = performance.now();
        flooding = false;
      }
      const logins = await goodWork;
      for (const login of logins) {
        // Logged in within the bound: counted from the flood's end in a flood round, else from the
        // round's start (a hold a flood left may still last: the same bound).
        const from = flood ? floodEndedAt : goodStarted;
        if (login.finishedAt - from > 2 * MAX_DELAY_MS + options.marginMs)
          throw new Error(
            `seed ${options.seed}, round ${round}: a good login took ${Math.round(login.finishedAt - from)} ms (bound ${2 * MAX_DELAY_MS + options.marginMs} ms)`,
          );
        // Outside a flood (and 2 × 5 s after one) a good login waits for no hold.
        if (!flood && performance.now() - floodEndedAt > 2 * MAX_DELAY_MS + options.marginMs)
          if (login.busy > 0)
            throw new Error(`seed ${options.seed}, round ${round}: a good login was refused outside a flood`);
        good.loginMaxMs = Math.max(good.loginMaxMs, login.tookMs);
      }
      stats.floodOutstandingMax = outstanding.max;
      options.onRound?.(round, stats);
    }
  } finally {
    outstanding.stop();
    await producer.disconnect();
  }
  stats.floodOutstandingMax = outstanding.max;
  return { stats, good };
}
