/**
 * booblik's errors as Kafka error codes (Errors.java), for the handler and the record paths. The
 * message travels where a response has a field for it (CreateTopics v1+, Produce v8+).
 *
 * Owns: the one mapping from a booblik error code to a Kafka one. Invariants: every error maps to a
 * code a Kafka client knows (an unknown or non-booblik error is UNKNOWN_SERVER_ERROR, never a
 * thrown exception), and the message is passed on unchanged.
 */
import { BooblikError, InternalTopicError, PolicyViolationError } from "../domain/errors.ts";
import { KAFKA_ERROR } from "./apis.ts";

/** A Kafka error code and the message for responses that carry one. */
export interface KafkaError {
  code: number;
  message: string;
}

/** Kafka's code for a booblik error (the message travels where the response has a field for it). */
export function kafkaErrorOf(error: unknown): KafkaError {
  if (!(error instanceof BooblikError)) {
    return {
      code: KAFKA_ERROR.UNKNOWN_SERVER_ERROR,
      message: error instanceof Error ? error.message : String(error),
    };
  }
  const message = error.message;
  // Kafka's answer to a produce to an internal topic (ReplicaManager: "Cannot append to internal topic").
  if (error instanceof InternalTopicError) return { code: KAFKA_ERROR.INVALID_TOPIC_EXCEPTION, message };
  if (error instanceof PolicyViolationError) return { code: KAFKA_ERROR.POLICY_VIOLATION, message };
  switch (error.code) {
    case "UNKNOWN_TOPIC_OR_PARTITION":
      return { code: KAFKA_ERROR.UNKNOWN_TOPIC_OR_PARTITION, message };
    case "OFFSET_OUT_OF_RANGE":
      return { code: KAFKA_ERROR.OFFSET_OUT_OF_RANGE, message };
    case "TOPIC_EXISTS":
      return { code: KAFKA_ERROR.TOPIC_ALREADY_EXISTS, message };
    case "RECORD_TOO_LARGE":
      return { code: KAFKA_ERROR.MESSAGE_TOO_LARGE, message };
    case "CORRUPT_RECORD":
      return { code: KAFKA_ERROR.CORRUPT_MESSAGE, message };
    case "STORAGE_ERROR":
    case "PARTITION_FAILED":
      return { code: KAFKA_ERROR.KAFKA_STORAGE_ERROR, message };
    case "LIMIT_EXCEEDED":
      return { code: KAFKA_ERROR.POLICY_VIOLATION, message };
    case "INVALID_ARGUMENT":
      return { code: KAFKA_ERROR.INVALID_REQUEST, message };
    case "OUT_OF_ORDER_SEQUENCE_NUMBER":
      return { code: KAFKA_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER, message };
    case "INVALID_PRODUCER_EPOCH":
      return { code: KAFKA_ERROR.INVALID_PRODUCER_EPOCH, message };
    case "TOPIC_AUTHORIZATION_FAILED":
      return { code: KAFKA_ERROR.TOPIC_AUTHORIZATION_FAILED, message };
    case "GROUP_AUTHORIZATION_FAILED":
      return { code: KAFKA_ERROR.GROUP_AUTHORIZATION_FAILED, message };
    case "CLUSTER_AUTHORIZATION_FAILED":
      return { code: KAFKA_ERROR.CLUSTER_AUTHORIZATION_FAILED, message };
    case "SECURITY_DISABLED":
      return { code: KAFKA_ERROR.SECURITY_DISABLED, message };
    case "CLOSED":
      // The broker is stopping (or the topic was deleted under the request): clients retry elsewhere
      // after refreshing their metadata, which this code asks for.
      return { code: KAFKA_ERROR.NOT_LEADER_OR_FOLLOWER, message };
    default:
      return { code: KAFKA_ERROR.UNKNOWN_SERVER_ERROR, message };
  }
}
