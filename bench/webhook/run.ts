// AdmissionReview throughput and latency: the Wave webhook vs a bare node:https server returning
// a fixed patch, measured in the same run on loopback with keep-alive connections.
//   npm run bench:webhook            (add -- --strict to exit 1 when a goal is missed)
// Phases, per server: warm-up; a paced 1,000 rps phase (p50/p99); a closed-loop max-throughput
// phase. Goals: Wave ≥ 0.8× the baseline's max throughput, and p99 ≤ 2 ms at 1,000 rps.
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { reviewFor } from "../../src/webhook/test-helpers.ts";
import type { WorkerInput } from "./server-worker.ts";

const args = new Set(process.argv.slice(2));
const STRICT = args.has("--strict");
const PACED_RPS = 1000;
const PACED_SECONDS = 3;
const MAX_SECONDS = 3;
const ROUNDS = 3;
const MAX_CONCURRENCY = 32;
const WORKLOADS = 50;
const THRESHOLD = 5;

interface Phase {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

// Pods of many Deployments (a cluster, not one hot key); every body is a real AdmissionReview.
const bodies = Array.from({ length: 2000 }, (_, i) =>
  JSON.stringify(
    reviewFor("deployment-pod-generatename", i, (r) => {
      const pod = r.request.object as {
        metadata: {
          generateName: string;
          ownerReferences: { name: string }[];
          labels: Record<string, string>;
        };
      };
      const rs = `web${i % WORKLOADS}-7d9c8b6f5d`;
      pod.metadata.generateName = `${rs}-`;
      const owner = pod.metadata.ownerReferences[0];
      if (owner) owner.name = rs;
    }),
  ),
);

function post(agent: Agent, port: number, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: "127.0.0.1",
        port,
        servername: "localhost",
        path: "/mutate",
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        res.on("data", () => undefined);
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

function summarize(latencies: number[], errors: number, seconds: number): Phase {
  const sorted = latencies.sort((a, b) => a - b);
  return {
    requests: sorted.length,
    errors,
    seconds,
    rps: sorted.length / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

async function one(agent: Agent, port: number, i: number, latencies: number[]): Promise<boolean> {
  const t = performance.now();
  try {
    const status = await post(agent, port, bodies[i % bodies.length] ?? "");
    latencies.push(performance.now() - t);
    return status === 200;
  } catch {
    return false;
  }
}

/** Open loop at a fixed rate: request i is sent at start + i/rate, whatever came back. */
async function paced(agent: Agent, port: number, rps: number, seconds: number): Promise<Phase> {
  const latencies: number[] = [];
  let errors = 0;
  const total = rps * seconds;
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rps;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inflight.push(
      one(agent, port, i, latencies).then((ok) => {
        if (!ok) errors++;
      }),
    );
  }
  await Promise.all(inflight);
  return summarize(latencies, errors, (performance.now() - start) / 1000);
}

/** Closed loop: `concurrency` clients send back to back for `seconds`. */
async function maxThroughput(
  agent: Agent,
  port: number,
  concurrency: number,
  seconds: number,
): Promise<Phase> {
  const latencies: number[] = [];
  let errors = 0;
  let i = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) if (!(await one(agent, port, i++, latencies))) errors++;
    }),
  );
  return summarize(latencies, errors, (performance.now() - start) / 1000);
}

async function startServer(input: WorkerInput): Promise<{ port: number; stop: () => Promise<void> }> {
  const worker = new Worker(new URL("./server-worker.ts", import.meta.url), { workerData: input });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("message", (m: { port: number }) => resolve(m.port));
    worker.once("error", reject);
  });
  return {
    port,
    stop: async () => {
      const exited = new Promise((r) => worker.once("exit", r));
      worker.postMessage("close");
      await exited;
    },
  };
}

