/**
 * SCRAM (RFC 5802) with SHA-256 and SHA-512 (RFC 7677), without channel binding: the credential
 * math and both sides' message exchange, sans I/O. Shared by the broker (which verifies) and the
 * client (which proves); the transport is the AUTHENTICATE request (docs/protocol.md).
 *
 * Exchange (each line one AUTHENTICATE round trip's payload):
 *   client-first  n,,n=<user>,r=<client nonce>
 *   server-first  r=<client nonce><server nonce>,s=<salt, base64>,i=<iterations>
 *   client-final  c=biws,r=<nonce>,p=<ClientKey XOR HMAC(StoredKey, AuthMessage), base64>
 *   server-final  v=<HMAC(ServerKey, AuthMessage), base64>
 *
 * Invariants:
 * - The broker stores only salt, iterations, StoredKey = H(ClientKey) and ServerKey: a stolen
 *   credential file does not reveal the password or let anyone log in without cracking it.
 * - Every exchange gets a fresh server nonce, so a recorded client-final never verifies again.
 * - An unknown user gets a server-first of the same shape (a salt derived from the name and a
 *   server secret) and fails at the final step, with the same message as a wrong password: the
 *   answers do not tell which users exist.
 * - Comparisons of keys take the same time whatever their content (timingSafeEqual).
 */
import { createHash, createHmac, pbkdf2, pbkdf2Sync, randomBytes, timingSafeEqual } from "node:crypto";
import { BooblikError } from "../domain/errors.ts";
import { SCRAM_ITERATIONS_DEFAULT, SCRAM_ITERATIONS_MIN, SCRAM_SALT_BYTES } from "../domain/limits.ts";

export const SCRAM_MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const;
export type ScramMechanism = (typeof SCRAM_MECHANISMS)[number];

/** The hash behind a mechanism; "sha1" only for RFC 5802's own test vector. */
type Hash = "sha1" | "sha256" | "sha512";

function hashOf(mechanism: ScramMechanism | "SCRAM-SHA-1"): Hash {
  return mechanism === "SCRAM-SHA-512" ? "sha512" : mechanism === "SCRAM-SHA-256" ? "sha256" : "sha1";
}

export interface ScramCredential {
  salt: Uint8Array;
  iterations: number;
  storedKey: Uint8Array;
  serverKey: Uint8Array;
}

/** A failed exchange: wrong password, unknown user, a malformed or replayed message. */
export class AuthenticationError extends BooblikError {
  constructor(message: string) {
    super("AUTHENTICATION_FAILED", message);
  }
}

function hmac(hash: Hash, key: Uint8Array, text: string | Uint8Array): Uint8Array {
  return createHmac(hash, key).update(text).digest();
}

function digest(hash: Hash, bytes: Uint8Array): Uint8Array {
  return createHash(hash).update(bytes).digest();
}

