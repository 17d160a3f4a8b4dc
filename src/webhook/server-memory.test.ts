// Issue 32's memory finding, measured: 120 TLS connections each sending a 3 MiB body slowly
// (3 MiB − 1 KiB of it, then holding) against the webhook with its default limits, in a child
// process whose RSS is sampled every 10 ms. Before the fix every body was buffered until it ended
// (Node's 300 s request timeout, no connection cap): +376 MB, past the chart's 384 Mi limit.
import assert from "node:assert/strict";
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { request } from "node:https";
import { connect, type TLSSocket } from "node:tls";
import { after, before, describe, it } from "node:test";
import { loadFixture } from "./test-helpers.ts";

const MiB = 2 ** 20;
const CONNECTIONS = 120;
const DECLARED = 3 * MiB;
const SENT = 3 * MiB - 1024;
const CHUNK = 64 * 1024;
/** Each connection sends its 3 MiB − 1 KiB over about this long, then holds. */
const SEND_MS = 3_000;
const HOLD_MS = 4_000;

interface Report {
  baseline: number;
  peak: number;
  now: number;
}

describe("webhook memory under slow large bodies (issue 32)", { timeout: 120_000 }, () => {
  let child: ChildProcess;
  let port = 0;
  let ca = "";
  const next = <T>(): Promise<T> => once(child, "message").then(([m]) => m as T);

  before(async () => {
    child = fork(new URL("./memory-probe.ts", import.meta.url), [], {
      execArgv: ["--expose-gc"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    ({ port, ca } = await next<{ port: number; ca: string }>());
  });
  after(() => {
    child.disconnect();
    child.kill();
  });

  /** One genuine review on a fresh connection: status and how long the answer took. */
  const genuine = (): Promise<{ status: number; ms: number }> =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const body = JSON.stringify(loadFixture("deployment-pod-generatename"));
      const req = request(
        {
          host: "127.0.0.1",
          port,
          servername: "localhost",
          ca,
          agent: false,
          path: "/mutate",
          method: "POST",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });

  /** Opens a connection, declares 3 MiB, sends 3 MiB − 1 KiB slowly, then holds until `until`. */
  async function slowBody(until: Promise<void>): Promise<string> {
    const socket: TLSSocket = connect({ host: "127.0.0.1", port, servername: "localhost", ca });
    let outcome = "held";
    const state = { closed: false };
    socket.on("data", (d: Buffer) => {
      if (outcome === "held") outcome = /^HTTP\/1\.1 (\d+)/.exec(d.toString("latin1"))?.[1] ?? "data";
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      state.closed = true;
      if (outcome === "held") outcome = "closed";
    });
    try {
      await once(socket, "secureConnect");
    } catch {
      return "refused";
    }
    socket.write(
      `POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${DECLARED}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(CHUNK, 0x61);
    const pause = SEND_MS / Math.ceil(SENT / CHUNK);
    for (let sent = 0; sent < SENT && !state.closed; sent += CHUNK) {
      socket.write(chunk.subarray(0, Math.min(CHUNK, SENT - sent)));
      await new Promise((r) => setTimeout(r, pause));
    }
    await until;
    socket.destroy();
    return outcome;
  }

  it("120 connections × 3 MiB − 1 KiB, slow and held: RSS growth ≤ 64 MiB, and a genuine review is still answered at once", async () => {
    for (let i = 0; i < 20; i++) assert.equal((await genuine()).status, 200); // warm
    const { baseline } = await (child.send("baseline"), next<{ baseline: number }>());
    let release = (): void => undefined;
    const held = new Promise<void>((r) => (release = r));
    const attack = Array.from({ length: CONNECTIONS }, () => slowBody(held));
    await new Promise((r) => setTimeout(r, SEND_MS + 500));
    const during = await genuine();
    await new Promise((r) => setTimeout(r, HOLD_MS - 500));
    child.send("report");
    const report = await next<Report>();
    release();
    const outcomes = new Map<string, number>();
    for (const o of await Promise.all(attack)) outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
    const growth = (report.peak - baseline) / MiB;
    console.log(
      `# webhook RSS: baseline ${(baseline / MiB).toFixed(0)} MiB, peak ${(report.peak / MiB).toFixed(0)} MiB ` +
        `(+${growth.toFixed(1)} MiB); attackers: ${JSON.stringify(Object.fromEntries(outcomes))}; ` +
        `genuine review during the attack: ${during.status} in ${during.ms.toFixed(0)} ms`,
    );
    assert.ok(growth <= 64, `RSS grew ${growth.toFixed(1)} MiB`);
    assert.equal(during.status, 200, "a genuine review is answered during the attack");
    assert.ok(during.ms < 1_000, `answered in ${during.ms.toFixed(0)} ms`);
  });
});
