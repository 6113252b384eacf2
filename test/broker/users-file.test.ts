/**
 * The users file: written with mode 0600 atomically, holds no password (only SCRAM's salt,
 * iterations, StoredKey and ServerKey), round-trips, and a malformed file is an error naming what is
 * wrong rather than "no users".
 */
import { expect, test } from "bun:test";
import fs from "node:fs";
import { deriveCredential } from "../../src/auth/scram.ts";
import {
  parseUsers,
  readUsersFile,
  readUsersFileOrEmpty,
  setUser,
  writeUsersFile,
} from "../../src/broker/users-file.ts";
import { tempDir } from "../helpers/temp-dir.ts";

test("written 0600, without the password, and read back to the same credentials", () => {
  using dir = tempDir();
  const file = dir.file("users.json");
  // A stale temporary file with a wide mode must not leak its mode into the new file.
  fs.writeFileSync(`${file}.tmp`, "old", { mode: 0o666 });
  const users = readUsersFileOrEmpty(file);
  expect(users.size).toBe(0);
  setUser(users, "alice", "correct horse battery staple");
  writeUsersFile(file, users);
  expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  expect(fs.existsSync(`${file}.tmp`)).toBe(false);
  const text = fs.readFileSync(file, "utf8");
  expect(text).not.toContain("correct horse");
  const back = readUsersFile(file);
  const credential = back.get("alice")!.get("SCRAM-SHA-256")!;
  const again = deriveCredential(
    "SCRAM-SHA-256",
    "correct horse battery staple",
    credential.salt,
    credential.iterations,
  );
  expect(Buffer.from(credential.storedKey).equals(Buffer.from(again.storedKey))).toBe(true);
  expect([...back.get("alice")!.keys()]).toEqual(["SCRAM-SHA-256", "SCRAM-SHA-512"]);
});

test("a missing or malformed users file is an error that says what is wrong", () => {
  using dir = tempDir();
  expect(() => readUsersFile(dir.file("nope.json"))).toThrow("does not exist");
  expect(() => parseUsers("{", "f")).toThrow("f is not JSON");
  expect(() => parseUsers('{"version":2,"users":{}}', "f")).toThrow('expected {"version": 1');
  expect(() => parseUsers('{"version":1,"users":{"a,b":{}}}', "f")).toThrow('user name "a,b" is not allowed');
  expect(() => parseUsers('{"version":1,"users":{"a":{"MD5":{}}}}', "f")).toThrow('unknown mechanism "MD5"');
  expect(() =>
    parseUsers('{"version":1,"users":{"a":{"SCRAM-SHA-256":{"salt":"!!","iterations":4096}}}}', "f"),
  ).toThrow("salt must be base64");
  const users = readUsersFileOrEmpty(dir.file("x.json"));
  expect(() => setUser(users, "bad name", "pw")).toThrow("user name must be");
  expect(() => setUser(users, "ok", "")).toThrow("must not be empty");
});
