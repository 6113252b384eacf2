/**
 * A client certificate's subject as a principal (src/auth/tls.ts certificateSubject,
 * clientPrincipal), against certificates made by openssl and the RFC 2253 string openssl itself
 * prints for them (`-nameopt RFC2253`), for subjects with escapes, a multi-valued RDN, an attribute
 * without an RFC 2253 keyword, a UTF-8 value, and no CN.
 */
import { describe, expect, test } from "bun:test";
import { X509Certificate } from "node:crypto";
import fs from "node:fs";
import { certificateSubject, clientPrincipal } from "../../src/auth/tls.ts";
import { tempDir } from "../helpers/temp-dir.ts";

function certificateFor(dir: string, subject: string, extra: string[] = []): Uint8Array {
  const run = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      "k.pem",
      "-out",
      "c.pem",
      "-days",
      "1",
      "-utf8",
      "-subj",
      subject,
      ...extra,
    ],
    { cwd: dir, stderr: "pipe" },
  );
  if (run.exitCode !== 0) throw new Error(run.stderr.toString());
  return new X509Certificate(fs.readFileSync(`${dir}/c.pem`)).raw;
}

function opensslRfc2253(dir: string): string {
  const run = Bun.spawnSync(
    ["openssl", "x509", "-in", "c.pem", "-noout", "-subject", "-nameopt", "RFC2253,-esc_msb"],
    { cwd: dir, stdout: "pipe" },
  );
  return run.stdout
    .toString()
    .trim()
    .replace(/^subject=/, "");
}

describe("client certificate principals", () => {
  test.each([
    ["/CN=alice", "CN=alice", "alice"],
    ["/O=Example, Inc./OU=eng/CN=bob", "CN=bob,OU=eng,O=Example\\, Inc.", "bob"],
    [
      // openssl's -subj takes a backslash before a + that belongs to the value.
      '/C=DE/ST=Berlin/L=Berlin/O=a\\+b;c<d>"e" /CN=#hash',
      'CN=\\#hash,O=a\\+b\\;c\\<d\\>\\"e\\"\\ ,L=Berlin,ST=Berlin,C=DE',
      "#hash",
    ],
    ["/DC=org/DC=example/UID=u1/CN=Zoë Ünicode", "CN=Zoë Ünicode,UID=u1,DC=example,DC=org", "Zoë Ünicode"],
    ["/O=no common name/OU=ops", "OU=ops,O=no common name", undefined],
  ])("%s", (subject, dn, cn) => {
    using dir = tempDir();
    const der = certificateFor(dir.path, subject);
    expect(certificateSubject(der)).toEqual({ dn, cn });
    // openssl's own RFC 2253 rendering agrees (UTF-8 left as it is).
    expect(opensslRfc2253(dir.path)).toBe(dn);
    expect(clientPrincipal(der, "dn")).toBe(dn);
    // cn: the CN, or the DN when there is none.
    expect(clientPrincipal(der, "cn")).toBe(cn ?? dn);
  });

  test("an attribute without an RFC 2253 keyword: dotted OID and the DER value in hex", () => {
    using dir = tempDir();
    const der = certificateFor(dir.path, "/emailAddress=a@example.com/CN=mail");
    // IA5String (0x16) of 13 bytes.
    const hex = `#160d${Buffer.from("a@example.com").toString("hex")}`;
    expect(certificateSubject(der).dn).toBe(`CN=mail,1.2.840.113549.1.9.1=${hex}`);
    expect(opensslRfc2253(dir.path)).toBe(`CN=mail,emailAddress=a@example.com`);
  });

  test("a multi-valued RDN joins its attributes with +", () => {
    using dir = tempDir();
    const der = certificateFor(dir.path, "/O=Example/CN=bob+UID=42", ["-multivalue-rdn"]);
    const { dn, cn } = certificateSubject(der);
    expect(cn).toBe("bob");
    // DER sorts a SET's members; openssl prints them in its own order. Both are one RDN.
    expect(dn.endsWith(",O=Example")).toBe(true);
    expect(dn.split(",")[0]!.split("+").sort()).toEqual(["CN=bob", "UID=42"]);
  });

  test("bytes that are not a certificate throw", () => {
    expect(() => certificateSubject(new Uint8Array([0x30, 0x05, 0x01]))).toThrow();
    expect(() => certificateSubject(new Uint8Array(0))).toThrow();
  });
});
