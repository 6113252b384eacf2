/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a listener whose port must stay the same
 * across a restart of its process (clients that reconnect to the old address) or be known before
 * its start line. Another process may take it meanwhile; the tests that use it bind it at once.
 */
import net from "node:net";

export function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const chosen = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(chosen));
    });
  });
}
