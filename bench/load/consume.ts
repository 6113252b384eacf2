/**
 * Raw consume load generator: reads a partition from offset 0 to `until` with FETCH requests of
 * `maxBytes`, checking both CRC32Cs of every entry (as a consumer must: on the zero-copy path nobody
 * else can) without decoding the records.
 * Usage: bun consume.ts <port> <topic> <until> [maxBytes] [CA file: speak TLS, trusting it]
 * Prints one JSON line: records, bytes, seconds, recordsPerSecond, megabytesPerSecond.
 */
import { BrokerConnection } from "../../src/client/connection.ts";
import { checkFetchedEntries } from "../../src/client/fetched.ts";
import { decodeFetchResponse, encodeFetchRequest } from "../../src/protocol/messages.ts";
import { cpuSecondsSince, reportThroughput } from "../lib/load-result.ts";

const [portText, topic, untilText, maxBytesText, caFile] = process.argv.slice(2);
const until = Number(untilText);
const maxBytes = Number(maxBytesText ?? 1024 * 1024);
const connection = await BrokerConnection.connect({
  host: "127.0.0.1",
  port: Number(portText),
  ...(caFile === undefined ? {} : { tls: { ca: await Bun.file(caFile).text() } }),
});
let offset = 0;
let bytes = 0;
const cpuStart = process.cpuUsage();
const start = performance.now();
while (offset < until) {
  const result = await connection.send(
    (writer, id) =>
      encodeFetchRequest(writer, id, { topic: topic!, partition: 0, offset, maxBytes, maxWaitMs: 0 }),
    (reader) => {
      const response = decodeFetchResponse(reader);
      return { checked: checkFetchedEntries(response.records, offset), bytes: response.records.length };
    },
  );
  offset = result.checked.nextFetchOffset;
  bytes += result.bytes;
}
const elapsed = (performance.now() - start) / 1000;
connection.close();
reportThroughput(offset, bytes, elapsed, cpuSecondsSince(cpuStart));
