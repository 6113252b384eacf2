/**
 * The listening ports of one listener, with or without TLS, as both listeners bind them: the
 * native one (src/server/server.ts) and the Kafka one (src/kafka/listener.ts). One copy so that the
 * two cannot drift apart again (they had: a client certificate whose subject did not parse was
 * audited by the native listener and not by the Kafka one).
 *
 * Owns: the bound ports (address, Bun listening socket, the TLS files each serves), binding them
 * again with new TLS files (SIGHUP), and turning a client certificate into the connection's
 * principal after the handshake.
 *
 * Invariants:
 * - A port keeps its bound address across a reload (port 0 becomes the port it got), and its place
 *   in `ports` (the caller's order: the plain or TLS-only one first, then the TLS one beside it).
 * - A reload that cannot bind a port with the new files binds it again with the old ones (which
 *   served a moment before) and throws; the caller says so (main.ts: "kept the old one").
 * - On a port with a CA, a client certificate becomes the principal only when the listener has no
 *   login of its own (users: SCRAM or SASL decides, as Kafka's SASL_SSL), and only once. Both the
 *   login and a refusal write one audit line; a refusal then ends the connection.
 */
import type { Socket, SocketHandler, TCPSocketListener } from "bun";
import { bunTlsOptions, type ClientPrincipalRule, clientPrincipal, type TlsFiles } from "./tls.ts";

/** One bound port. */
export interface ListeningPort<Data> {
  socket: TCPSocketListener<Data>;
  /** The bound address (not 0 once bound): a reload binds the same one again. */
  hostname: string;
  port: number;
  /** The files this port serves; undefined: plain TCP. */
  tls: TlsFiles | undefined;
}

/** A connection's side of a client-certificate login (the listener's connection, adapted). */
export interface CertificateLoginTarget {
  /** The listener has users: their login decides the principal; the certificate only admitted. */
  loginRequired: boolean;
  /** The principal already set (undefined: none yet). */
  principal: string | undefined;
  setPrincipal(principal: string): void;
  /** One audit line about this connection ("who from where" is the listener's to write). */
  audit(what: string): void;
  /** Ends the connection (after the audit line). */
  refuse(reason: string): void;
}

/** The audit text of a login by client certificate (docs/security.md quotes it). */
export const CERTIFICATE_LOGIN_AUDIT = "logged in (TLS client certificate)";

/**
 * A client on a port with a CA presented a certificate the CA signed (BoringSSL refused every other
 * one in the handshake): without users, its subject under `rule` is the connection's principal, as
 * Kafka's SSL listener does (`ssl.principal.mapping.rules`). A subject that does not parse refuses
 * the connection, with an audit line. `raw`: the certificate's DER (`getPeerCertificate().raw`).
 */
export function loginWithClientCertificate(
  raw: Uint8Array | undefined,
  rule: ClientPrincipalRule,
  target: CertificateLoginTarget,
): void {
  if (target.loginRequired || target.principal !== undefined || raw === undefined) return;
  let principal: string;
  try {
    principal = clientPrincipal(raw, rule);
  } catch (error) {
    const reason = `TLS client certificate refused: its subject does not parse: ${(error as Error).message}`;
    target.audit(reason);
    target.refuse(reason);
    return;
  }
  target.setPrincipal(principal);
  target.audit(CERTIFICATE_LOGIN_AUDIT);
}

/** The socket handlers of a port, except `handshake` (ListeningPorts adds it) and `binaryType`. */
export type PortHandlers<Data> = Omit<SocketHandler<Data>, "handshake" | "binaryType">;

export interface ListeningPortsOptions<Data, Extra> {
  /** Bun's allowHalfOpen for every port (the native listener answers after the client's FIN). */
  allowHalfOpen?: boolean;
  /** The handlers of one port; `port` is its entry (its `tls`, and what the caller keeps in Extra). */
  handlers(port: ListeningPort<Data> & Extra): PortHandlers<Data>;
  /** After a successful handshake on a port with a CA: the connection's login target (undefined: none). */
  certificateTarget(socket: Socket<Data>): CertificateLoginTarget | undefined;
  /** How a client certificate becomes a principal. */
  clientPrincipal: ClientPrincipalRule;
}

/** The bound ports of one listener, in the order they were bound. */
export class ListeningPorts<Data, Extra extends object = Record<never, never>> {
  readonly ports: Array<ListeningPort<Data> & Extra> = [];
  private readonly options: ListeningPortsOptions<Data, Extra>;

  constructor(options: ListeningPortsOptions<Data, Extra>) {
    this.options = options;
  }

  /**
   * Binds one port (at `index` in `ports`, default last); TLS when `tls` is given. Throws
   * (EADDRINUSE, EADDRNOTAVAIL, EACCES…) instead of half-binding. `reusePort` stays off: with it a
   * second broker would silently share the port (bun-platform §2, trap 10).
   */
  bind(
    hostname: string,
    port: number,
    tls: TlsFiles | undefined,
    extra: Extra,
    index = this.ports.length,
  ): ListeningPort<Data> & Extra {
    const options = this.options;
    // The entry exists before the socket so that the handlers can read what the caller keeps in it
    // (the Kafka listener sets its handler after bind, before any connection can open).
    const entry = { ...extra, hostname, port, tls } as ListeningPort<Data> & Extra;
    const handlers = options.handlers(entry);
    entry.socket = Bun.listen<Data>({
      hostname,
      port,
      ...(options.allowHalfOpen === undefined ? {} : { allowHalfOpen: options.allowHalfOpen }),
      ...(tls === undefined ? {} : { tls: bunTlsOptions(tls) }),
      socket: {
        ...handlers,
        binaryType: "uint8array",
        handshake(socket, success) {
          if (!success || tls?.ca === undefined) return;
          const target = options.certificateTarget(socket);
          if (target !== undefined)
            loginWithClientCertificate(socket.getPeerCertificate()?.raw, options.clientPrincipal, target);
        },
      },
    });
    entry.hostname = entry.socket.hostname;
    entry.port = entry.socket.port;
    this.ports.splice(index, 0, entry);
    return entry;
  }

  /**
   * New TLS files (SIGHUP) for every TLS port: each is bound again at its address with them, so new
   * connections get the new certificate (and CA) while open ones continue on the old session. Bun
   * 1.4.4 has no way to swap a listening socket's TLS context (`listener.reload({tls})` is silently
   * ignored, measured; oven-sh/bun#43815), so the listening socket itself is replaced: a connection
   * attempt in the few microseconds between close and bind, or waiting unaccepted in the old
   * socket's backlog, is refused and retried by the client. The caller checks the files (tls.ts
   * checkTlsContext) first. Returns how many ports were bound again.
   */
  reloadTls(files: TlsFiles): number {
    let count = 0;
    for (let i = 0; i < this.ports.length; i++) {
      const old = this.ports[i]!;
      if (old.tls === undefined) continue;
      old.socket.stop(false);
      this.ports.splice(i, 1);
      try {
        this.bind(old.hostname, old.port, files, old, i);
      } catch (error) {
        // The port was taken in between: back to the old certificate, which was serving a moment ago.
        this.bind(old.hostname, old.port, old.tls, old, i);
        throw error;
      }
      count++;
    }
    return count;
  }

  /** Stops accepting on every port; `closeActive` also closes their open connections. */
  stop(closeActive: boolean): void {
    for (const bound of this.ports) bound.socket.stop(closeActive);
  }
}
