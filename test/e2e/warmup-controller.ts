// A Wave warmup controller in a process of its own, for warmup.e2e.test.ts: the test SIGKILLs it
// mid-warmup, like a crashed core, and starts a new one. It sees only the test's NodePool (the
// shared rig holds other engineers' pools). Events go to stdout as JSON lines, logs to stderr.
//
// env: WAVE_E2E_KUBECONFIG  kubeconfig of the rig
//      WAVE_E2E_NAMESPACE   Wave's namespace (warmup and pull pods live there)
//      WAVE_E2E_POOL        the only NodePool this controller sees
//      WAVE_E2E_POLICY      path of a JSON WarmupPolicy for that pool, re-read on every reconcile
//                           so the test can change it between warmups
import { readFileSync } from "node:fs";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import { realClock } from "../../src/shared/clock.ts";
import { createLogger } from "../../src/shared/log.ts";
import { WarmupController } from "../../src/warmup/controller.ts";
import { parsePolicy } from "../../src/policy/validate-warmup.ts";
import type { WarmupPolicy } from "../../src/policy/warmup.ts";
import { runController } from "../../src/warmup/run.ts";
import { InformerSource } from "../../src/agent/informer-source.ts";
import { ClusterState } from "../../src/state/cluster.ts";
import { warmupTriggers } from "../../src/warmup/triggers.ts";
import { scopedView } from "../../src/warmup/view.ts";

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === "") throw new Error(`warmup-controller: ${name} is not set`);
  return v;
}

const kubeconfig = env("WAVE_E2E_KUBECONFIG");
const namespace = env("WAVE_E2E_NAMESPACE");
const pool = env("WAVE_E2E_POOL");
const policyFile = env("WAVE_E2E_POLICY");

function policy(): WarmupPolicy {
  const r = parsePolicy(JSON.parse(readFileSync(policyFile, "utf8")) as unknown);
  if (!r.ok) throw new Error(`warmup-controller: bad policy in ${policyFile}: ${r.errors.join("; ")}`);
  return r.policy;
}

const client = clientFromKubeconfig(kubeconfig);
const log = createLogger({ base: { pid: process.pid } });
const stop = new AbortController();
process.once("SIGTERM", () => stop.abort());
process.once("SIGINT", () => stop.abort());

// The state it reads is the agent's own projection (ADR 0021): the agent's InformerSource fills it
// as `wave agent` does (pending pods whole, bound pods as warmup reads them); only the test's pool.
const state = new ClusterState();
const source = await new InformerSource({ client, clock: realClock, log, state }).open(stop.signal);
// What the agent would forward to core: nobody here to send it to.
void (async () => {
  for await (const _ of source.changes);
})();
const view = scopedView(state, pool);
const controller = new WarmupController({
  client,
  view,
  clock: realClock,
  namespace,
  policyOf: (p) => {
    if (p !== pool) throw new Error(`warmup-controller: asked about pool ${p}, sees only ${pool}`);
    return policy();
  },
  log,
  onEvent: (e) => process.stdout.write(JSON.stringify(e) + "\n"),
  // Short requeues: the rig's nodes register in seconds, and the test waits on each step.
  idleRequeueMs: 2_000,
  activeRequeueMs: 1_000,
});

const triggers = warmupTriggers(view);
await runController(controller, {
  clock: realClock,
  signal: stop.signal,
  log,
  triggers: (poke) => triggers((p) => p === pool && poke(p)),
});
