/**
 * TLS for the broker's listeners (`--tls-cert`, `--tls-key`, `--tls-ca`): reading and checking the
 * PEM files once at start, and the options handed to Bun.listen and Bun.serve (Bun's TLS, BoringSSL).
 *
 * Owns: the broker's certificate, key and optional client CA, as PEM text.
 *
 * Invariants:
 * - A certificate or key that does not parse, a key that does not belong to the certificate, or a
 *   certificate outside its validity period stops the start with a message naming the file: a broker
 *   must not come up serving a certificate every client refuses.
 * - With a CA (`--tls-ca`) every client must present a certificate signed by it (mutual TLS):
 *   `requestCert` and `rejectUnauthorized` are both on, so a client without one gets the TLS alert
 *   CERTIFICATE_REQUIRED and no request of it is read (test/server/tls.test.ts).
 * - Under TLS no response bytes bypass the TLS stream: FETCH uses the copying path (server.ts), and
 *   Connection refuses a sendfile range on a TLS socket (sendfile would write clear text into the
 *   encrypted stream; kTLS, which would allow it, is not reachable through Bun).
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";

export interface TlsFiles {
  /** PEM: the broker's certificate (chain). */
  cert: string;
  /** PEM: its private key. */
  key: string;
  /** PEM: the CA client certificates must be signed by (mutual TLS); undefined: none asked for. */
  ca?: string;
}

/** The `tls` option of Bun.listen and Bun.serve for these files. */
export function bunTlsOptions(files: TlsFiles): {
  cert: string;
  key: string;
  ca?: string;
  requestCert?: boolean;
  rejectUnauthorized?: boolean;
} {
  return files.ca === undefined
    ? { cert: files.cert, key: files.key }
    : { cert: files.cert, key: files.key, ca: files.ca, requestCert: true, rejectUnauthorized: true };
}

function readPem(what: string, file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new Error(`cannot read the ${what} ${file}: ${(error as Error).message}`);
  }
  if (!text.includes("-----BEGIN ")) throw new Error(`the ${what} ${file} is not PEM (no -----BEGIN line)`);
  return text;
}

/** Reads and checks the files; throws an Error naming the file and the reason. */
export function readTlsFiles(
  certFile: string,
  keyFile: string,
  caFile: string | undefined,
  nowMs = Date.now(),
): TlsFiles {
  const cert = readPem("certificate (--tls-cert)", certFile);
  const key = readPem("private key (--tls-key)", keyFile);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch (error) {
    throw new Error(`the certificate (--tls-cert) ${certFile} does not parse: ${(error as Error).message}`);
  }
  const validFromMs = Date.parse(certificate.validFrom);
  const validToMs = Date.parse(certificate.validTo);
  if (nowMs < validFromMs || nowMs > validToMs) {
    throw new Error(
      `the certificate (--tls-cert) ${certFile} is not valid now: valid from ${certificate.validFrom} to ${certificate.validTo}; clients would refuse it`,
    );
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    throw new Error(`the private key (--tls-key) ${keyFile} does not parse: ${(error as Error).message}`);
  }
  if (!certificate.checkPrivateKey(privateKey)) {
    throw new Error(`the private key (--tls-key) ${keyFile} does not belong to the certificate ${certFile}`);
  }
  if (caFile === undefined) return { cert, key };
  const ca = readPem("CA certificate (--tls-ca)", caFile);
  try {
    new X509Certificate(ca);
  } catch (error) {
    throw new Error(`the CA certificate (--tls-ca) ${caFile} does not parse: ${(error as Error).message}`);
  }
  return { cert, key, ca };
}

/**
 * How a client certificate becomes a principal (`--tls-client-principal`): `dn`, the whole subject
 * as an RFC 2253 string (Kafka's default, `X500Principal.getName()`: `CN=alice,OU=eng,O=Example`),
 * or `cn`, its common name alone (`alice`; a subject without a CN falls back to the DN, as Kafka's
 * `ssl.principal.mapping.rules` fall back to DEFAULT).
 */
export type ClientPrincipalRule = "dn" | "cn";

export const CLIENT_PRINCIPAL_RULES: readonly ClientPrincipalRule[] = ["dn", "cn"];

/** RFC 2253 §2.3 keywords; every other attribute type is written as its dotted OID. */
const ATTRIBUTE_KEYWORDS: Record<string, string> = {
  "2.5.4.3": "CN",
  "2.5.4.7": "L",
  "2.5.4.8": "ST",
  "2.5.4.10": "O",
  "2.5.4.11": "OU",
  "2.5.4.6": "C",
  "2.5.4.9": "STREET",
  "0.9.2342.19200300.100.1.25": "DC",
  "0.9.2342.19200300.100.1.1": "UID",
};

interface Der {
  tag: number;
  /** First byte of the contents. */
  start: number;
  /** One past the last byte of the contents. */
  end: number;
  /** First byte of the whole TLV (tag). */
  head: number;
}

