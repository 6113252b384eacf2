/**
 * SASL on the Kafka listener: SaslHandshake (API 17) and SaslAuthenticate (API 36) with
 * SCRAM-SHA-256, SCRAM-SHA-512 (src/auth/scram.ts, the native AUTHENTICATE's exchange) and PLAIN
 * (RFC 4616), against the users file the native listener uses. Codec and per-connection state.
 *
 * Wire (non-flexible versions only; kafkajs 2.2.4 and librdkafka 2.0.2 use them):
 *   SaslHandshake v1 request   mechanism STRING
 *                    response  error_code INT16, mechanisms ARRAY(STRING)
 *   SaslAuthenticate v0-1 req  auth_bytes BYTES
 *                    response  error_code INT16, error_message NULLABLE_STRING, auth_bytes BYTES,
 *                              v1+: session_lifetime_ms INT64 (0: no re-authentication asked)
 * SaslHandshake v0 (raw SASL tokens after the handshake, without Kafka framing) is not served, though
 * advertised (0-1, as Kafka does: librdkafka 2.0.2 turns SASL off unless v0 lies in the range);
 * every client that knows SaslAuthenticate sends v1 when the broker advertises it (KIP-152).
 *
 * Invariants:
 * - While a connection has not logged in, only ApiVersions, SaslHandshake and SaslAuthenticate are
 *   served; anything else closes it (Kafka does the same: SaslServerAuthenticator answers
 *   ILLEGAL_SASL_STATE only to a second handshake, and drops other requests).
 * - A failed login is answered SASL_AUTHENTICATION_FAILED (58) with the reason, after the delay of
 *   the client's address (login-delays.ts, shared with the native listener), and the connection is
 *   closed after that answer; a wrong password and an unknown user get the same message.
 * - PLAIN carries the password itself: it is offered only over TLS unless the broker was started
 *   with --sasl-plain-without-tls yes.
 */
import type { LoginDelays } from "../auth/login-delays.ts";
import { passwordChecks } from "../auth/password-checks.ts";
import { AuthenticationError, SCRAM_MECHANISMS, type ScramMechanism, ScramServer } from "../auth/scram.ts";
import type { Users } from "../broker/users-file.ts";
import {
  PASSWORD_CHECKS_WAITING_MAX,
  SASL_PLAIN_MESSAGE_BYTES_MAX,
  SCRAM_MESSAGE_BYTES_MAX,
} from "../domain/limits.ts";
import {
  beginResponse,
  CODEC_VERSIONS,
  endResponse,
  KAFKA_API,
  KAFKA_ERROR,
  peekRequestHeader,
  readRequestHeader,
} from "./apis.ts";
import { KafkaProtocolError, KafkaReader, KafkaWriter } from "./codec.ts";
import type { KafkaOutcome } from "./handler.ts";

const SASL_HANDSHAKE = KAFKA_API.SASL_HANDSHAKE;
const SASL_AUTHENTICATE = KAFKA_API.SASL_AUTHENTICATE;
const API_VERSIONS = KAFKA_API.API_VERSIONS;
const SASL_HANDSHAKE_VERSIONS = CODEC_VERSIONS[SASL_HANDSHAKE];
const SASL_AUTHENTICATE_VERSIONS = CODEC_VERSIONS[SASL_AUTHENTICATE];
const SASL_ERROR = KAFKA_ERROR;

export interface SaslOptions {
  /** The users now (SIGHUP may replace them). */
  users: () => Users;
  /**
   * PLAIN is offered on connections without TLS too (--sasl-plain-without-tls yes); on TLS
   * connections it always is.
   */
  plain: boolean;
  loginDelays: LoginDelays;
  /** Salts the fake SCRAM answers to unknown users. */
  decoySecret: Uint8Array;
  /** Logins and failed logins, one line each. */
  audit: (line: string) => void;
  counters: { authenticationFailures: number };
}

/** One connection's progress through the login. */
export class SaslSession {
  /**
   * The SASL user, or (on an SSL listener with client certificates, without users) the
   * certificate's subject (auth/tls.ts clientPrincipal); undefined: not logged in.
   */
  principal: string | undefined = undefined;
  /** The connection speaks TLS: PLAIN may be offered (KafkaSasl.mechanismsFor). */
  overTls = false;
  mechanism: string | undefined = undefined;
  scram: ScramServer | undefined = undefined;
}