const merge = (phases: Phase[]): Phase => {
  const requests = phases.reduce((a, p) => a + p.requests, 0);
  const seconds = phases.reduce((a, p) => a + p.seconds, 0);
  return {
    requests,
    errors: phases.reduce((a, p) => a + p.errors, 0),
    seconds,
    rps: requests / seconds,
    // Percentiles of the merged rounds: the worst round's (conservative).
    p50: Math.max(...phases.map((p) => p.p50)),
    p99: Math.max(...phases.map((p) => p.p99)),
  };
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

const dir = await mkdtemp(join(tmpdir(), "wave-bench-"));
try {
  const certs = await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"] });
  // Both servers run side by side in their own threads and are loaded in alternating short
  // rounds, so drift in the machine's load hits both alike; the ratio is the median of rounds.
  const common = {
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    workloads: WORKLOADS,
    threshold: THRESHOLD,
  };
  const servers = {
    baseline: await startServer({ mode: "baseline", ...common }),
    wave: await startServer({ mode: "wave", ...common }),
  };
  const agents = {
    baseline: new Agent({ keepAlive: true, maxSockets: MAX_CONCURRENCY, ca: certs.caPem }),
    wave: new Agent({ keepAlive: true, maxSockets: MAX_CONCURRENCY, ca: certs.caPem }),
  };
  const modes = ["baseline", "wave"] as const;
  const results = {
    baseline: { paced: [] as Phase[], max: [] as Phase[] },
    wave: { paced: [] as Phase[], max: [] as Phase[] },
  };
  try {
    for (const m of modes) await maxThroughput(agents[m], servers[m].port, 8, 0.5); // JIT, TLS, ledgers
    for (let round = 0; round < ROUNDS; round++) {
      for (const m of round % 2 === 0 ? modes : [...modes].reverse()) {
        results[m].paced.push(await paced(agents[m], servers[m].port, PACED_RPS, PACED_SECONDS / ROUNDS));
        results[m].max.push(
          await maxThroughput(agents[m], servers[m].port, MAX_CONCURRENCY, MAX_SECONDS / ROUNDS),
        );
      }
    }
  } finally {
    for (const m of modes) {
      agents[m].destroy();
      await servers[m].stop();
    }
  }
  const baseline = { paced: merge(results.baseline.paced), max: merge(results.baseline.max) };
  const wave = { paced: merge(results.wave.paced), max: merge(results.wave.max) };
  const roundRatios = results.wave.max.map((w, k) => w.rps / (results.baseline.max[k]?.rps ?? NaN));
  const row = (name: string, p: Phase): string =>
    `${name.padEnd(26)} ${p.rps.toFixed(0).padStart(7)} rps  p50 ${p.p50.toFixed(2).padStart(6)} ms  p99 ${p.p99.toFixed(2).padStart(6)} ms  (${p.requests} req, ${p.errors} errors)`;
  console.log(
    `AdmissionReview benchmark — ${WORKLOADS} Deployments, threshold ${THRESHOLD}, keep-alive HTTPS on loopback`,
  );
  console.log(row(`baseline @${PACED_RPS} rps`, baseline.paced));
  console.log(row(`wave     @${PACED_RPS} rps`, wave.paced));
  console.log(row(`baseline max (c=${MAX_CONCURRENCY})`, baseline.max));
  console.log(row(`wave     max (c=${MAX_CONCURRENCY})`, wave.max));
  const ratio = median(roundRatios);
  const throughputOk = ratio >= 0.8;
  // An open-loop test means something only if the offered rate was sustained: on a saturated
  // machine even the bare server falls behind and queueing dominates every percentile.
  const sustained = baseline.paced.rps >= 0.95 * PACED_RPS && baseline.paced.p99 <= 20;
  const latencyOk = !sustained || wave.paced.p99 <= 2;
  const errorsOk = wave.paced.errors + wave.max.errors === 0;
  console.log(
    `throughput ratio wave/baseline: ${ratio.toFixed(2)}× median of ${ROUNDS} rounds [${roundRatios.map((r) => r.toFixed(2)).join(" ")}] (goal ≥ 0.80×) ${throughputOk ? "ok" : "MISSED"}`,
  );
  if (sustained)
    console.log(
      `p99 at ${PACED_RPS} rps: ${wave.paced.p99.toFixed(2)} ms (goal ≤ 2 ms; baseline ${baseline.paced.p99.toFixed(2)} ms) ${latencyOk ? "ok" : "MISSED"}`,
    );
  else
    console.log(
      `p99 at ${PACED_RPS} rps: not assessable — the bare baseline itself sustained only ${baseline.paced.rps.toFixed(0)} rps here (machine saturated); rerun on an idle machine`,
    );
  console.log(`errors: ${wave.paced.errors + wave.max.errors} ${errorsOk ? "ok" : "MISSED"}`);
  if (STRICT && !(throughputOk && latencyOk && errorsOk)) process.exitCode = 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