/** One DER TLV at `at`, bounded by `limit`; throws on anything malformed. */
function readDer(bytes: Uint8Array, at: number, limit: number): Der {
  if (at + 2 > limit) throw new Error("truncated DER");
  const tag = bytes[at]!;
  let length = bytes[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || start + count > limit) throw new Error("bad DER length");
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + bytes[start + i]!;
    start += count;
  }
  if (start + length > limit) throw new Error("DER value runs past its container");
  return { tag, start, end: start + length, head: at };
}

function oidText(bytes: Uint8Array, start: number, end: number): string {
  const parts: number[] = [];
  let value = 0;
  for (let i = start; i < end; i++) {
    value = value * 128 + (bytes[i]! & 0x7f);
    if ((bytes[i]! & 0x80) === 0) {
      if (parts.length === 0)
        parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80);
      else parts.push(value);
      value = 0;
    }
  }
  return parts.join(".");
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

/** A string attribute value as text; undefined for a type that is not a string. */
function attributeText(bytes: Uint8Array, value: Der): string | undefined {
  const contents = bytes.subarray(value.start, value.end);
  switch (value.tag) {
    case 0x0c: // UTF8String
      return new TextDecoder("utf-8", { fatal: true }).decode(contents);
    case 0x13: // PrintableString
    case 0x16: // IA5String
    case 0x14: // TeletexString (read as Latin-1, as OpenSSL does)
      return Buffer.from(contents).toString("latin1");
    case 0x1e: // BMPString: UCS-2, big-endian
      return Buffer.from(contents).swap16().toString("utf16le");
    default:
      return undefined;
  }
}

/** An attribute value as RFC 2253 writes it: an escaped string, or `#` and the DER in hex. */
function attributeValue(bytes: Uint8Array, value: Der, text: string | undefined): string {
  if (text === undefined) return `#${hex(bytes.subarray(value.head, value.end))}`;
  // RFC 2253 §2.4: these characters are escaped anywhere; a leading space or '#' and a trailing
  // space too.
  let escaped = text.replace(/[,+"\\<>;]/g, (c) => `\\${c}`);
  if (escaped.startsWith(" ") || escaped.startsWith("#")) escaped = `\\${escaped}`;
  if (escaped.endsWith(" ") && escaped.length > 1) escaped = `${escaped.slice(0, -1)}\\ `;
  return escaped;
}

/**
 * The subject of a DER certificate as RFC 2253 writes it (most specific RDN first, `+` within a
 * multi-valued RDN) and its first CN. Reads Certificate → TBSCertificate → subject Name (RFC 5280
 * §4.1): version [0] (optional), serial, signature, issuer, validity, subject.
 */
export function certificateSubject(der: Uint8Array): { dn: string; cn: string | undefined } {
  const certificate = readDer(der, 0, der.length);
  const tbs = readDer(der, certificate.start, certificate.end);
  let at = tbs.start;
  let field = readDer(der, at, tbs.end);
  if (field.tag === 0xa0) {
    at = field.end;
    field = readDer(der, at, tbs.end);
  }
  // serial, signature, issuer, validity: skipped; then the subject.
  for (let skip = 0; skip < 4; skip++) {
    at = field.end;
    field = readDer(der, at, tbs.end);
  }
  const subject = field;
  if (subject.tag !== 0x30) throw new Error("the certificate's subject is not a SEQUENCE");
  const rdns: string[] = [];
  let cn: string | undefined;
  for (let rdnAt = subject.start; rdnAt < subject.end; ) {
    const rdn = readDer(der, rdnAt, subject.end);
    const values: string[] = [];
    for (let avaAt = rdn.start; avaAt < rdn.end; ) {
      const ava = readDer(der, avaAt, rdn.end);
      const type = readDer(der, ava.start, ava.end);
      const value = readDer(der, type.end, ava.end);
      const oid = oidText(der, type.start, type.end);
      const text = attributeText(der, value);
      const keyword = ATTRIBUTE_KEYWORDS[oid];
      if (keyword === "CN" && cn === undefined && text !== undefined) cn = text;
      // RFC 2253 §2.4: a type written as a dotted OID has its value as `#` and the DER in hex
      // (Java's X500Principal, hence Kafka's principal, writes emailAddress that way too).
      values.push(
        keyword === undefined
          ? `${oid}=${attributeValue(der, value, undefined)}`
          : `${keyword}=${attributeValue(der, value, text)}`,
      );
      avaAt = ava.end;
    }
    rdns.push(values.join("+"));
    rdnAt = rdn.end;
  }
  return { dn: rdns.reverse().join(","), cn };
}

/** The principal a client certificate (DER) maps to under `rule`. */
export function clientPrincipal(der: Uint8Array, rule: ClientPrincipalRule): string {
  const { dn, cn } = certificateSubject(der);
  return rule === "cn" && cn !== undefined ? cn : dn;
}

/**
 * Builds a TLS context from `files` the way the listeners will (Bun.listen on a loopback port that
 * is closed at once), so a certificate BoringSSL refuses is found before any listener is touched
 * (a SIGHUP reload). Throws BoringSSL's reason.
 */
export function checkTlsContext(files: TlsFiles): void {
  const probe = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    tls: bunTlsOptions(files),
    socket: { data() {} },
  });
  probe.stop(true);
}