/** The outcome of a request while not logged in; "fail" answers then closes. */
export type SaslOutcome =
  | KafkaOutcome
  | { kind: "pass" }
  | { kind: "fail"; bytes: Uint8Array; reason: string; delayMs: number };
/** An outcome that answers the request itself (a PLAIN check's, which arrives later). */
export type SaslAnswer = Exclude<SaslOutcome, { kind: "pass" }>;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const utf8Encoder = new TextEncoder();

export class KafkaSasl {
  constructor(readonly options: SaslOptions) {}

  /** The mechanisms offered on plain connections. */
  get mechanisms(): string[] {
    return this.options.plain ? [...SCRAM_MECHANISMS, "PLAIN"] : [...SCRAM_MECHANISMS];
  }

  /** The mechanisms offered to this connection: PLAIN only inside TLS unless allowed without. */
  mechanismsFor(session: SaslSession): string[] {
    return this.options.plain || session.overTls ? [...SCRAM_MECHANISMS, "PLAIN"] : [...SCRAM_MECHANISMS];
  }

  /** How long a SaslAuthenticate from `clientAddress` must wait before it is taken (0: at once). */
  holdMs(frame: Uint8Array, clientAddress: string): number {
    // A frame too short for a header is closed by handle(); the API key is its first two bytes.
    if (frame.length < 2 || ((frame[0]! << 8) | frame[1]!) !== SASL_AUTHENTICATE) return 0;
    return this.options.loginDelays.holdMs(clientAddress);
  }

  /**
   * Decides a request of a connection that has not logged in: "pass" (ApiVersions, to the handler),
   * an answer, or a close. A PLAIN SaslAuthenticate is answered later (a promise): its password
   * check runs off the event loop.
   */
  handle(frame: Uint8Array, session: SaslSession, clientAddress: string): SaslOutcome | Promise<SaslAnswer> {
    let apiKey: number;
    let apiVersion: number;
    try {
      ({ apiKey, apiVersion } = peekRequestHeader(frame));
    } catch (error) {
      return { kind: "close", reason: (error as Error).message };
    }
    if (apiKey === API_VERSIONS) return { kind: "pass" };
    if (apiKey !== SASL_HANDSHAKE && apiKey !== SASL_AUTHENTICATE) {
      this.options.counters.authenticationFailures++;
      this.audit(clientAddress, undefined, `request (API key ${apiKey}) before SASL authentication refused`);
      return {
        kind: "close",
        reason: `API key ${apiKey} before SASL authentication: this listener requires a SASL login (${this.mechanismsFor(session).join(", ")}) first`,
      };
    }
    if (apiKey === SASL_HANDSHAKE && apiVersion === 0) {
      return {
        kind: "close",
        reason:
          "SaslHandshake v0 (raw SASL tokens after the handshake) is not served: booblik needs SaslHandshake v1 and SaslAuthenticate",
      };
    }
    const versions = apiKey === SASL_HANDSHAKE ? SASL_HANDSHAKE_VERSIONS : SASL_AUTHENTICATE_VERSIONS;
    if (apiVersion < versions.min || apiVersion > versions.max) {
      return {
        kind: "close",
        reason: `${apiKey === SASL_HANDSHAKE ? "SaslHandshake" : "SaslAuthenticate"} version ${apiVersion} is not supported: served in versions ${versions.min}-${versions.max}`,
      };
    }
    const reader = new KafkaReader(frame);
    try {
      const header = readRequestHeader(reader, 1);
      if (apiKey === SASL_HANDSHAKE) {
        const { mechanism } = decodeSaslHandshakeRequest(reader, apiVersion);
        return this.handshake(session, header.correlationId, mechanism);
      }
      const { authBytes } = decodeSaslAuthenticateRequest(reader, apiVersion);
      return this.authenticate(session, header.correlationId, apiVersion, authBytes, clientAddress);
    } catch (error) {
      if (error instanceof KafkaProtocolError) {
        return { kind: "close", reason: `malformed SASL request: ${error.message}` };
      }
      throw error;
    }
  }

