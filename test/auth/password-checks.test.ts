/**
 * The process's gate on password checks that derive keys (src/auth/password-checks.ts): at most
 * `runningMax` run at once, the rest wait in order, one more than `waitingMax` is refused at once,
 * and every check still answers right. Credentials with 200,000 rounds make each check last long
 * enough (tens of ms) for the count to be seen while it runs.
 */
import { describe, expect, test } from "bun:test";
import { PasswordChecks } from "../../src/auth/password-checks.ts";
import { deriveCredential } from "../../src/auth/scram.ts";

const credentials = new Map([
  ["SCRAM-SHA-256", deriveCredential("SCRAM-SHA-256", "right", undefined, 200_000)] as const,
]);

describe("PasswordChecks", () => {
  test("one runs at a time, the others wait in order, and each answers right", async () => {
    const checks = new PasswordChecks(1, 8);
    let most = 0;
    const sample = setInterval(() => {
      most = Math.max(most, checks.running);
    }, 1);
    const ended: number[] = [];
    const answers = await Promise.all(
      ["right", "wrong", "right", "wrong"].map((password, index) =>
        checks.check(credentials, password)!.then((answer) => {
          most = Math.max(most, checks.running);
          ended.push(index);
          return answer;
        }),
      ),
    );
    clearInterval(sample);
    expect(answers).toEqual([true, false, true, false]);
    expect(ended).toEqual([0, 1, 2, 3]);
    expect(most).toBe(1);
    expect(checks.running).toBe(0);
    expect(checks.queued).toBe(0);
  });

  test("beyond the waiting limit a check is refused at once; the places free up", async () => {
    const checks = new PasswordChecks(1, 2);
    const first = checks.check(credentials, "right");
    const waiting = [checks.check(credentials, "wrong"), checks.check(credentials, "right")];
    expect(checks.running).toBe(1);
    expect(checks.queued).toBe(2);
    expect(checks.check(credentials, "right")).toBeUndefined();
    expect(await first).toBe(true);
    expect(await Promise.all(waiting)).toEqual([false, true]);
    expect(checks.running).toBe(0);
    expect(await checks.check(credentials, "right")).toBe(true);
  });
});