function xor(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const fromBase64 = (text: string) => new Uint8Array(Buffer.from(text, "base64"));

function saltedPassword(hash: Hash, password: string, salt: Uint8Array, iterations: number): Uint8Array {
  return pbkdf2Sync(password.normalize("NFKC"), salt, iterations, hashLength(hash), hash);
}

/** The stored form of a password (what the users file keeps). */
export function deriveCredential(
  mechanism: ScramMechanism,
  password: string,
  salt: Uint8Array = randomBytes(SCRAM_SALT_BYTES),
  iterations = SCRAM_ITERATIONS_DEFAULT,
): ScramCredential {
  if (!Number.isInteger(iterations) || iterations < SCRAM_ITERATIONS_MIN) {
    throw new BooblikError("INVALID_ARGUMENT", `SCRAM iterations must be at least ${SCRAM_ITERATIONS_MIN}`);
  }
  const hash = hashOf(mechanism);
  const salted = saltedPassword(hash, password, salt, iterations);
  const clientKey = hmac(hash, salted, "Client Key");
  return {
    salt,
    iterations,
    storedKey: digest(hash, clientKey),
    serverKey: hmac(hash, salted, "Server Key"),
  };
}

/**
 * Checks a password sent in full (SASL PLAIN, the console's login) against a user's stored SCRAM
 * credentials: derives StoredKey from the password with each credential's salt and iterations and
 * compares in constant time; every stored mechanism must agree (`users add` makes them from one
 * password). An unknown user costs one derivation per mechanism against decoy credentials, like a
 * user made by `users add` (both mechanisms), so the time taken does not tell which users exist. The derivation (PBKDF2, the credential's iterations) runs on
 * the runtime's thread pool, so a login never stalls the event loop (measured on Bun 1.4.4: a 1 ms
 * interval kept firing through eight concurrent derivations of 200,000 rounds).
 */
export async function verifyPassword(
  credentials: ReadonlyMap<ScramMechanism, ScramCredential> | undefined,
  password: string,
): Promise<boolean> {
  // Every candidate is derived and compared, the decoys of an unknown user too, whatever an
  // earlier comparison found: the time taken does not tell which users exist or which mechanism
  // failed.
  let matched = credentials !== undefined && credentials.size > 0;
  for (const [mechanism, credential] of candidatesOf(credentials)) {
    const hash = hashOf(mechanism);
    const salted = await new Promise<Uint8Array>((resolve, reject) =>
      pbkdf2(
        password.normalize("NFKC"),
        credential.salt,
        credential.iterations,
        hashLength(hash),
        hash,
        (error, key) => (error === null ? resolve(key) : reject(error)),
      ),
    );
    if (!sameStoredKey(hash, salted, credential)) matched = false;
  }
  return matched;
}

function candidatesOf(
  credentials: ReadonlyMap<ScramMechanism, ScramCredential> | undefined,
): [ScramMechanism, ScramCredential][] {
  return credentials === undefined || credentials.size === 0 ? DECOY_CANDIDATES : [...credentials];
}

function hashLength(hash: Hash): number {
  return hash === "sha512" ? 64 : hash === "sha256" ? 32 : 20;
}

function sameStoredKey(hash: Hash, salted: Uint8Array, credential: ScramCredential): boolean {
  const storedKey = digest(hash, hmac(hash, salted, "Client Key"));
  return storedKey.length === credential.storedKey.length && timingSafeEqual(storedKey, credential.storedKey);
}

/** What an unknown user's password is derived against (never matches: its key is random). */
const DECOY_CREDENTIAL: ScramCredential = {
  salt: randomBytes(SCRAM_SALT_BYTES),
  iterations: SCRAM_ITERATIONS_DEFAULT,
  storedKey: randomBytes(32),
  serverKey: randomBytes(32),
};
/**
 * What an unknown user's password is checked against: a decoy of each mechanism, as `users add`
 * stores one of each for a real user. With one decoy (SHA-256 only) an unknown user cost one
 * PBKDF2 run against a default user's two (SHA-256 and SHA-512), which told by the time taken
 * which users exist (found in review, 2026-12-01).
 */
const DECOY_CANDIDATES: [ScramMechanism, ScramCredential][] = [
  ["SCRAM-SHA-256", DECOY_CREDENTIAL],
  ["SCRAM-SHA-512", { ...DECOY_CREDENTIAL, storedKey: randomBytes(64), serverKey: randomBytes(64) }],
];

/** Splits `a=1,b=2` into its attributes; refuses duplicates and malformed parts. */
function attributes(message: string, what: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of message.split(",")) {
    if (part.length < 2 || part[1] !== "=") throw new AuthenticationError(`malformed SCRAM ${what}`);
    const key = part[0]!;
    if (out.has(key)) throw new AuthenticationError(`malformed SCRAM ${what}: ${key}= twice`);
    out.set(key, part.slice(2));
  }
  return out;
}

/** RFC 5802 saslname: `=2C` for ',' and `=3D` for '='; nothing else may follow '='. */
function decodeSaslName(name: string): string {
  if (/=(?!2C|3D)/.test(name)) throw new AuthenticationError("malformed SCRAM user name");
  return name.replace(/=2C/g, ",").replace(/=3D/g, "=");
}

function encodeSaslName(name: string): string {
  return name.replace(/=/g, "=3D").replace(/,/g, "=2C");
}

const PRINTABLE_NONCE = /^[\x21-\x2b\x2d-\x7e]+$/;

function nonce(): string {
  // base64 of random bytes is printable and has no ','.
  return base64(randomBytes(18));
}

/** The broker's side of one exchange. */
export class ScramServer {
  readonly mechanism: ScramMechanism;
  private readonly hash: Hash;
  private user: string | undefined;
  private credential: ScramCredential | undefined;
  private clientFirstBare = "";
  private serverFirst = "";
  private combinedNonce = "";
  private state: "first" | "final" | "done" = "first";

  /**
   * `lookup` finds a user's credential for this mechanism; `decoySecret` salts the fake answer for
   * unknown users (so that it is stable per name, as a real one would be).
   */
  constructor(
    mechanism: ScramMechanism,
    private readonly lookup: (user: string) => ScramCredential | undefined,
    private readonly decoySecret: Uint8Array,
    private readonly serverNonce: () => string = nonce,
    /**
     * "endsWith": accept a client-final nonce that only ends with the combined nonce, as Kafka's
     * ScramSaslServer does: librdkafka (2.0.2, and still in 2.3) sends client nonce + the whole
     * combined nonce. It still carries this exchange's fresh server nonce, so replay stays refused.
     */
    private readonly nonceRule: "exact" | "endsWith" = "exact",
  ) {
    this.mechanism = mechanism;
    this.hash = hashOf(mechanism);
  }

