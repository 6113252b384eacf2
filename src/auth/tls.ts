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
