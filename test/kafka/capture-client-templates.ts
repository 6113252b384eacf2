/**
 * Captures a request frame of every (API key, version) booblik advertises and writes them to
 * fixtures/fuzz-templates-versions.json, beside capture-fuzz-templates.ts's kafkajs frames: the
 * fuzzer (fuzz-kafka.ts) mutates both. Run by hand when the served versions change (needs java and
 * javac, and kafka-clients 4.1.1 in the compat cache, as `bun run compat` fetches it):
 *
 *   bun test/kafka/capture-client-templates.ts
 *
 * Where the frames come from, in this order (the first answered frame of each (key, version) and
 * source is kept):
 * 1. The Java client (kafka-clients 4.1.1; test/kafka/templates/ClientTemplates.java): AdminClient,
 *    an idempotent producer and a consumer group, recorded by a TCP proxy in front of a broker
 *    child process started with `--kafka-advertised-listener` set to the proxy, so that every
 *    connection the client makes goes through it. Java picks the highest version both sides know.
 *    Its SCRAM login goes to a second broker with a users file, through a second proxy.
 * 2. Hand-built with test/kafka/bytes.ts: AlterConfigs 0-1 (the Java client no longer sends it) and
 *    SaslHandshake v0 (which booblik advertises but refuses by closing, as documented in
 *    docs/kafka.md; the one template that is not answered).
 * 3. Every other version: a captured frame of the same API re-encoded at that version by Kafka's own
 *    generated message classes (ClientTemplates.java `reencode`), from the nearest version captured.
 * Every frame of 2 and 3 is then sent to the broker on a connection of its own (SaslAuthenticate
 * after a SaslHandshake v1) and kept only if answered: no template is a frame the handler refused
 * by closing the connection. Topic names start with `tpl-`, group names with `tpl`, so that the
 * fuzzer's replayed templates do not touch the well-behaved client's topic.
 */
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { compatCache } from "../../bench/compat/kafka-node.ts";
import { readUsersFileOrEmpty, setUser, writeUsersFile } from "../../src/broker/users-file.ts";
import { KAFKA_API, KAFKA_API_NAMES } from "../../src/kafka/apis.ts";
import { ADVERTISED_VERSIONS } from "../../src/kafka/handler.ts";
import { type BrokerProcess, startBroker } from "../helpers/broker-process.ts";
import { Expect } from "./bytes.ts";
import { coverageTable, readTemplates, type VersionTemplate } from "./fuzz-templates.ts";

const KAFKA_CLIENTS = "4.1.1";
const lib = path.join(compatCache, `lib-${KAFKA_CLIENTS}`);
if (!fs.existsSync(path.join(lib, `kafka-clients-${KAFKA_CLIENTS}.jar`)))
  throw new Error(`no kafka-clients ${KAFKA_CLIENTS} in ${lib}: run \`bun run compat\` once to fetch it`);

interface Recorded extends VersionTemplate {
  answered: boolean;
  correlationId: number;
}

/**
 * A TCP proxy that records every request frame (int32 size + body) a client sends and marks it
 * answered when a response frame with its correlation id comes back.
 */
class RecordingProxy {
  readonly recorded: Recorded[] = [];
  source = "";
  port = 0;
  upstreamPort = 0;
  private readonly server = net.createServer((client) => this.accept(client));

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.upstreamPort, "127.0.0.1");
    const pending = new Map<number, Recorded>();
    client.on(
      "data",
      frames((body) => {
        const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
        if (body.length < 8) return;
        const apiKey = view.getInt16(0);
        const record: Recorded = {
          api: KAFKA_API_NAMES[apiKey] ?? `unknown ${apiKey}`,
          apiKey,
          apiVersion: view.getInt16(2),
          source: this.source,
          hex: Buffer.from(body).toString("hex"),
          answered: false,
          correlationId: view.getInt32(4),
        };
        this.recorded.push(record);
        pending.set(record.correlationId, record);
      }),
    );
    upstream.on(
      "data",
      frames((body) => {
        if (body.length < 4) return;
        const record = pending.get(new DataView(body.buffer, body.byteOffset, 4).getInt32(0));
        if (record) record.answered = true;
      }),
    );
    client.pipe(upstream);
    upstream.pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  }
}

