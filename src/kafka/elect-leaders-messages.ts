/**
 * Kafka's ElectLeaders (43), versions 0-2, decoded and encoded for the listener: what
 * `kafka-leader-election.sh` (LeaderElectionCommand) and the AdminClient's `electLeaders` send. On
 * one node every partition already has its preferred leader, so the answer is Kafka's for that
 * case (handler.ts). Sans I/O.
 *
 * Layout (apache/kafka `ElectLeadersRequest.json` / `ElectLeadersResponse.json`; v1 added the
 * election type and the top-level error code; v2 is the first flexible version: COMPACT strings
 * and arrays, a TAG_BUFFER after every struct):
 *   request:  election_type INT8 (v1+; 0 preferred, 1 unclean), topic_partitions NULLABLE
 *             ARRAY[topic STRING, partitions ARRAY[INT32]] (null: every partition), timeout_ms INT32
 *   response: throttle_time_ms INT32, error_code INT16 (v1+), replica_election_results
 *             ARRAY[topic STRING, partition_result ARRAY[partition_id INT32, error_code INT16,
 *             error_message NULLABLE_STRING]]
 *
 * Invariants: a decoder consumes its frame exactly or throws KafkaProtocolError with the byte
 * position; counts are checked against the bytes left before anything is allocated
 * (KafkaReader.arrayCount); an encoder writes one whole response frame.
 */
import { beginResponse, endResponse, isFlexible, KAFKA_API, responseHeaderVersion } from "./apis.ts";
import {
  type KafkaReader,
  type KafkaWriter,
  readNullableTopicPartitions,
  type TopicPartitions,
} from "./codec.ts";

export interface ElectLeadersRequest {
  /** 0: preferred (the only type of v0), 1: unclean. */
  electionType: number;
  /** null: every partition. */
  topics: TopicPartitions[] | null;
  timeoutMs: number;
}

export interface ElectionResult {
  topic: string;
  partitions: { partition: number; errorCode: number; errorMessage: string | null }[];
}

export function decodeElectLeadersRequest(reader: KafkaReader, version: number): ElectLeadersRequest {
  const flexible = isFlexible(KAFKA_API.ELECT_LEADERS, version);
  const electionType = version >= 1 ? reader.int8("election_type") : 0;
  const topics = readNullableTopicPartitions(reader, flexible, "topic_partitions", "ElectLeaders");
  const timeoutMs = reader.int32("timeout_ms");
  if (flexible) reader.skipTaggedFields("ElectLeaders request");
  reader.expectEnd("ElectLeaders request");
  return { electionType, topics, timeoutMs };
}

export function encodeElectLeadersResponse(
  writer: KafkaWriter,
  version: number,
  correlationId: number,
  errorCode: number,
  results: readonly ElectionResult[],
): void {
  const flexible = isFlexible(KAFKA_API.ELECT_LEADERS, version);
  const start = beginResponse(writer, correlationId, responseHeaderVersion(KAFKA_API.ELECT_LEADERS, version));
  const count = (n: number) => (flexible ? writer.compactArrayCount(n) : writer.arrayCount(n));
  writer.int32(0); // throttle_time_ms
  if (version >= 1) writer.errorCode(errorCode);
  count(results.length);
  for (const result of results) {
    if (flexible) writer.compactString(result.topic);
    else writer.string(result.topic);
    count(result.partitions.length);
    for (const partition of result.partitions) {
      writer.int32(partition.partition).errorCode(partition.errorCode);
      if (flexible) writer.compactNullableString(partition.errorMessage).emptyTaggedFields();
      else writer.nullableString(partition.errorMessage);
    }
    if (flexible) writer.emptyTaggedFields();
  }
  if (flexible) writer.emptyTaggedFields();
  endResponse(writer, start);
}
