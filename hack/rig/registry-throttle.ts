// A TCP proxy in front of the rig's registry that limits what it sends back (the node's pulls) to
// a bandwidth shared by every connection, so a pull on loopback takes the seconds it takes from a
// regional registry. Started by real-node-run.ts; see docs/rig.md "Real node".
//
//   node hack/rig/registry-throttle.ts <listen port> <upstream port> <MB/s>
import { connect, createServer, type Socket } from "node:net";

/**
 * A token bucket of `bytesPerSec` with a burst of a tenth of a second: `take(n, now)` books n
 * bytes and returns how many ms the caller must wait before sending them.
 */
export function tokenBucket(bytesPerSec: number): { take: (n: number, now: number) => number } {
  let freeAt = 0; // when the link is next idle, in ms
  const burstMs = 100;
  return {
    take(n, now) {
      const start = Math.max(freeAt, now - burstMs);
      freeAt = start + (n / bytesPerSec) * 1000;
      return Math.max(0, freeAt - now - burstMs);
    },
  };
}

function pipeThrottled(from: Socket, to: Socket, bucket: ReturnType<typeof tokenBucket>): void {
  from.on("data", (chunk: Buffer) => {
    const wait = bucket.take(chunk.length, Date.now());
    if (wait <= 0) {
      if (!to.write(chunk)) from.pause();
      return;
    }
    from.pause();
    setTimeout(() => {
      to.write(chunk);
      from.resume();
    }, wait);
  });
  to.on("drain", () => from.resume());
  from.on("end", () => to.end());
}

function serve(listen: number, upstream: number, mbPerSec: number): void {
  const bucket = tokenBucket(mbPerSec * 1024 * 1024);
  createServer((client) => {
    const server = connect({ host: "127.0.0.1", port: upstream });
    client.pipe(server);
    pipeThrottled(server, client, bucket);
    const close = (): void => {
      client.destroy();
      server.destroy();
    };
    client.on("error", close);
    server.on("error", close);
    client.on("close", close);
  }).listen(listen, "127.0.0.1");
}

if (import.meta.main) {
  const [listen, upstream, mbps] = process.argv.slice(2).map(Number);
  if (!listen || !upstream || !mbps) {
    process.stderr.write("usage: node hack/rig/registry-throttle.ts <listen port> <upstream port> <MB/s>\n");
    process.exit(2);
  }
  serve(listen, upstream, mbps);
  process.stderr.write(`registry throttle: 127.0.0.1:${listen} -> 127.0.0.1:${upstream} at ${mbps} MB/s\n`);
}
