/**
 * The examples in docs/protocol.md ("Examples") are what the codec writes, byte for byte: each block
 * marked `<!-- example:NAME -->` is parsed (the hex bytes before the first run of two spaces on each
 * line) and compared with the frame this test builds with src/protocol and src/record. The FETCH
 * answer is also read back the way the client reads it: the record below the asked offset is
 * dropped, the other decodes to what the PRODUCE carried.
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { checkFetchedEntries, forEachFetchedRecord } from "../../src/client/fetched.ts";
import {
  encodeAclsResponse,
  encodeCreateAclsRequest,
  encodeDescribeAclsRequest,
} from "../../src/protocol/acl-messages.ts";
import { ByteWriter } from "../../src/protocol/buffer.ts";
import {
  encodeOffsetCommitRequest,
  encodeOffsetFetchRequest,
  encodeOffsetFetchResponse,
} from "../../src/protocol/group-messages.ts";
import {
  encodeEmptyResponse,
  encodeFetchRequest,
  encodeFetchResponseHeader,
  encodeMetadataRequest,
  encodeMetadataResponse,
  encodeProduceRequest,
  encodeProduceResponse,
} from "../../src/protocol/messages.ts";
import {
  encodeInitProducerIdRequest,
  encodeInitProducerIdResponse,
} from "../../src/protocol/producer-messages.ts";
import { encodePurgeRequest, encodePurgeResponse } from "../../src/protocol/topic-admin.ts";
import {
  encodeBatch,
  RecordBatchReader,
  recordHeaders,
  recordKey,
  recordValue,
  stampBatch,
} from "../../src/record/batch.ts";
import { writeFramedEntry } from "../../src/record/entries.ts";

const DOC = fs.readFileSync(path.join(import.meta.dir, "../../docs/protocol.md"), "utf8");
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
const text = new TextEncoder();

/** The bytes of the block marked `<!-- example:name -->`. */
function example(name: string): string {
  const marker = `<!-- example:${name} -->\n\`\`\`\n`;
  const start = DOC.indexOf(marker);
  if (start < 0) throw new Error(`docs/protocol.md has no example ${name}`);
  const end = DOC.indexOf("```", start + marker.length);
  let bytes = "";
  for (const line of DOC.slice(start + marker.length, end).split("\n")) {
    const field = line.split(/ {2,}/)[0]!.trim();
    if (field === "") continue;
    for (const token of field.split(" ")) {
      if (!/^[0-9a-f]{2}$/.test(token))
        throw new Error(`example ${name}: "${token}" in "${line}" is not a byte`);
      bytes += token;
    }
  }
  return bytes;
}

function frame(write: (writer: ByteWriter) => void): string {
  const writer = new ByteWriter();
  write(writer);
  return hex(writer.written());
}

/** The batch of the PRODUCE example, as the producer writes it. */
function exampleBatch(): Uint8Array {
  return encodeBatch([
    {
      key: text.encode("user-7"),
      value: text.encode("click"),
      headers: [{ key: "trace", value: text.encode("ab") }],
      timestamp: 1_700_000_000_000,
    },
    { key: text.encode("user-7"), value: text.encode("view"), timestamp: 1_700_000_000_005 },
  ]);
}

test("the METADATA example is what the codec writes", () => {
  expect(example("metadata-request")).toBe(frame((w) => encodeMetadataRequest(w, 1, { topics: [] })));
  expect(example("metadata-response")).toBe(
    frame((w) =>
      encodeMetadataResponse(w, 1, { brokerVersion: "0.1.0", crc32cImplementation: "isa-l-01", topics: [] }),
    ),
  );
});

test("the PRODUCE example is what the codec and the batch writer write", () => {
  expect(example("produce-request")).toBe(
    frame((w) => encodeProduceRequest(w, 2, { topic: "orders", partition: 0, records: exampleBatch() })),
  );
  expect(example("produce-response")).toBe(
    frame((w) =>
      encodeProduceResponse(w, 2, {
        firstOffset: 5,
        recordCount: 2,
        durability: "forced",
        logAppendTimeMs: -1,
      }),
    ),
  );
});

