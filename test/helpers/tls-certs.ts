/**
 * Certificates for TLS tests, made by the test with the openssl command (no key material in the
 * repository): a CA, a broker certificate it signed for 127.0.0.1 and localhost, the same key in a
 * certificate that expired yesterday, an unrelated CA, and a client certificate the CA signed (for
 * mutual TLS). P-256 keys: generated in milliseconds.
 */
import fs from "node:fs";
import path from "node:path";

export interface TestCertificates {
  caFile: string;
  certFile: string;
  keyFile: string;
  expiredCertFile: string;
  otherCaFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  ca: string;
  otherCa: string;
  clientCert: string;
  clientKey: string;
}

function openssl(dir: string, args: string[]): void {
  const run = Bun.spawnSync(["openssl", ...args], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${run.stderr.toString()}`);
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];

export function makeCertificates(dir: string): TestCertificates {
  openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=booblik test CA",
  ]);
  openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    "other-ca.key",
    "-out",
    "other-ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=another CA",
  ]);
  fs.writeFileSync(path.join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl(dir, ["req", ...EC, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
  const sign = (csr: string, out: string, days: string, ext: string[]) =>
    openssl(dir, [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      out,
      "-days",
      days,
      ...ext,
    ]);
  sign("server.csr", "server.pem", "2", ["-extfile", "server.ext"]);
  // -days -1: valid from now until yesterday, i.e. expired.
  sign("server.csr", "expired.pem", "-1", ["-extfile", "server.ext"]);
  openssl(dir, ["req", ...EC, "-keyout", "client.key", "-out", "client.csr", "-subj", "/CN=alice"]);
  sign("client.csr", "client.pem", "2", []);
  const file = (name: string) => path.join(dir, name);
  return {
    caFile: file("ca.pem"),
    certFile: file("server.pem"),
    keyFile: file("server.key"),
    expiredCertFile: file("expired.pem"),
    otherCaFile: file("other-ca.pem"),
    clientCertFile: file("client.pem"),
    clientKeyFile: file("client.key"),
    ca: fs.readFileSync(file("ca.pem"), "utf8"),
    otherCa: fs.readFileSync(file("other-ca.pem"), "utf8"),
    clientCert: fs.readFileSync(file("client.pem"), "utf8"),
    clientKey: fs.readFileSync(file("client.key"), "utf8"),
  };
}