  private handshake(session: SaslSession, correlationId: number, mechanism: string): SaslOutcome {
    const writer = new KafkaWriter(128);
    const start = beginResponse(writer, correlationId, 0);
    const known = this.mechanismsFor(session).includes(mechanism);
    const errorCode =
      session.mechanism !== undefined
        ? SASL_ERROR.ILLEGAL_SASL_STATE
        : known
          ? KAFKA_ERROR.NONE
          : SASL_ERROR.UNSUPPORTED_SASL_MECHANISM;
    writer.int16(errorCode).arrayCount(this.mechanismsFor(session).length);
    for (const name of this.mechanismsFor(session)) writer.string(name);
    endResponse(writer, start);
    if (errorCode !== KAFKA_ERROR.NONE) {
      // Kafka closes after an unsupported mechanism too; the answer lists the ones it has.
      return {
        kind: "fail",
        bytes: writer.written().slice(),
        reason:
          errorCode === SASL_ERROR.ILLEGAL_SASL_STATE
            ? "a second SaslHandshake"
            : `SASL mechanism ${JSON.stringify(mechanism)} is not offered (${this.mechanismsFor(session).join(", ")})`,
        delayMs: 0,
      };
    }
    session.mechanism = mechanism;
    return { kind: "respond", bytes: writer.written().slice() };
  }

  private authenticate(
    session: SaslSession,
    correlationId: number,
    version: number,
    authBytes: Uint8Array,
    clientAddress: string,
  ): SaslAnswer | Promise<SaslAnswer> {
    let reply: Uint8Array;
    try {
      const mechanism = session.mechanism;
      if (mechanism === undefined) throw new AuthenticationError("SaslAuthenticate before SaslHandshake");
      if (mechanism === "PLAIN") return this.plain(session, correlationId, version, authBytes, clientAddress);
      if (authBytes.length > SCRAM_MESSAGE_BYTES_MAX) {
        throw new AuthenticationError(`a SCRAM message of ${authBytes.length} bytes is too long`);
      }
      const message = decodeUtf8(authBytes, "a SCRAM message");
      const scramMechanism = mechanism as ScramMechanism;
      if (session.scram === undefined) {
        const users = this.options.users();
        session.scram = new ScramServer(
          scramMechanism,
          (user) => users.get(user)?.get(scramMechanism),
          this.options.decoySecret,
          undefined,
          "endsWith",
        );
        reply = utf8Encoder.encode(session.scram.first(message));
      } else {
        const { serverFinal, user } = session.scram.final(message);
        session.scram = undefined;
        session.principal = user;
        reply = utf8Encoder.encode(serverFinal);
      }
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      return this.failed(session, correlationId, version, clientAddress, error);
    }
    return this.answered(session, correlationId, version, clientAddress, reply);
  }

