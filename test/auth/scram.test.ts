/**
 * SCRAM against the RFCs' own examples (RFC 5802 §5 for the SHA-1 form, RFC 7677 §3 for SHA-256),
 * and the broker side against the client side: right password, wrong password, unknown user (same
 * answer), a replayed client-final, out-of-order and malformed messages.
 */
import { describe, expect, test } from "bun:test";
import {
  AuthenticationError,
  deriveCredential,
  SCRAM_MECHANISMS,
  ScramClient,
  type ScramCredential,
  ScramServer,
  verifyPassword,
} from "../../src/auth/scram.ts";

describe("the RFC examples", () => {
  test("RFC 5802 (SCRAM-SHA-1): client-final proof and server signature", () => {
    const client = new ScramClient("SCRAM-SHA-1", "user", "pencil", "fyko+d2lbbFgONRv9qkxdawL");
    expect(client.first()).toBe("n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
    expect(client.final("r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096")).toBe(
      "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    );
    expect(() => client.verify("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=")).not.toThrow();
  });

  test("RFC 7677 (SCRAM-SHA-256): both sides reproduce the example exchange", () => {
    const client = new ScramClient("SCRAM-SHA-256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    const salt = new Uint8Array(Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64"));
    const credential = deriveCredential("SCRAM-SHA-256", "pencil", salt, 4096);
    const server = new ScramServer(
      "SCRAM-SHA-256",
      (user) => (user === "user" ? credential : undefined),
      new Uint8Array(16),
      () => "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    );
    const serverFirst = server.first(client.first());
    expect(serverFirst).toBe(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    );
    const clientFinal = client.final(serverFirst);
    expect(clientFinal).toBe(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    );
    const { serverFinal, user } = server.final(clientFinal);
    expect(serverFinal).toBe("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    expect(user).toBe("user");
    expect(() => client.verify(serverFinal)).not.toThrow();
  });
});

describe.each(SCRAM_MECHANISMS.map((mechanism) => [mechanism]))("%s", (mechanism) => {
  const users = new Map<string, ScramCredential>([["alice", deriveCredential(mechanism, "correct horse")]]);
  const server = () => new ScramServer(mechanism, (user) => users.get(user), new Uint8Array(16).fill(7));
  const exchange = (user: string, password: string) => {
    const client = new ScramClient(mechanism, user, password);
    const broker = server();
    const clientFinal = client.final(broker.first(client.first()));
    const result = broker.final(clientFinal);
    client.verify(result.serverFinal);
    return result.user;
  };

  test("the right password authenticates, both ways", () => {
    expect(exchange("alice", "correct horse")).toBe("alice");
  });

  test("a wrong password and an unknown user fail alike", () => {
    const wrong = (() => {
      try {
        exchange("alice", "battery staple");
      } catch (error) {
        return error;
      }
    })();
    const unknown = (() => {
      try {
        exchange("mallory", "anything");
      } catch (error) {
        return error;
      }
    })();
    expect(wrong).toBeInstanceOf(AuthenticationError);
    expect(unknown).toBeInstanceOf(AuthenticationError);
    expect((wrong as Error).message).toBe((unknown as Error).message);
    // The unknown user's server-first looks like a real one (salt, iterations) and is stable per name.
    const a = server().first("n,,n=mallory,r=abc");
    const b = server().first("n,,n=mallory,r=abc");
    expect(a.replace(/^r=[^,]*/, "")).toBe(b.replace(/^r=[^,]*/, ""));
    expect(a).toMatch(/^r=abc[^,]+,s=[A-Za-z0-9+/=]+,i=4096$/);
  });

  test("a recorded client-final does not verify in another exchange (fresh server nonce)", () => {
    const client = new ScramClient(mechanism, "alice", "correct horse");
    const first = client.first();
    const recorded = client.final(server().first(first));
    const replay = server();
    replay.first(first);
    expect(() => replay.final(recorded)).toThrow("SCRAM nonce does not match");
  });

  test("out-of-order and malformed messages are refused with a reason", () => {
    expect(() => server().final("c=biws,r=x,p=AAAA")).toThrow("out of order");
    expect(() => server().first("y,,n=alice,r=abc")).toThrow("must start with 'n,,'");
    expect(() => server().first("n,,r=abc")).toThrow("n= and r= are required");
    expect(() => server().first("n,,n=al=ice,r=abc")).toThrow("malformed SCRAM user name");
    expect(() => server().first("n,,n=alice,r=abc,m=ext")).toThrow("extensions");
    const broker = server();
    const first = broker.first("n,,n=alice,r=abc");
    expect(() => broker.final(`c=eSws,r=${first.slice(2, first.indexOf(","))},p=AAAA`)).toThrow("c=biws");
    expect(() => server().first("garbage")).toThrow(AuthenticationError);
  });

  test("fewer than 4096 iterations are refused", () => {
    expect(() => deriveCredential(mechanism, "pw", undefined, 1000)).toThrow("at least 4096");
  });
});

describe("a password sent in full (SASL PLAIN, the console's login)", () => {
  const both = new Map(
    SCRAM_MECHANISMS.map((mechanism) => [mechanism, deriveCredential(mechanism, "s3cret")]),
  );
  const only512 = new Map([["SCRAM-SHA-512", deriveCredential("SCRAM-SHA-512", "s3cret")] as const]);
  test("the right password matches every stored mechanism; a wrong one, an unknown user or none do not", async () => {
    for (const credentials of [both, only512]) {
      expect(await verifyPassword(credentials, "s3cret")).toBe(true);
      expect(await verifyPassword(credentials, "s3cret")).toBe(true);
      expect(await verifyPassword(credentials, "s3cret ")).toBe(false);
      expect(await verifyPassword(credentials, "")).toBe(false);
    }
    expect(await verifyPassword(undefined, "s3cret")).toBe(false);
    expect(await verifyPassword(new Map(), "s3cret")).toBe(false);
  });
  test("credentials made from different passwords do not match either one", async () => {
    const mixed = new Map([
      ["SCRAM-SHA-256", deriveCredential("SCRAM-SHA-256", "one")] as const,
      ["SCRAM-SHA-512", deriveCredential("SCRAM-SHA-512", "two")] as const,
    ]);
    expect(await verifyPassword(mixed, "one")).toBe(false);
    expect(await verifyPassword(mixed, "two")).toBe(false);
  });
});
