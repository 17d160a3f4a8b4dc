// Streams benchmark (issue 32): 20,000 attempts to open the dashboard's event stream against a
// real core API in a child process, from 20 client addresses (127.0.0.1–20) with the viewer and
// the admin token, each accepted stream kept open to the end. Prints how many were accepted and
// refused (429, by reason) and core's RSS growth; fails when more were accepted than the total
// cap or the growth exceeds --max-mib (100).
//
//   npm run bench:streams [-- --attempts 20000 --width 200 --max-mib 100]
import { fork } from "node:child_process";
import { request, type ClientRequest } from "node:http";
import { parseArgs } from "node:util";
import { DEFAULT_SSE_CAPS } from "../../src/api/streams.ts";

const { values: args } = parseArgs({
  options: {
    attempts: { type: "string", default: "20000" },
    width: { type: "string", default: "200" },
    "max-mib": { type: "string", default: "100" },
  },
});
const attempts = Number(args.attempts);
const width = Number(args.width);
const maxMib = Number(args["max-mib"]);
const VIEWER = "bench-viewer-token-0123456789";
const ADMIN = "bench-admin-token-0123456789";
const mib = (b: number): string => `${(b / 2 ** 20).toFixed(1)} MiB`;

const child = fork(new URL("./core-child.ts", import.meta.url), [], {
  env: { ...process.env, WAVE_BENCH_VIEWER: VIEWER, WAVE_BENCH_ADMIN: ADMIN },
  execArgv: ["--expose-gc"],
});
const ask = <T>(type: string): Promise<T> =>
  new Promise((resolve) => {
    const on = (m: { type: string }): void => {
      if (m.type !== type) return;
      child.off("message", on);
      resolve(m as T);
    };
    child.on("message", on);
    if (type !== "ready") child.send({ type });
  });
const { port } = await ask<{ port: number }>("ready");
const rss = async (): Promise<number> => (await ask<{ rss: number }>("stats")).rss;

// A few streams first, so the baseline includes the stream code and the shared snapshot.
const held: ClientRequest[] = [];
const statuses: Record<string, number> = {};
const reasons: Record<string, number> = {};
function attempt(i: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/api/v1/clusters/bench/stream",
        localAddress: `127.0.0.${1 + (i % 20)}`,
        headers: { authorization: `Bearer ${i % 2 === 0 ? VIEWER : ADMIN}` },
      },
      (res) => {
        statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
        if (res.statusCode === 200) {
          held.push(req);
          res.once("data", () => resolve());
          return;
        }
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => {
          const reason = ((JSON.parse(body) as { message?: string }).message ?? "").replace(/\d+/g, "N");
          reasons[reason] = (reasons[reason] ?? 0) + 1;
          resolve();
        });
      },
    );
    req.on("error", (err) => {
      statuses[`error ${(err as NodeJS.ErrnoException).code ?? ""}`] =
        (statuses[`error ${(err as NodeJS.ErrnoException).code ?? ""}`] ?? 0) + 1;
      resolve();
    });
    req.end();
  });
}
for (let i = 0; i < 4; i++) await attempt(i);
for (const r of held.splice(0)) r.destroy();
await new Promise((r) => setTimeout(r, 500));
const before = await rss();
let peak = before;
const sampler = setInterval(() => void rss().then((r) => (peak = Math.max(peak, r))), 250);
for (const k of Object.keys(statuses)) statuses[k] = 0;

const started = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: width }, async () => {
    while (next < attempts) await attempt(next++);
  }),
);
const ms = performance.now() - started;
await new Promise((r) => setTimeout(r, 1000));
const open = held.length;
const whileOpen = await rss();
clearInterval(sampler);
peak = Math.max(peak, whileOpen);
for (const r of held) r.destroy();
await new Promise((r) => setTimeout(r, 1000));
const after = await rss();

console.log(
  `${attempts} stream attempts in ${(ms / 1000).toFixed(1)} s from 20 addresses, 2 tokens; caps ${JSON.stringify(DEFAULT_SSE_CAPS)}`,
);
console.log(`answers: ${JSON.stringify(statuses)}; held open at the end: ${open}`);
for (const [reason, n] of Object.entries(reasons)) console.log(`  429 ×${n}: ${reason}`);
console.log(
  `core RSS: ${mib(before)} before, peak ${mib(peak)} (+${mib(peak - before)}), ${mib(whileOpen)} with ${open} open, ${mib(after)} after they closed`,
);
const problems: string[] = [];
if (open > DEFAULT_SSE_CAPS.total) problems.push(`${open} streams open, cap ${DEFAULT_SSE_CAPS.total}`);
if (peak - before > maxMib * 2 ** 20) problems.push(`RSS grew ${mib(peak - before)} > ${maxMib} MiB`);
if ((statuses["500"] ?? 0) > 0) problems.push(`${statuses["500"]} server errors`);
child.send({ type: "stop" });
console.log(problems.length === 0 ? "streams: ok" : `streams: FAILED (${problems.join("; ")})`);
process.exitCode = problems.length === 0 ? 0 : 1;
