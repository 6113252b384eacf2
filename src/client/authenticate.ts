/**
 * The client's side of AUTHENTICATE: one SCRAM exchange (two round trips) on a fresh connection,
 * before any other request. The broker's final message is checked too, so a client never talks to
 * a broker that does not know its credential (an impostor on the address).
 */
import { ScramClient, type ScramMechanism } from "../auth/scram.ts";
import { decodeAuthenticateResponse, encodeAuthenticateRequest } from "../protocol/messages.ts";
import type { BrokerConnection } from "./connection.ts";

const text = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export async function authenticate(
  connection: BrokerConnection,
  user: string,
  password: string,
  mechanism: ScramMechanism = "SCRAM-SHA-256",
): Promise<void> {
  const scram = new ScramClient(mechanism, user, password);
  const step = async (message: string) => {
    const reply = await connection.send(
      (writer, correlationId) =>
        encodeAuthenticateRequest(writer, correlationId, { mechanism, authBytes: text.encode(message) }),
      (reader) => decodeAuthenticateResponse(reader).slice(),
    );
    return decoder.decode(reply);
  };
  const serverFirst = await step(scram.first());
  const serverFinal = await step(scram.final(serverFirst));
  scram.verify(serverFinal);
}