/** A `data` listener that calls `onFrame` with each complete frame body of the stream. */
function frames(onFrame: (body: Uint8Array) => void): (chunk: Buffer) => void {
  let buffered = Buffer.alloc(0);
  return (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4) {
      const size = buffered.readInt32BE(0);
      if (buffered.length < 4 + size) break;
      onFrame(Uint8Array.from(buffered.subarray(4, 4 + size)));
      buffered = buffered.subarray(4 + size);
    }
  };
}

/**
 * Sends `bodies` in order on one new connection, each after the previous one's answer; returns for
 * each whether it was answered (a response with its correlation id) before the connection closed.
 */
async function sendInTurn(port: number, bodies: Uint8Array[]): Promise<boolean[]> {
  const answered = bodies.map(() => false);
  await new Promise<void>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let next = 0;
    const sendNext = () => {
      if (next === bodies.length) {
        socket.destroy();
        resolve();
        return;
      }
      const body = bodies[next]!;
      const size = Buffer.alloc(4);
      size.writeInt32BE(body.length);
      socket.write(Buffer.concat([size, body]));
    };
    const timer = setTimeout(() => socket.destroy(), 20_000);
    socket.on(
      "data",
      frames((response) => {
        const expected = Buffer.from(bodies[next]!).readInt32BE(4);
        if (response.length >= 4 && Buffer.from(response).readInt32BE(0) === expected) answered[next] = true;
        next++;
        sendNext();
      }),
    );
    socket.on("connect", sendNext);
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return answered;
}