  /**
   * RFC 4616: [authzid] NUL authcid NUL passwd; checked against the stored SCRAM credential. The
   * check derives the password's keys (PBKDF2, the credential's iterations, once per stored
   * mechanism: milliseconds of CPU) on the thread pool, not on the event loop, where a flood of
   * PLAIN logins would have stalled every connection. The address counts as checking meanwhile
   * (LoginDelays.beginCheck), so its other logins wait: one check per address at a time, as before.
   */
  private plain(
    session: SaslSession,
    correlationId: number,
    version: number,
    authBytes: Uint8Array,
    clientAddress: string,
  ): SaslAnswer | Promise<SaslAnswer> {
    let user: string;
    let password: string;
    try {
      if (authBytes.length > SASL_PLAIN_MESSAGE_BYTES_MAX) {
        throw new AuthenticationError(`a PLAIN message of ${authBytes.length} bytes is too long`);
      }
      const parts = decodeUtf8(authBytes, "a PLAIN message").split("\u0000");
      if (parts.length !== 3)
        throw new AuthenticationError("malformed PLAIN message: authzid NUL user NUL password");
      let authzid: string;
      [authzid, user, password] = parts as [string, string, string];
      if (authzid !== "" && authzid !== user) {
        throw new AuthenticationError("PLAIN authorization id must be empty or the user itself");
      }
    } catch (error) {
      if (!(error instanceof AuthenticationError)) throw error;
      return this.failed(session, correlationId, version, clientAddress, error);
    }
    // Constant-time, and as slow for an unknown user as for a known one (scram.ts); one check at a
    // time in the process (password-checks.ts).
    const checked = passwordChecks.check(this.options.users().get(user), password);
    if (checked === undefined) {
      return {
        kind: "close",
        reason: `too many password checks are waiting (${PASSWORD_CHECKS_WAITING_MAX}): the login of ${clientAddress} was not checked; try again`,
      };
    }
    const delays = this.options.loginDelays;
    delays.beginCheck(clientAddress);
    return checked
      .then((right): SaslAnswer => {
        if (!right) {
          const wrong = new AuthenticationError("authentication failed: unknown user or wrong password");
          return this.failed(session, correlationId, version, clientAddress, wrong);
        }
        session.principal = user;
        return this.answered(session, correlationId, version, clientAddress, new Uint8Array(0));
      })
      .finally(() => delays.endCheck(clientAddress));
  }

  /** A failed login: audited, counted, answered after the address's delay (which it extends). */
  private failed(
    session: SaslSession,
    correlationId: number,
    version: number,
    clientAddress: string,
    error: AuthenticationError,
  ): SaslAnswer {
    session.scram = undefined;
    this.options.counters.authenticationFailures++;
    this.audit(clientAddress, undefined, `SASL authentication failed: ${error.message}`);
    return {
      kind: "fail",
      bytes: authenticateResponse(
        correlationId,
        version,
        SASL_ERROR.SASL_AUTHENTICATION_FAILED,
        `Authentication failed: ${error.message}`,
        new Uint8Array(0),
      ),
      reason: `SASL authentication failed: ${error.message}`,
      delayMs: this.options.loginDelays.failed(clientAddress),
    };
  }

  /** A step that succeeded: the login's audit line once it completes, and the reply. */
  private answered(
    session: SaslSession,
    correlationId: number,
    version: number,
    clientAddress: string,
    reply: Uint8Array,
  ): SaslAnswer {
    if (session.principal !== undefined) {
      this.audit(clientAddress, session.principal, `logged in (SASL ${session.mechanism})`);
    }
    return {
      kind: "respond",
      bytes: authenticateResponse(correlationId, version, KAFKA_ERROR.NONE, null, reply),
    };
  }

  private audit(clientAddress: string, user: string | undefined, what: string): void {
    const who = user === undefined ? "anonymous" : `user ${JSON.stringify(user)}`;
    this.options.audit(`booblik: audit: ${who} from ${clientAddress} (kafka): ${what}`);
  }
}

/** SaslHandshake v1 request body (after the header). */
export function decodeSaslHandshakeRequest(reader: KafkaReader, _version: number): { mechanism: string } {
  const mechanism = reader.string("mechanism");
  reader.expectEnd("SaslHandshake request");
  return { mechanism };
}

/** SaslAuthenticate v0-1 request body (after the header); null auth bytes read as empty. */
export function decodeSaslAuthenticateRequest(
  reader: KafkaReader,
  _version: number,
): { authBytes: Uint8Array } {
  const authBytes = reader.nullableBytes("auth_bytes") ?? new Uint8Array(0);
  reader.expectEnd("SaslAuthenticate request");
  return { authBytes };
}

function decodeUtf8(bytes: Uint8Array, what: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new AuthenticationError(`${what} must be UTF-8`);
  }
}

function authenticateResponse(
  correlationId: number,
  version: number,
  errorCode: number,
  errorMessage: string | null,
  authBytes: Uint8Array,
): Uint8Array {
  const writer = new KafkaWriter(128 + authBytes.length);
  const start = beginResponse(writer, correlationId, 0);
  writer.int16(errorCode).nullableString(errorMessage).nullableBytes(authBytes);
  if (version >= 1) writer.int64(0);
  endResponse(writer, start);
  return writer.written().slice();
}
