/**
 * The client's TCP socket on either runtime: `Bun.connect` under Bun, `node:net` (`node:tls` under
 * TLS) elsewhere (the
 * client library runs on Node.js ≥ 20 too; docs/client.md "Node.js"). Owns only the choice and the
 * adaptation; framing, ordering and errors stay in connection.ts.
 *
 * Invariants:
 * - `write` returns how many bytes the socket took now, or -1 when it is closed. Bun's takes part of
 *   a frame when the kernel buffer is full (the rest waits for `drain`); Node's buffers everything
 *   itself, so it always answers the whole length, after copying: the caller reuses its buffer.
 * - Each handler runs at most as often as the runtime reports the event; connection.ts treats
 *   `close`, `end` and `error` alike (the first one fails the connection, the others find it failed).
 */
import net from "node:net";
import nodeTls from "node:tls";

export interface ClientSocket {
  write(bytes: Uint8Array): number;
  end(): void;
}

export interface SocketHandlers {
  data(chunk: Uint8Array): void;
  drain(): void;
  /**
   * Under TLS: the handshake ended, verified (`undefined`) or refused (the reason; the socket is
   * then ended). The connect promise may resolve before it (Bun resolves on the TCP connect).
   */
  handshake?(error: Error | undefined): void;
  close(): void;
  end(): void;
  error(error: Error): void;
}

/** TLS towards the broker: its certificate must chain to `ca` (default: the system's) and name `serverName`. */
export interface SocketTls {
  serverName: string;
  ca?: string;
  cert?: string;
  key?: string;
}

/**
 * Connects (with TLS when `tls` is given); rejects with the runtime's error (its `code`, e.g.
 * ECONNREFUSED, kept).
 */
export function connectSocket(
  host: string,
  port: number,
  handlers: SocketHandlers,
  tls?: SocketTls,
): Promise<ClientSocket> {
  if (typeof Bun !== "undefined") return connectBun(host, port, handlers, tls);
  return connectNode(host, port, handlers, tls);
}

async function connectBun(
  host: string,
  port: number,
  handlers: SocketHandlers,
  tls: SocketTls | undefined,
): Promise<ClientSocket> {
  return Bun.connect<undefined>({
    hostname: host,
    port,
    ...(tls === undefined ? {} : { tls: { ...tls, rejectUnauthorized: true } }),
    socket: {
      handshake: (socket, success, authorizationError) => {
        if (success && authorizationError === null) {
          handlers.handshake?.(undefined);
          return;
        }
        handlers.handshake?.(authorizationError ?? new Error("the TLS handshake failed"));
        socket.end();
      },
      binaryType: "uint8array",
      data: (_socket, chunk) => handlers.data(chunk),
      drain: () => handlers.drain(),
      close: () => handlers.close(),
      end: () => handlers.end(),
      error: (_socket, error) => handlers.error(error),
    },
  });
}

function connectNode(
  host: string,
  port: number,
  handlers: SocketHandlers,
  tls: SocketTls | undefined,
): Promise<ClientSocket> {
  return new Promise<ClientSocket>((resolve, reject) => {
    // Requests are small frames answered one by one: Nagle's delay would hold each for an ACK.
    // Under TLS, "secureConnect" comes after the handshake verified the broker; a refused one is an
    // error before it, which rejects the connect with the reason.
    const socket =
      tls === undefined
        ? net.connect({ host, port, noDelay: true })
        : nodeTls.connect({
            host,
            port,
            servername: tls.serverName,
            rejectUnauthorized: true,
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
            ...(tls.cert === undefined ? {} : { cert: tls.cert }),
            ...(tls.key === undefined ? {} : { key: tls.key }),
          });
    if (tls !== undefined) socket.setNoDelay(true);
    let connected = false;
    const adapter: ClientSocket = {
      write(bytes) {
        if (socket.destroyed || !socket.writable) return -1;
        // Node keeps a reference to what it has not sent yet; the caller's buffer is reused.
        socket.write(Buffer.from(bytes));
        return bytes.length;
      },
      end() {
        socket.destroy();
      },
    };
    socket.once(tls === undefined ? "connect" : "secureConnect", () => {
      connected = true;
      resolve(adapter);
      handlers.handshake?.(undefined);
    });
    socket.on("data", (chunk: Buffer) => handlers.data(chunk));
    socket.on("end", () => handlers.end());
    socket.on("close", () => {
      if (connected) handlers.close();
    });
    socket.on("error", (error) => {
      if (connected) handlers.error(error);
      else reject(error);
    });
  });
}