async function run(command: string[], what: string): Promise<string> {
  const child = Bun.spawn(command, { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`${what} exited with ${code}:\n${stderr}\n${stdout}`);
  return stdout;
}

async function runWithInput(command: string[], input: string): Promise<string> {
  const child = Bun.spawn(command, {
    stdin: new TextEncoder().encode(input),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  if (code !== 0) throw new Error(`${command.join(" ")} exited with ${code}:\n${stderr}`);
  return stdout;
}

async function brokerBehind(proxy: RecordingProxy, dataDir: string, extra: string[]): Promise<BrokerProcess> {
  const proxyPort = await proxy.listen();
  const broker = await startBroker(dataDir, [
    "--kafka-port",
    "0",
    "--kafka-advertised-listener",
    `127.0.0.1:${proxyPort}`,
    "--authorizer",
    "acl",
    ...extra,
  ]);
  const line = await broker.lines.waitFor((l) => l.includes("Kafka protocol on"), "the Kafka listener line");
  proxy.upstreamPort = Number(/Kafka protocol on 127\.0\.0\.1:(\d+)/.exec(line)?.[1]);
  void broker.lines.rest(); // read its log as it comes: a full stdout pipe would block it
  return broker;
}

/** A request header v1 (every non-flexible version) of this API and version. */
function header(apiKey: number, version: number): Expect {
  return new Expect().i16(apiKey).i16(version).i32(7).str("tpl");
}

/**
 * The versions kafka-clients 4.x cannot write (KIP-896 removed them; booblik still serves them):
 * hand-built after each API's message JSON of Kafka 3.9, with the values the clients above used.
 * Produce v0-2 is the Java client's v8 frame (v3-8 share one layout) without its transactional_id.
 */
const OLD_VERSIONS: Record<string, (version: number, produce?: VersionTemplate) => Uint8Array> = {};
for (const v of [0, 1, 2])
  OLD_VERSIONS[`${KAFKA_API.PRODUCE}/${v}`] = (version, produce) => {
    if (produce === undefined) throw new Error("no Produce v8 frame of the Java client");
    const frame = Buffer.from(produce.hex, "hex");
    const clientIdEnd = 10 + frame.readInt16BE(8);
    const transactionalIdLength = frame.readInt16BE(clientIdEnd);
    const rest = frame.subarray(clientIdEnd + 2 + Math.max(0, transactionalIdLength));
    const out = Buffer.concat([frame.subarray(0, clientIdEnd), rest]);
    out.writeInt16BE(version, 2);
    return Uint8Array.from(out);
  };
for (const v of [0, 1, 2, 3])
  OLD_VERSIONS[`${KAFKA_API.FETCH}/${v}`] = (version) => {
    const e = header(KAFKA_API.FETCH, version).i32(-1).i32(500).i32(1);
    if (version >= 3) e.i32(1 << 20);
    return e
      .i32(1)
      .str("tpl-a")
      .i32(2)
      .i32(0)
      .i64(0)
      .i32(1 << 20)
      .i32(1)
      .i64(1)
      .i32(1 << 20)
      .body();
  };
for (const v of [0, 1])
  OLD_VERSIONS[`${KAFKA_API.LIST_OFFSETS}/${v}`] = (version) => {
    const e = header(KAFKA_API.LIST_OFFSETS, version).i32(-1).i32(1).str("tpl-a").i32(2);
    e.i32(0).i64(-1);
    if (version === 0) e.i32(1);
    e.i32(1).i64(-2);
    if (version === 0) e.i32(1);
    return e.body();
  };
for (const v of [0, 1, 2, 3])
  OLD_VERSIONS[`${KAFKA_API.METADATA}/${v}`] = (version) =>
    header(KAFKA_API.METADATA, version).i32(2).str("tpl-a").str("tpl-b").body();
for (const v of [0, 1])
  OLD_VERSIONS[`${KAFKA_API.OFFSET_COMMIT}/${v}`] = (version) => {
    const e = header(KAFKA_API.OFFSET_COMMIT, version).str("tpl-group");
    if (version === 1) e.i32(-1).str("");
    e.i32(1).str("tpl-a").i32(1).i32(0).i64(1);
    if (version === 1) e.i64(-1);
    return e.str("meta").body();
  };
OLD_VERSIONS[`${KAFKA_API.OFFSET_FETCH}/0`] = (version) =>
  header(KAFKA_API.OFFSET_FETCH, version).str("tpl-group").i32(1).str("tpl-a").i32(2).i32(0).i32(1).body();
OLD_VERSIONS[`${KAFKA_API.FIND_COORDINATOR}/0`] = (version) =>
  header(KAFKA_API.FIND_COORDINATOR, version).str("tpl-group").body();
for (const v of [0, 1])
  OLD_VERSIONS[`${KAFKA_API.JOIN_GROUP}/${v}`] = (version) => {
    // A group of its own: the join is answered at once, not after other members rejoin.
    const e = header(KAFKA_API.JOIN_GROUP, version).str(`tpl-hand-${version}`).i32(6000);
    if (version === 1) e.i32(6000);
    const subscription = new Expect().i16(0).i32(1).str("tpl-a").i32(-1).body();
    return e.str("").str("consumer").i32(1).str("range").i32(subscription.length).raw(subscription).body();
  };
for (const v of [0, 1, 2])
  OLD_VERSIONS[`${KAFKA_API.LEAVE_GROUP}/${v}`] = (version) =>
    header(KAFKA_API.LEAVE_GROUP, version).str("tpl-group").str("tpl-member").body();
for (const v of [0, 1])
  OLD_VERSIONS[`${KAFKA_API.CREATE_TOPICS}/${v}`] = (version) => {
    const e = header(KAFKA_API.CREATE_TOPICS, version).i32(1).str(`tpl-c${version}`).i32(1).i16(1).i32(0);
    e.i32(1).str("retention.ms").str("60000").i32(5000);
    if (version === 1) e.i8(0);
    return e.body();
  };
OLD_VERSIONS[`${KAFKA_API.DELETE_TOPICS}/0`] = (version) =>
  header(KAFKA_API.DELETE_TOPICS, version).i32(1).str("tpl-c0").i32(5000).body();
for (const v of [0, 1])
  OLD_VERSIONS[`${KAFKA_API.OFFSET_FOR_LEADER_EPOCH}/${v}`] = (version) =>
    header(KAFKA_API.OFFSET_FOR_LEADER_EPOCH, version).i32(1).str("tpl-a").i32(1).i32(0).i32(0).body();
OLD_VERSIONS[`${KAFKA_API.DESCRIBE_ACLS}/0`] = (version) =>
  header(KAFKA_API.DESCRIBE_ACLS, version).i8(1).str(null).str(null).str(null).i8(1).i8(1).body();
// CreateAcls v0 (one creation) and DeleteAcls v0 (one filter) name the same fields: a TOPIC, tpl-x,
// User:tpl from any host, READ, ALLOW.
for (const apiKey of [KAFKA_API.CREATE_ACLS, KAFKA_API.DELETE_ACLS])
  OLD_VERSIONS[`${apiKey}/0`] = (version) =>
    header(apiKey, version).i32(1).i8(2).str("tpl-x").str("User:tpl").str("*").i8(3).i8(3).body();
OLD_VERSIONS[`${KAFKA_API.DESCRIBE_CONFIGS}/0`] = (version) =>
  header(KAFKA_API.DESCRIBE_CONFIGS, version).i32(1).i8(2).str("tpl-a").i32(-1).body();
OLD_VERSIONS[`${KAFKA_API.DESCRIBE_LOG_DIRS}/0`] = (version) =>
  header(KAFKA_API.DESCRIBE_LOG_DIRS, version).i32(1).str("tpl-a").i32(2).i32(0).i32(1).body();
OLD_VERSIONS[`${KAFKA_API.ELECT_LEADERS}/0`] = (version) =>
  header(KAFKA_API.ELECT_LEADERS, version).i32(1).str("tpl-a").i32(1).i32(0).i32(1000).body();

const work = fs.mkdtempSync(path.join(os.tmpdir(), "booblik-client-templates-"));
const plainProxy = new RecordingProxy();
const saslProxy = new RecordingProxy();
const brokers: BrokerProcess[] = [];
const templates: VersionTemplate[] = [];
try {
  const usersFile = path.join(work, "users.json");
  const users = readUsersFileOrEmpty(usersFile);
  setUser(users, "tpl", "tpl-password");
  writeUsersFile(usersFile, users);
  brokers.push(
    await brokerBehind(plainProxy, path.join(work, "plain"), ["--super-users", "User:ANONYMOUS"]),
    await brokerBehind(saslProxy, path.join(work, "sasl"), [
      "--users-file",
      usersFile,
      "--super-users",
      "User:tpl",
      "--kafka-auto-create-topics",
      "on",
    ]),
  );
  const classes = path.join(work, "classes");
  const javaSource = path.join(import.meta.dir, "templates", "ClientTemplates.java");
  await run(["javac", "-nowarn", "-d", classes, "-cp", `${lib}/*`, javaSource], "javac");
  const java = [
    "java",
    "-cp",
    `${lib}/*:${classes}`,
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "ClientTemplates",
  ];
  const javaSourceName = `kafka-clients ${KAFKA_CLIENTS} (Java AdminClient, idempotent producer, consumer group)`;
  plainProxy.source = javaSourceName;
  saslProxy.source = `kafka-clients ${KAFKA_CLIENTS} (SCRAM-SHA-256 login of an idempotent producer)`;
  await run(
    [...java, "capture", `127.0.0.1:${plainProxy.port}`, `127.0.0.1:${saslProxy.port}`],
    "the Java client session",
  );

  const sent = [...plainProxy.recorded, ...saslProxy.recorded];
  console.log(
    `the Java client sent ${sent.length} requests: ${[...new Set(sent.map((r) => `${r.api} v${r.apiVersion}${r.answered ? "" : " (unanswered)"}`))].join(", ")}`,
  );
  // The first answered frame of each (key, version) the Java client sent.
  const seen = new Set<string>();
  for (const record of [...plainProxy.recorded, ...saslProxy.recorded]) {
    const key = `${record.apiKey}/${record.apiVersion}`;
    if (!record.answered || seen.has(key)) continue;
    seen.add(key);
    const { answered: _a, correlationId: _c, ...template } = record;
    templates.push(template);
  }

  // Hand-built: AlterConfigs 0-1 (one layout), OffsetFetch v6 and SaslHandshake v0.
  const handBuilt: VersionTemplate[] = [];
  for (const version of [0, 1]) {
    const body = new Expect()
      .i16(KAFKA_API.ALTER_CONFIGS)
      .i16(version)
      .i32(7)
      .str("tpl")
      .i32(1)
      .i8(2)
      .str("tpl-a")
      .i32(2)
      .str("retention.ms")
      .str("90000")
      .str("max.message.bytes")
      .str("1048588")
      .i8(0)
      .body();
    handBuilt.push(hand(KAFKA_API.ALTER_CONFIGS, version, body));
  }
  // OffsetFetch v6 (flexible, before v7's require_stable): the Java client sends v7 with
  // require_stable set, which kafka-clients will not write at v6 (a non-default field), so the
  // re-encoder cannot make it. Request header v2 (client id, then a tag buffer), group "tpl", the
  // topic tpl-a's partition 0, tag buffers.
  handBuilt.push(
    hand(
      KAFKA_API.OFFSET_FETCH,
      6,
      new Expect()
        .i16(KAFKA_API.OFFSET_FETCH)
        .i16(6)
        .i32(7)
        .str("tpl")
        .uvarint(0)
        .cstr("tpl")
        .uvarint(2)
        .cstr("tpl-a")
        .uvarint(2)
        .i32(0)
        .uvarint(0)
        .uvarint(0)
        .body(),
    ),
  );
  const handshakeV0 = hand(
    KAFKA_API.SASL_HANDSHAKE,
    0,
    new Expect().i16(KAFKA_API.SASL_HANDSHAKE).i16(0).i32(7).str("tpl").str("SCRAM-SHA-256").body(),
  );

  // Re-encoded: every advertised version still without a frame, from the nearest captured version.
  // Sources: the Java client's frames, then the hand-built ones, then capture-fuzz-templates.ts's
  // kafkajs and hand-built frames (for an API the Java client did not send).
  // Not this script's own earlier output: a second run would re-encode from its hand-built old
  // versions (which kafka-clients cannot read) and leave out the pairs that file already has.
  const earlier = readTemplates(["fuzz-templates.json"]);
  const have = new Map<number, VersionTemplate[]>();
  for (const t of [...templates, ...handBuilt, ...earlier])
    have.set(t.apiKey, [...(have.get(t.apiKey) ?? []), t]);
  const wanted: { to: number; from: VersionTemplate }[] = [];
  for (const [apiKey, range] of ADVERTISED_VERSIONS) {
    const sources = have.get(apiKey) ?? [];
    for (let version = range.min; version <= range.max; version++) {
      if (sources.some((t) => t.apiVersion === version)) continue;
      if (apiKey === KAFKA_API.SASL_HANDSHAKE && version === 0) continue;
      // The nearest version; the first source (the Java client) among equals.
      const from = sources
        .map((t, order) => ({ t, order }))
        .sort(
          (a, b) =>
            Math.abs(a.t.apiVersion - version) - Math.abs(b.t.apiVersion - version) ||
            b.t.apiVersion - a.t.apiVersion ||
            a.order - b.order,
        )[0]?.t;
      if (from === undefined) throw new Error(`no frame of ${KAFKA_API_NAMES[apiKey]} to re-encode`);
      wanted.push({ to: version, from });
    }
  }
  const reencoded = (
    await runWithInput([...java, "reencode"], wanted.map((w) => `${w.to} ${w.from.hex}\n`).join(""))
  )
    .trim()
    .split("\n");
  const candidates: VersionTemplate[] = [...handBuilt];
  wanted.forEach((w, i) => {
    const line = reencoded[i] ?? "ERR no answer";
    if (!line.startsWith("ERR ")) {
      candidates.push({
        api: w.from.api,
        apiKey: w.from.apiKey,
        apiVersion: w.to,
        source: `re-encoded at v${w.to} by kafka-clients ${KAFKA_CLIENTS}'s message classes from: ${w.from.source} v${w.from.apiVersion}`,
        hex: line,
      });
      return;
    }
    // A version Kafka 4.x no longer has (KIP-896): hand-built.
    const build = OLD_VERSIONS[`${w.from.apiKey}/${w.to}`];
    if (build === undefined) {
      console.log(`  no frame of ${w.from.api} v${w.to}: ${line.slice(4)}`);
      return;
    }
    const produce = templates.find((t) => t.apiKey === KAFKA_API.PRODUCE && t.apiVersion === 8);
    candidates.push(hand(w.from.apiKey, w.to, build(w.to, produce)));
  });

  // Each candidate on a connection of its own, SASL ones after a SaslHandshake v1 (captured above),
  // to the broker they belong to; kept only if answered.
  const saslKeys = new Set<number>([KAFKA_API.SASL_HANDSHAKE, KAFKA_API.SASL_AUTHENTICATE]);
  const handshakeV1 = templates.find((t) => t.apiKey === KAFKA_API.SASL_HANDSHAKE && t.apiVersion === 1);
  for (const candidate of candidates) {
    const body = Uint8Array.from(Buffer.from(candidate.hex, "hex"));
    const sasl = saslKeys.has(candidate.apiKey);
    const before =
      sasl && candidate.apiKey === KAFKA_API.SASL_AUTHENTICATE && handshakeV1
        ? [Uint8Array.from(Buffer.from(handshakeV1.hex, "hex"))]
        : [];
    const port = sasl ? saslProxy.upstreamPort : plainProxy.upstreamPort;
    const answered = await sendInTurn(port, [...before, body]);
    if (answered.every(Boolean)) templates.push(candidate);
    else
      console.log(
        `  not answered, left out: ${candidate.api} v${candidate.apiVersion} (${candidate.source})`,
      );
  }
  // SaslHandshake v0 is refused by design (closed, not answered): kept, as the one exception.
  const [v0Answered] = await sendInTurn(saslProxy.upstreamPort, [
    Uint8Array.from(Buffer.from(handshakeV0.hex, "hex")),
  ]);
  if (v0Answered) throw new Error("SaslHandshake v0 was answered: update this script and docs/kafka.md");
  templates.push(handshakeV0);
  for (const broker of brokers) {
    if (broker.process.exitCode !== null) throw new Error("a broker exited during the capture");
  }
} finally {
  for (const broker of brokers) await broker.stop("SIGTERM");
  await plainProxy.close();
  await saslProxy.close();
  fs.rmSync(work, { recursive: true, force: true });
}

function hand(apiKey: number, apiVersion: number, body: Uint8Array): VersionTemplate {
  return {
    api: KAFKA_API_NAMES[apiKey]!,
    apiKey,
    apiVersion,
    source: "hand-built (test/kafka/bytes.ts)",
    hex: Buffer.from(body).toString("hex"),
  };
}

templates.sort((a, b) => a.apiKey - b.apiKey || a.apiVersion - b.apiVersion);
const out = path.join(import.meta.dir, "fixtures", "fuzz-templates-versions.json");
fs.writeFileSync(out, `${JSON.stringify(templates, null, 2)}\n`);
console.log(`wrote ${templates.length} frames to ${out}`);
console.log(coverageTable());
