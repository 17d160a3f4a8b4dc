// What-if replays in worker threads (issue 29), through core's real route on loopback over a small
// cluster in core's hub and store (bench/fuzz/whatif.ts's fixture): progress streamed as server-sent
// events, the body that was a 500 answered, a client that goes away frees its worker within 1 s,
// and 20 concurrent what-ifs from a viewer meet a bounded queue (429 + Retry-After) while /healthz
// stays fast.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { FastifyInstance } from "fastify";
import { build } from "../../src/api/app.ts";
import { whatifRoutes } from "../../src/api/routes/whatif.ts";
import type { WhatifProgressDto, WhatifReportDto } from "../../src/dashboard/dto.ts";
import { WhatifPool, secondThread } from "../../src/sim/whatif-pool.ts";
import type { ClusterWhatifInput } from "../../src/sim/cluster-whatif.ts";
import type { FromWorker, ToWorker } from "../../src/sim/whatif-worker.ts";
import { Worker } from "node:worker_threads";
import { existsSync, readdirSync } from "node:fs";
import { percentile } from "../../src/sim/replay.ts";
import { whatifFixture } from "../../bench/fuzz/whatif.ts";
import { run } from "../../src/cli/main.ts";
import { progressLine } from "../../src/cli/whatif.ts";
import { captureIo } from "../support/io.ts";

const NOW = Date.parse("2026-12-03T12:00:00Z");
const VIEWER = "viewer-token-0123456789";
const API = { kind: "Deployment", namespace: "shop", name: "api" };
/** The body that answered 500 (random node names collided), on this cluster's workload. */
const STORMY = {
  spot: [{ workload: API, threshold: 2, strategy: "Prefer" }],
  spotInterruptionRate: 60,
  bootDelaySeconds: 1,
  seed: 1,
};
const QUICK = { spot: [{ workload: API, threshold: 2, strategy: "Prefer" }], spotInterruptionRate: 0 };

let fx: Awaited<ReturnType<typeof whatifFixture>>;
let pool: WhatifPool;
let app: FastifyInstance;
let url: string;
/** The last input the route handed to the pool. */
let lastInput: ClusterWhatifInput | undefined;