  /** client-first → server-first. */
  first(clientFirst: string): string {
    if (this.state !== "first") throw new AuthenticationError("SCRAM exchange out of order");
    this.state = "final";
    // gs2 header: no channel binding ("n"), no authzid.
    if (!clientFirst.startsWith("n,,")) {
      throw new AuthenticationError(
        "SCRAM client-first must start with 'n,,' (no channel binding, no authorization id)",
      );
    }
    this.clientFirstBare = clientFirst.slice(3);
    const parts = attributes(this.clientFirstBare, "client-first");
    const user = parts.get("n");
    const clientNonce = parts.get("r");
    if (
      user === undefined ||
      user === "" ||
      clientNonce === undefined ||
      !PRINTABLE_NONCE.test(clientNonce)
    ) {
      throw new AuthenticationError("malformed SCRAM client-first: n= and r= are required");
    }
    if (parts.has("m")) throw new AuthenticationError("SCRAM extensions (m=) are not supported");
    this.user = decodeSaslName(user);
    this.credential = this.lookup(this.user);
    const salt =
      this.credential?.salt ??
      hmac(this.hash, this.decoySecret, `decoy salt for ${this.user}`).subarray(0, 16);
    const iterations = this.credential?.iterations ?? SCRAM_ITERATIONS_DEFAULT;
    this.combinedNonce = clientNonce + this.serverNonce();
    this.serverFirst = `r=${this.combinedNonce},s=${base64(salt)},i=${iterations}`;
    return this.serverFirst;
  }

  /** client-final → server-final and the authenticated user; throws on any failure. */
  final(clientFinal: string): { serverFinal: string; user: string } {
    if (this.state !== "final") throw new AuthenticationError("SCRAM exchange out of order");
    this.state = "done";
    const proofAt = clientFinal.lastIndexOf(",p=");
    if (proofAt < 0) throw new AuthenticationError("malformed SCRAM client-final: p= is required");
    const withoutProof = clientFinal.slice(0, proofAt);
    const parts = attributes(withoutProof, "client-final");
    if (parts.get("c") !== "biws")
      throw new AuthenticationError("SCRAM channel binding must be c=biws (none)");
    const finalNonce = parts.get("r") ?? "";
    const nonceMatches =
      this.nonceRule === "exact"
        ? finalNonce === this.combinedNonce
        : finalNonce.endsWith(this.combinedNonce);
    if (!nonceMatches) throw new AuthenticationError("SCRAM nonce does not match");
    const proof = fromBase64(clientFinal.slice(proofAt + 3));
    const credential = this.credential;
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    if (credential !== undefined && proof.length === credential.storedKey.length) {
      const clientSignature = hmac(this.hash, credential.storedKey, authMessage);
      const clientKey = xor(proof, clientSignature);
      if (timingSafeEqual(digest(this.hash, clientKey), credential.storedKey)) {
        const serverSignature = hmac(this.hash, credential.serverKey, authMessage);
        return { serverFinal: `v=${base64(serverSignature)}`, user: this.user! };
      }
    }
    throw new AuthenticationError("authentication failed: unknown user or wrong password");
  }
}

/** The client's side of one exchange. */
export class ScramClient {
  private readonly hash: Hash;
  private readonly clientNonce: string;
  private clientFirstBare = "";
  private authMessage = "";
  private serverKey: Uint8Array | undefined;

  constructor(
    readonly mechanism: ScramMechanism | "SCRAM-SHA-1",
    private readonly user: string,
    private readonly password: string,
    clientNonce: string = nonce(),
  ) {
    this.hash = hashOf(mechanism);
    this.clientNonce = clientNonce;
  }

  first(): string {
    this.clientFirstBare = `n=${encodeSaslName(this.user)},r=${this.clientNonce}`;
    return `n,,${this.clientFirstBare}`;
  }

  final(serverFirst: string): string {
    const parts = attributes(serverFirst, "server-first");
    const combined = parts.get("r");
    const salt = parts.get("s");
    const iterations = Number(parts.get("i"));
    if (combined === undefined || !combined.startsWith(this.clientNonce) || combined === this.clientNonce) {
      throw new AuthenticationError("the broker's SCRAM nonce does not extend ours");
    }
    if (salt === undefined || !Number.isInteger(iterations) || iterations < 1) {
      throw new AuthenticationError("malformed SCRAM server-first");
    }
    const salted = saltedPassword(this.hash, this.password, fromBase64(salt), iterations);
    const clientKey = hmac(this.hash, salted, "Client Key");
    const storedKey = digest(this.hash, clientKey);
    this.serverKey = hmac(this.hash, salted, "Server Key");
    const withoutProof = `c=biws,r=${combined}`;
    this.authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`;
    const proof = xor(clientKey, hmac(this.hash, storedKey, this.authMessage));
    return `${withoutProof},p=${base64(proof)}`;
  }

  /** Checks the broker's proof: it knew the credential too (not an impostor). */
  verify(serverFinal: string): void {
    const expected = `v=${base64(hmac(this.hash, this.serverKey ?? new Uint8Array(0), this.authMessage))}`;
    const a = Buffer.from(serverFinal);
    const b = Buffer.from(expected);
    if (a.length !== b.length || !timingSafeEqual(a, b)) {
      throw new AuthenticationError(
        "the broker's SCRAM signature is wrong: it does not know this user's credential",
      );
    }
  }
}
