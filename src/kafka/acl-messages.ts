/**
 * Kafka's DescribeAcls (29), CreateAcls (30) and DeleteAcls (31), versions 0-1 (the non-flexible
 * ones; v2 is the first flexible version of each), decoded and encoded for the listener. Sans I/O;
 * the ACLs themselves are src/broker/acl-store.ts, their meaning src/auth/acl.ts.
 *
 * Layout (apache/kafka `CreateAclsRequest.json` and friends; v1 added the pattern type, which v0
 * requests imply as LITERAL and v0 responses leave out):
 *   CreateAcls request:    creations ARRAY[resource_type INT8, resource_name STRING,
 *                          pattern_type INT8 (v1+), principal STRING, host STRING, operation INT8,
 *                          permission_type INT8]
 *   CreateAcls response:   throttle_time_ms INT32, results ARRAY[error_code INT16,
 *                          error_message NULLABLE_STRING]
 *   DescribeAcls request:  resource_type INT8, resource_name NULLABLE_STRING, pattern_type INT8
 *                          (v1+), principal NULLABLE_STRING, host NULLABLE_STRING, operation INT8,
 *                          permission_type INT8
 *   DescribeAcls response: throttle_time_ms INT32, error_code INT16, error_message NULLABLE_STRING,
 *                          resources ARRAY[resource_type INT8, resource_name STRING, pattern_type
 *                          INT8 (v1+), acls ARRAY[principal STRING, host STRING, operation INT8,
 *                          permission_type INT8]]
 *   DeleteAcls request:    filters ARRAY[the DescribeAcls request's fields]
 *   DeleteAcls response:   throttle_time_ms INT32, filter_results ARRAY[error_code INT16,
 *                          error_message NULLABLE_STRING, matching_acls ARRAY[error_code INT16,
 *                          error_message NULLABLE_STRING, resource_type INT8, resource_name STRING,
 *                          pattern_type INT8 (v1+), principal STRING, host STRING, operation INT8,
 *                          permission_type INT8]]
 *
 * Invariants: a decoder consumes its frame exactly; counts are checked against the bytes left before
 * anything is allocated (KafkaReader.arrayCount); enum values are not judged here (the handler
 * answers a bad one per creation or filter, as Kafka does).
 */
import type { Acl, AclFilter } from "../auth/acl.ts";
import { beginResponse, endResponse, KAFKA_API, responseHeaderVersion } from "./apis.ts";
import type { KafkaReader, KafkaWriter } from "./codec.ts";

/** Kafka's PatternType LITERAL, what a v0 request means and a v0 response cannot say. */
const LITERAL = 3;

/** Smallest ACL or filter: four INT8 and three strings of length 0 (v0). */
const ENTRY_BYTES_MIN = 4 + 3 * 2;

export function decodeCreateAclsRequest(reader: KafkaReader, version: number): Acl[] {
  const count = reader.arrayCount("creations", ENTRY_BYTES_MIN);
  const acls: Acl[] = [];
  for (let i = 0; i < count; i++) {
    const resourceType = reader.int8("resource_type");
    const resourceName = reader.string("resource_name");
    const patternType = version >= 1 ? reader.int8("resource_pattern_type") : LITERAL;
    const principal = reader.string("principal");
    const host = reader.string("host");
    const operation = reader.int8("operation");
    const permission = reader.int8("permission_type");
    acls.push({ resourceType, resourceName, patternType, principal, host, operation, permission });
  }
  reader.expectEnd("CreateAcls request");
  return acls;
}

export interface AclResult {
  errorCode: number;
  errorMessage: string | null;
}

export function encodeCreateAclsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  results: readonly AclResult[],
): void {
  const start = beginResponse(writer, correlationId, responseHeaderVersion(KAFKA_API.CREATE_ACLS, version));
  writer.int32(0).arrayCount(results.length);
  for (const result of results) writer.errorCode(result.errorCode).nullableString(result.errorMessage);
  endResponse(writer, start);
}

function decodeFilter(reader: KafkaReader, version: number): AclFilter {
  const resourceType = reader.int8("resource_type_filter");
  const resourceName = reader.nullableString("resource_name_filter");
  const patternType = version >= 1 ? reader.int8("pattern_type_filter") : LITERAL;
  const principal = reader.nullableString("principal_filter");
  const host = reader.nullableString("host_filter");
  const operation = reader.int8("operation");
  const permission = reader.int8("permission_type");
  return { resourceType, resourceName, patternType, principal, host, operation, permission };
}

export function decodeDescribeAclsRequest(reader: KafkaReader, version: number): AclFilter {
  const filter = decodeFilter(reader, version);
  reader.expectEnd("DescribeAcls request");
  return filter;
}

export function decodeDeleteAclsRequest(reader: KafkaReader, version: number): AclFilter[] {
  const count = reader.arrayCount("filters", ENTRY_BYTES_MIN);
  const filters: AclFilter[] = [];
  for (let i = 0; i < count; i++) filters.push(decodeFilter(reader, version));
  reader.expectEnd("DeleteAcls request");
  return filters;
}

export function encodeDescribeAclsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  result: AclResult,
  acls: readonly Acl[],
): void {
  const start = beginResponse(writer, correlationId, responseHeaderVersion(KAFKA_API.DESCRIBE_ACLS, version));
  writer.int32(0).errorCode(result.errorCode).nullableString(result.errorMessage);
  // Grouped by resource pattern, in the order first seen. A v0 response cannot carry a pattern
  // type: only LITERAL ACLs are answered to it (Kafka does the same for v0).
  const shown = version >= 1 ? acls : acls.filter((acl) => acl.patternType === LITERAL);
  const resources = new Map<string, Acl[]>();
  for (const acl of shown) {
    const key = JSON.stringify([acl.resourceType, acl.resourceName, acl.patternType]);
    const group = resources.get(key);
    if (group === undefined) resources.set(key, [acl]);
    else group.push(acl);
  }
  writer.arrayCount(resources.size);
  for (const group of resources.values()) {
    const first = group[0]!;
    writer.int8(first.resourceType).string(first.resourceName);
    if (version >= 1) writer.int8(first.patternType);
    writer.arrayCount(group.length);
    for (const acl of group)
      writer.string(acl.principal).string(acl.host).int8(acl.operation).int8(acl.permission);
  }
  endResponse(writer, start);
}

export interface DeleteAclsFilterResult extends AclResult {
  matching: readonly Acl[];
}

export function encodeDeleteAclsResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  results: readonly DeleteAclsFilterResult[],
): void {
  const start = beginResponse(writer, correlationId, responseHeaderVersion(KAFKA_API.DELETE_ACLS, version));
  writer.int32(0).arrayCount(results.length);
  for (const result of results) {
    writer.errorCode(result.errorCode).nullableString(result.errorMessage).arrayCount(result.matching.length);
    for (const acl of result.matching) {
      writer.int16(0).nullableString(null).int8(acl.resourceType).string(acl.resourceName);
      if (version >= 1) writer.int8(acl.patternType);
      writer.string(acl.principal).string(acl.host).int8(acl.operation).int8(acl.permission);
    }
  }
  endResponse(writer, start);
}