before(async () => {
  // A day of history: a stormy replay takes a second or two, long enough to cancel one mid-way.
  fx = await whatifFixture(24);
  pool = new WhatifPool({ size: 1, maxQueued: 4 });
  app = await build({
    tokens: { admin: "admin-token-0123456789", viewer: VIEWER },
    plugins: [
      whatifRoutes({
        hub: fx.hub,
        now: () => NOW,
        run: (input, job) => pool.run((lastInput = input), job),
        busy: (pending) => pool.busy(pending),
      }),
    ],
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

after(async () => {
  await app.close();
  await pool.close();
  await fx.close();
});

const post = (body: unknown, o: { stream?: boolean; signal?: AbortSignal } = {}): Promise<Response> =>
  fetch(`${url}/api/v1/clusters/c1/whatif`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${VIEWER}`,
      "content-type": "application/json",
      ...(o.stream ? { accept: "text/event-stream" } : {}),
    },
    body: JSON.stringify(body),
    ...(o.signal ? { signal: o.signal } : {}),
  });

/** Server-sent events as they arrive: [event, data]. */
async function* events(res: Response): AsyncGenerator<[string, unknown]> {
  const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
  assert.ok(reader);
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let at: number;
    while ((at = buf.indexOf("\n\n")) >= 0) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (event && data) yield [event, JSON.parse(data) as unknown];
    }
  }
}

/** Threads of this process (Linux's /proc), undefined elsewhere. */
function osThreads(): number | undefined {
  return existsSync("/proc/self/task") ? readdirSync("/proc/self/task").length : undefined;
}

async function until(cond: () => boolean, ms: number): Promise<number> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > ms) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - t0;
}

describe("what-if replays in worker threads", { timeout: 240_000 }, () => {
  it("answers the body that was a 500 (interruption rate 60, 1 s boots, seed 1) with a result", async () => {
    const res = await post(STORMY);
    assert.equal(res.status, 200, await res.clone().text());
    const r = (await res.json()) as WhatifReportDto;
    assert.equal(r.spotInterruptionRate, 60);
    assert.equal(r.bootDelayMs, 1000);
    assert.ok(r.current.spotInterruptions > 0, `interruptions ${r.current.spotInterruptions}`);
    assert.ok(r.current.nodeClaimsCreated > 2, `NodeClaims ${r.current.nodeClaimsCreated}`);
  });

  it("streams progress with an estimate, then the report", async () => {
    const res = await post(QUICK, { stream: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
    const progress: WhatifProgressDto[] = [];
    let report: WhatifReportDto | undefined;
    for await (const [event, data] of events(res)) {
      if (event === "progress") progress.push(data as WhatifProgressDto);
      if (event === "result") report = data as WhatifReportDto;
    }
    assert.ok(report, "the report came");
    assert.deepEqual(report.candidate.now.workloads["shop/Deployment/api"], {
      onDemand: 2,
      spot: 4,
      pending: 0,
    });
    const running = progress.filter((p) => p.state === "running");
    assert.ok(running.length >= 1, JSON.stringify(progress));
    assert.ok(running.every((p) => p.fraction >= 0 && p.fraction <= 1 && p.etaMs !== undefined));
    const fractions = running.map((p) => p.fraction);
    assert.deepEqual(
      fractions,
      [...fractions].sort((a, b) => a - b),
      "progress only moves forward",
    );
  });

  it("wave whatif draws the progress on stderr and prints the report", async () => {
    const io = captureIo();
    const code = await run(
      [
        "whatif",
        "spot",
        "deployment/shop/api",
        "--threshold",
        "2",
        "--server",
        url,
        "--viewer-token",
        VIEWER,
        "--cluster-id",
        "c1",
        "--spot-interruption-rate",
        "0",
        "--json",
      ],
      io,
    );
    assert.equal(code, 0, io.stderr.join(""));
    const r = JSON.parse(io.stdout.join("")) as WhatifReportDto;
    assert.deepEqual(r.candidate.now.workloads["shop/Deployment/api"], { onDemand: 2, spot: 4, pending: 0 });
    const err = io.stderr.join("");
    assert.match(err, /^replaying \[[#-]{24}\] \d+ %/m);
    assert.equal(
      progressLine({ state: "running", position: 0, fraction: 0.5, elapsedMs: 30_000, etaMs: 75_000 }, 10),
      "replaying [#####-----] 50 % · about 1 min 15 s left",
    );
    assert.equal(
      progressLine({ state: "queued", position: 2, fraction: 0, elapsedMs: 0, etaMs: 9_000 }),
      "what-if queued (2 ahead) · about 9 s left",
    );
  });

  it("frees the worker within 1 s of the client going away", async () => {
    const ac = new AbortController();
    const res = await post({ ...STORMY, seed: 2 }, { stream: true, signal: ac.signal });
    // Wait until the replay is under way in its worker (progress of its own: both threads started).
    for await (const [event, data] of events(res)) {
      const p = data as WhatifProgressDto;
      if (event === "progress" && p.state === "running" && p.fraction > 0) break;
    }
    assert.equal(pool.stats().running, 1);
    assert.equal(pool.stats().threads, 1);
    // The process's OS threads (Linux): the worker and the second thread replaying the candidate.
    const running = osThreads();
    ac.abort();
    const took = await until(() => pool.stats().threads === 0, 5000);
    assert.equal(pool.stats().threads, 0, "the worker thread exited");
    assert.equal(pool.stats().running, 0);
    assert.ok(took < 1000, `worker freed ${took.toFixed(0)} ms after the disconnect`);
    console.log(`# disconnected client: worker thread exited ${took.toFixed(0)} ms later`);
    if (running !== undefined) {
      const gone = await until(() => (osThreads() ?? 0) <= running - 2, 1000);
      assert.ok(
        (osThreads() ?? 0) <= running - 2,
        `${running} → ${osThreads()} threads: the worker's second thread went with it`,
      );
      console.log(`# the worker's second thread gone ${gone.toFixed(0)} ms after the worker's exit`);
    }
    // The pool starts a fresh worker for the next one.
    assert.equal((await post(QUICK)).status, 200);
  });

  it("replays the candidate in a second thread meanwhile: the same report as one after the other", async () => {
    assert.equal((await post({ ...QUICK, seed: 5 })).status, 200);
    const input = lastInput;
    assert.ok(input);
    const sequential = new WhatifPool({ size: 1, parallel: false });
    const parallel = new WhatifPool({ size: 1, parallel: true });
    const [a, b] = await Promise.all([
      sequential.run(input, { key: "c1" }),
      parallel.run(input, { key: "c1" }),
    ]).finally(() => Promise.all([sequential.close(), parallel.close()]));
    assert.deepEqual(b, a);
    assert.ok(b.candidate.nodeClaimsCreated > 0);
    // The second thread's part: the candidate's replay alone, as the worker asks it of its child.
    const w = new Worker(new URL("../../src/sim/whatif-worker.ts", import.meta.url));
    try {
      const replayed = await new Promise<FromWorker & { type: "replayed" | "error" | "result" }>(
        (resolve, reject) => {
          w.on("message", (m: FromWorker) => {
            if (m.type !== "progress") resolve(m);
          });
          w.on("error", reject);
          w.postMessage({ type: "replay", id: 9, input, half: 1 } satisfies ToWorker);
          setTimeout(() => reject(new Error("no answer to a replay message in 60 s")), 60_000).unref();
        },
      );
      assert.ok(replayed.type === "replayed", JSON.stringify(replayed).slice(0, 300));
      assert.deepEqual(replayed.result.timeline, b.candidate.timeline);
      assert.equal(replayed.result.nodeClaimsCreated, b.candidate.nodeClaimsCreated);
    } finally {
      await w.terminate();
    }
  });

  it("a second thread only where a CPU is free for it: with two what-ifs on 3 CPUs, the later one replays on one", async () => {
    assert.equal(secondThread(2, 0), true, "2 CPUs, nothing running: both replays at once");
    assert.equal(secondThread(3, 2), false, "3 CPUs, one what-if on two threads: the next on one");
    assert.equal(secondThread(8, 4), true);
    assert.equal(secondThread(1, 0), true, "one CPU: as fast as one after the other, no worse");
    assert.equal((await post({ ...QUICK, seed: 6 })).status, 200);
    const input = lastInput;
    assert.ok(input);
    const two = new WhatifPool({ size: 2, parallel: true, cpus: 3 });
    try {
      const a = two.run(input, { key: "c1" });
      const b = two.run(input, { key: "c2" });
      assert.deepEqual([two.stats().running, two.stats().replayThreads], [2, 3]);
      const [ra, rb] = await Promise.all([a, b]);
      assert.deepEqual(rb, ra, "the same report either way");
      assert.equal(two.stats().replayThreads, 0);
    } finally {
      await two.close();
    }
  });

  it("20 concurrent what-ifs: the queue check comes before any input is gathered (issue 42)", async () => {
    // Each admitted what-if gathers its input (a day of pods per workload from the store) on
    // core's main thread: count the gatherings. The store answers once all 20 have arrived (a
    // big cluster's day takes seconds to read, so a burst overlaps). Before the fix all 20
    // gathered, and only then did the queue refuse 15.
    const store = fx.hub.store;
    const workloadPods = store.workloadPods.bind(store);
    let gatherings = 0;
    let release = (): void => undefined;
    const slowStore = new Promise<void>((r) => (release = r));
    store.workloadPods = async (range) => {
      gatherings++;
      await slowStore;
      return workloadPods(range);
    };
    const healthz: number[] = [];
    const aborts = Array.from({ length: 20 }, () => new AbortController());
    try {
      const refused: number[] = [];
      const answers = aborts.map((ac, i) =>
        post({ ...STORMY, seed: 200 + i }, { signal: ac.signal }).then(
          async (res) => {
            if (res.status === 429) refused.push(i);
            await res.text();
            return res.status;
          },
          () => 0, // aborted below
        ),
      );
      // Every request is either refused or gathering; /healthz meanwhile.
      for (let i = 0; i < 200 && refused.length + gatherings < 20; i++) {
        const t0 = performance.now();
        await (await fetch(`${url}/healthz`)).text();
        healthz.push(performance.now() - t0);
      }
      assert.ok(gatherings <= 4, `${gatherings} inputs gathered for 20 concurrent what-ifs`);
      assert.equal(refused.length, 20 - gatherings, "the others refused at once (429)");
      release();
      for (const ac of aborts) ac.abort();
      await Promise.all(answers);
    } finally {
      release();
      store.workloadPods = workloadPods;
    }
    const sorted = [...healthz].sort((a, b) => a - b);
    console.log(
      `# ${gatherings} inputs gathered for 20 what-ifs; /healthz max ${(sorted.at(-1) ?? 0).toFixed(1)} ms`,
    );
    assert.ok((sorted.at(-1) ?? 0) < 1_000, "/healthz answered within a second throughout");
  });

  it("20 concurrent what-ifs: the queue bound answers 429 with Retry-After, /healthz stays fast", async () => {
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const healthz: number[] = [];
    const polling = { on: true };
    const poller = (async () => {
      while (polling.on) {
        const t0 = performance.now();
        const r = await fetch(`${url}/healthz`);
        await r.text();
        healthz.push(performance.now() - t0);
        rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await post({ ...STORMY, seed: 100 + i });
        return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
      }),
    );
    polling.on = false;
    await poller;
    const by = (s: number) => answers.filter((a) => a.status === s);
    // One replay per cluster at a time, four waiting: five answered, fifteen refused (one more
    // may get in if a replay ends before the last request arrives).
    assert.equal(by(200).length + by(429).length, 20, JSON.stringify(answers.map((a) => a.status)));
    assert.ok(by(429).length >= 13, JSON.stringify(answers.map((a) => a.status)));
    for (const a of by(429)) {
      assert.ok(Number(a.retryAfter) >= 1, `Retry-After ${a.retryAfter}`);
      assert.match(a.body, /queue is full; try again in \d+ s/);
    }
    const sorted = [...healthz].sort((a, b) => a - b);
    const p99 = percentile(sorted, 99);
    const added = (rssPeak - rssBefore) / 2 ** 20;
    console.log(
      `# 20 concurrent what-ifs: 200 ×${by(200).length}, 429 ×${by(429).length}; /healthz ${sorted.length} probes, ` +
        `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${(sorted.at(-1) ?? 0).toFixed(1)} ms; ` +
        `RSS ${(rssBefore / 2 ** 20).toFixed(0)} → peak ${(rssPeak / 2 ** 20).toFixed(0)} MiB (+${added.toFixed(0)})`,
    );
    assert.ok(sorted.length >= 20, `${sorted.length} probes`);
    assert.ok(p99 < 50, `/healthz p99 ${p99.toFixed(1)} ms`);
    assert.ok(added < 600, `RSS added ${added.toFixed(0)} MiB`);
  });
});
