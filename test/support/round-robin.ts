// A round-robin TCP front for several backends, like a Kubernetes Service in front of core's
// replicas: each new connection goes to the next backend; a backend that refuses the connection
// (a killed replica) is skipped for that connection. Bytes are relayed untouched (TLS and HTTP/2
// pass through), so gRPC streams and HTTP requests behave as they would behind a Service.
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";

export interface RoundRobinFront {
  port: number;
  /** Connections handed to each backend port so far. */
  counts: Map<number, number>;
  close(): Promise<void>;
}

export async function startRoundRobin(
  backends: readonly number[],
  host = "127.0.0.1",
): Promise<RoundRobinFront> {
  let next = 0;
  const counts = new Map<number, number>(backends.map((p) => [p, 0]));
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    track(client);
    client.pause();
    const tryBackend = (attempt: number): void => {
      if (attempt >= backends.length) {
        client.destroy();
        return;
      }
      const port = backends[next++ % backends.length] ?? 0;
      const upstream = connect({ host, port });
      track(upstream);
      let connected = false;
      upstream.once("connect", () => {
        connected = true;
        counts.set(port, (counts.get(port) ?? 0) + 1);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
      upstream.on("error", () => {
        if (!connected) tryBackend(attempt + 1);
        else client.destroy();
      });
      upstream.once("close", () => {
        if (connected) client.destroy();
      });
      client.on("error", () => upstream.destroy());
      client.once("close", () => upstream.destroy());
    };
    tryBackend(0);
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(0, host, () => ok());
  });
  return {
    port: (server.address() as AddressInfo).port,
    counts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