test("the FETCH example is the stored entry of that batch, and a reader drops the record below the offset", () => {
  expect(example("fetch-request")).toBe(
    frame((w) =>
      encodeFetchRequest(w, 3, { topic: "orders", partition: 0, offset: 6, maxBytes: 65536, maxWaitMs: 0 }),
    ),
  );
  const stored = exampleBatch();
  stampBatch(stored, 0, 5, -1);
  const entry = new Uint8Array(8 + stored.length);
  writeFramedEntry(entry, 0, stored);
  const header = frame((w) =>
    encodeFetchResponseHeader(w, 3, { logStartOffset: 0, nextOffset: 7, recordsBytes: entry.length }),
  );
  const documented = example("fetch-response");
  expect(documented).toBe(header + hex(entry));

  const records = Buffer.from(documented.slice(header.length), "hex");
  const checked = checkFetchedEntries(records, 6);
  expect([checked.firstOffset, checked.nextFetchOffset]).toEqual([5, 7]);
  const seen: unknown[] = [];
  forEachFetchedRecord(records, checked.batchBounds, 6, new RecordBatchReader(), (view) =>
    seen.push({
      offset: view.offset,
      timestamp: view.timestamp,
      key: Buffer.from(recordKey(view)!).toString(),
      value: Buffer.from(recordValue(view)!).toString(),
      headers: recordHeaders(view).length,
    }),
  );
  expect(seen).toEqual([
    { offset: 6, timestamp: 1_700_000_000_005, key: "user-7", value: "view", headers: 0 },
  ]);
});

test("the OFFSET_COMMIT and OFFSET_FETCH examples are what the codec writes", () => {
  expect(example("offset-commit-request")).toBe(
    frame((w) =>
      encodeOffsetCommitRequest(w, 3, {
        group: "billing",
        offsets: [{ topic: "orders", partition: 0, offset: 42, metadata: "" }],
      }),
    ),
  );
  expect(example("offset-fetch-request")).toBe(
    frame((w) =>
      encodeOffsetFetchRequest(w, 4, { group: "billing", topics: [{ topic: "orders", partitions: [0, 1] }] }),
    ),
  );
  expect(example("offset-fetch-response")).toBe(
    frame((w) =>
      encodeOffsetFetchResponse(w, 4, [
        { topic: "orders", partition: 0, offset: 42, commitTimestampMs: 1_700_000_000_000, metadata: "" },
        { topic: "orders", partition: 1, offset: -1, commitTimestampMs: -1, metadata: "" },
      ]),
    ),
  );
});

test("the PURGE examples are what the codec writes", () => {
  expect(example("purge-request")).toBe(
    frame((w) =>
      encodePurgeRequest(w, 2, {
        name: "t",
        partitions: [
          { partition: 0, beforeOffset: 17 },
          { partition: 1, beforeOffset: -1 },
        ],
      }),
    ),
  );
  expect(example("purge-response")).toBe(
    frame((w) =>
      encodePurgeResponse(w, 2, [
        { partition: 0, logStartOffset: 17 },
        { partition: 1, logStartOffset: 10 },
      ]),
    ),
  );
});

test("the INIT_PRODUCER_ID example is what the codec writes", () => {
  expect(example("init-producer-id-request")).toBe(frame((w) => encodeInitProducerIdRequest(w, 5)));
  expect(example("init-producer-id-response")).toBe(
    frame((w) => encodeInitProducerIdResponse(w, 5, { producerId: 1000, producerEpoch: 0 })),
  );
});

test("the ACL examples are what the codec writes", () => {
  const acl = {
    resourceType: 2,
    resourceName: "orders",
    patternType: 3,
    principal: "User:alice",
    host: "*",
    operation: 3,
    permission: 3,
  };
  expect(example("create-acls-request")).toBe(frame((w) => encodeCreateAclsRequest(w, 3, [acl])));
  expect(example("create-acls-response")).toBe(frame((w) => encodeEmptyResponse(w, 3)));
  expect(example("describe-acls-request")).toBe(
    frame((w) =>
      encodeDescribeAclsRequest(w, 4, {
        resourceType: 1,
        resourceName: null,
        patternType: 1,
        principal: null,
        host: null,
        operation: 1,
        permission: 1,
      }),
    ),
  );
  expect(example("describe-acls-response")).toBe(frame((w) => encodeAclsResponse(w, 4, [acl])));
});
