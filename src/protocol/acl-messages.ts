/**
 * Payloads of the ACL requests of the native protocol: CREATE_ACLS (16), DESCRIBE_ACLS (17) and
 * DELETE_ACLS (18). Byte tables in docs/protocol.md ("ACLs"); field order here is the order on the
 * wire. Every enum is a u8 holding Kafka's code (ResourceType, PatternType, AclOperation,
 * AclPermissionType; src/auth/acl.ts), so a value means the same on both listeners.
 *
 *   ACL     resourceType u8, resourceName string, patternType u8, principal string, host string,
 *           operation u8, permission u8
 *   filter  the same fields; an empty string matches any value (no ACL has an empty name, principal
 *           or host), and the codes ANY (1) and, for patternType, MATCH (2) exist only here
 *
 * Invariants: a decoder consumes its frame exactly (leftover bytes are an error); a count is checked
 * against the bytes left (each entry is at least ACL_WIRE_BYTES_MIN) and against
 * ACL_REQUEST_ENTRIES_MAX before anything is allocated for it. Enum values are checked by the
 * broker (src/auth/acl.ts), not here: the codec only says what the bytes are.
 */
import { ACL_REQUEST_ENTRIES_MAX } from "../domain/limits.ts";
import { type ByteReader, type ByteWriter, ProtocolError } from "./buffer.ts";
import { API } from "./frame.ts";
import { beginRequest, beginResponse, endFrame } from "./messages.ts";

/** One ACL on the wire (src/auth/acl.ts `Acl`, field for field). */
export interface WireAcl {
  resourceType: number;
  resourceName: string;
  patternType: number;
  principal: string;
  host: string;
  operation: number;
  permission: number;
}

/** A filter on the wire (src/auth/acl.ts `AclFilter`): null names match any value. */
export interface WireAclFilter {
  resourceType: number;
  resourceName: string | null;
  patternType: number;
  principal: string | null;
  host: string | null;
  operation: number;
  permission: number;
}

/** Smallest encoded ACL or filter: four u8 and three empty strings. */
const ACL_WIRE_BYTES_MIN = 4 + 3 * 2;

function writeAcl(writer: ByteWriter, acl: WireAcl | WireAclFilter): void {
  writer
    .u8(acl.resourceType)
    .string(acl.resourceName ?? "")
    .u8(acl.patternType)
    .string(acl.principal ?? "")
    .string(acl.host ?? "")
    .u8(acl.operation)
    .u8(acl.permission);
}

function readAcl(reader: ByteReader): WireAcl {
  const resourceType = reader.u8("resourceType");
  const resourceName = reader.string("resourceName");
  const patternType = reader.u8("patternType");
  const principal = reader.string("principal");
  const host = reader.string("host");
  const operation = reader.u8("operation");
  const permission = reader.u8("permission");
  return { resourceType, resourceName, patternType, principal, host, operation, permission };
}

function readFilter(reader: ByteReader): WireAclFilter {
  const acl = readAcl(reader);
  const anyWhenEmpty = (value: string) => (value === "" ? null : value);
  return {
    ...acl,
    resourceName: anyWhenEmpty(acl.resourceName),
    principal: anyWhenEmpty(acl.principal),
    host: anyWhenEmpty(acl.host),
  };
}

function readCount(reader: ByteReader, what: string): number {
  const count = reader.u32(`${what} count`);
  if (count > ACL_REQUEST_ENTRIES_MAX)
    throw new ProtocolError(`${count} ${what}s in one request: at most ${ACL_REQUEST_ENTRIES_MAX}`);
  if (count * ACL_WIRE_BYTES_MIN > reader.remaining)
    throw new ProtocolError(`${what} count ${count} cannot fit in the frame`);
  return count;
}

export function encodeCreateAclsRequest(writer: ByteWriter, correlationId: number, acls: WireAcl[]): void {
  const start = beginRequest(writer, API.CREATE_ACLS, correlationId);
  writer.u32(acls.length);
  for (const acl of acls) writeAcl(writer, acl);
  endFrame(writer, start);
}

export function decodeCreateAclsRequest(reader: ByteReader): WireAcl[] {
  const count = readCount(reader, "ACL");
  const acls: WireAcl[] = [];
  for (let i = 0; i < count; i++) acls.push(readAcl(reader));
  reader.expectEnd("CREATE_ACLS request");
  return acls;
}

export function encodeDescribeAclsRequest(
  writer: ByteWriter,
  correlationId: number,
  filter: WireAclFilter,
): void {
  const start = beginRequest(writer, API.DESCRIBE_ACLS, correlationId);
  writeAcl(writer, filter);
  endFrame(writer, start);
}

export function decodeDescribeAclsRequest(reader: ByteReader): WireAclFilter {
  const filter = readFilter(reader);
  reader.expectEnd("DESCRIBE_ACLS request");
  return filter;
}

export function encodeAclsResponse(
  writer: ByteWriter,
  correlationId: number,
  acls: readonly WireAcl[],
): void {
  const start = beginResponse(writer, correlationId);
  writer.u32(acls.length);
  for (const acl of acls) writeAcl(writer, acl);
  endFrame(writer, start);
}

/** DESCRIBE_ACLS's answer: the matching ACLs. */
export function decodeAclsResponse(reader: ByteReader): WireAcl[] {
  const count = reader.u32("ACL count");
  if (count * ACL_WIRE_BYTES_MIN > reader.remaining)
    throw new ProtocolError(`ACL count ${count} cannot fit in the frame`);
  const acls: WireAcl[] = [];
  for (let i = 0; i < count; i++) acls.push(readAcl(reader));
  reader.expectEnd("ACL list response");
  return acls;
}

export function encodeDeleteAclsRequest(
  writer: ByteWriter,
  correlationId: number,
  filters: WireAclFilter[],
): void {
  const start = beginRequest(writer, API.DELETE_ACLS, correlationId);
  writer.u32(filters.length);
  for (const filter of filters) writeAcl(writer, filter);
  endFrame(writer, start);
}

export function decodeDeleteAclsRequest(reader: ByteReader): WireAclFilter[] {
  const count = readCount(reader, "filter");
  const filters: WireAclFilter[] = [];
  for (let i = 0; i < count; i++) filters.push(readFilter(reader));
  reader.expectEnd("DELETE_ACLS request");
  return filters;
}

/** DELETE_ACLS's answer: per filter, in request order, the ACLs it removed. */
export function encodeDeleteAclsResponse(
  writer: ByteWriter,
  correlationId: number,
  removed: readonly (readonly WireAcl[])[],
): void {
  const start = beginResponse(writer, correlationId);
  writer.u32(removed.length);
  for (const acls of removed) {
    writer.u32(acls.length);
    for (const acl of acls) writeAcl(writer, acl);
  }
  endFrame(writer, start);
}

export function decodeDeleteAclsResponse(reader: ByteReader): WireAcl[][] {
  const count = reader.u32("filter count");
  if (count * 4 > reader.remaining) throw new ProtocolError(`filter count ${count} cannot fit in the frame`);
  const removed: WireAcl[][] = [];
  for (let i = 0; i < count; i++) {
    const n = reader.u32("ACL count");
    if (n * ACL_WIRE_BYTES_MIN > reader.remaining)
      throw new ProtocolError(`ACL count ${n} cannot fit in the frame`);
    const acls: WireAcl[] = [];
    for (let j = 0; j < n; j++) acls.push(readAcl(reader));
    removed.push(acls);
  }
  reader.expectEnd("DELETE_ACLS response");
  return removed;
}
