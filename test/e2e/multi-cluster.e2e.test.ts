// Two clusters against one core (issue 17): two agents with different cluster ids and two
// webhooks, each pulling its own cluster's spot policies from core, the way one central core
// serves several clusters' Helm releases. Both agents watch the one rig, so the test makes their
// data tell apart by time: cluster east's agent runs alone while pool A is scaled up, sampled into
// history and torn down; then west's agent joins and pool B is scaled up, seen by both.
//
//   - each cluster is listed, connected, with its own history (west's too: core samples every
//     cluster it serves, not only its own --cluster-id);
//   - east's lifecycle has pool A's NodeClaims from launch to termination; west has none of them
//     (it never saw them) but has pool B's, complete — as east has;
//   - east's history has pool A's nodes; west's has no point of pool A with nodes;
//   - a spot policy set for east goes through east's agent as a SpotPolicy resource and east's
//     webhook places the pod (both "clusters" share the rig's apiserver, so the resource is seen by
//     both: per-cluster policies are kept apart by each cluster's own apiserver, issue 31);
//     warmup stats are per cluster;
//   - each agent has a credential of its own (token and client certificate) bound to its cluster
//     id in core's credentials file, and west's credential cannot stream east.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { Agent as HttpsAgent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { freePorts } from "../../hack/rig/lib.ts";
import { defaultRetention } from "../../src/core/history/downsample.ts";
import type { AdmissionReviewResponse, JsonPatchOp } from "../../src/webhook/admission.ts";
import { httpsRequest, reviewFor } from "../../src/webhook/test-helpers.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../support/pki.ts";
import { stopWave, type WaveProcess } from "../support/wave-process.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubectl,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";
import {
  applyPool,
  call,
  deployment,
  isTrue,
  poolClaims,
  startComponent,
  stopAll,
  tokens,
  waitApiUp,
  type EventRow,
  type Series,
} from "./wave-rig.ts";

const EAST = "e2e-mc-east";
const WEST = "e2e-mc-west";
const STEP_MS = defaultRetention.tiers[0]?.stepMs ?? 60_000;

let ns = "";
/** Core's and the webhooks' namespace: Wave's own, so never the workloads' (no spot policy may target it). */
let waveNs = "";
let poolA = "";
let poolB = "";
let work = "";
/**
 * Per cluster: the agent's namespace (its Lease, its warmup pods and marks, its remembered warmup
 * policies). Both "clusters" are the one rig, so each agent's warmup gets a namespace of its own,
 * as it would have in a cluster of its own.
 */
const agentNs: Record<string, string> = {};
/** Per cluster: its agent's own token (and client certificate, in work/agent-<id>). */
const agentTokens: Record<string, string> = {
  [EAST]: randomBytes(18).toString("base64url"),
  [WEST]: randomBytes(18).toString("base64url"),
};
const procs: WaveProcess[] = [];

before(async () => {
  await requireRig();
  ns = await createNamespace("multi");
  waveNs = await createNamespace("multi-wave");
  poolA = `${ns}-a`;
  poolB = `${ns}-b`;
  for (const id of [EAST, WEST]) agentNs[id] = await createNamespace(`multi-${id.slice(-4)}`);
  await applyPool(poolA);
  await applyPool(poolB);
  work = mkdtempSync(join(tmpdir(), "wave-multi-"));
  makePki(work, [
    { dir: "grpc", cn: "wave-core", ext: SERVER_EXT },
    { dir: `agent-${EAST}`, cn: `wave-agent-${EAST}`, ext: CLIENT_EXT },
    { dir: `agent-${WEST}`, cn: `wave-agent-${WEST}`, ext: CLIENT_EXT },
    { dir: "webhook", cn: "wave-webhook", ext: SERVER_EXT },
  ]);
  // Core's credentials file: each cluster's agent, by token and certificate identity.
  writeFileSync(
    join(work, "agents.json"),
    JSON.stringify(
      [EAST, WEST].map((id) => ({
        name: `agent-${id}`,
        token: agentTokens[id],
        identity: `wave-agent-${id}`,
        clusters: [id],
      })),
    ),
  );
});

after(async () => {
  await stopAll(procs, 5_000);
  if (ns !== "") await deleteNamespace(ns).catch(() => undefined);
  if (waveNs !== "") await deleteNamespace(waveNs).catch(() => undefined);
  for (const n of Object.values(agentNs)) await deleteNamespace(n).catch(() => undefined);
  for (const p of [poolA, poolB])
    if (p !== "") await remove("nodepools.karpenter.sh", p).catch(() => undefined);
  if (work !== "") rmSync(work, { recursive: true, force: true });
});

test(
  "multi-cluster: two agents and two webhooks against one core; history, lifecycle, warmup stats and policies per cluster",
  { timeout: 420_000 },
  (t) => withRigLogsOnFailure(() => scenario(t)),
);

/** A dry-run AdmissionReview of a pod of Deployment `app` in `ns`. */
function podReview(app: string, uid: number): string {
  const hash = "6c9f8d7b5d";
  const review = reviewFor("deployment-pod-generatename", uid, (x) => {
    const req = x.request as unknown as { namespace: string; dryRun: boolean; object: KubeObject };
    req.namespace = ns;
    req.dryRun = true;
    const meta = req.object.metadata as KubeObject["metadata"] & {
      generateName?: string;
      ownerReferences?: { name: string }[];
    };
    meta.namespace = ns;
    meta.generateName = `${app}-${hash}-`;
    meta.labels = { app, "pod-template-hash": hash };
    for (const o of meta.ownerReferences ?? []) o.name = `${app}-${hash}`;
  });
  return JSON.stringify(review);
}

/** The capacity-type affinity the webhook's answer puts on the pod, if any. */
function placement(body: string): string | undefined {
  const r = (JSON.parse(body) as AdmissionReviewResponse).response;
  if (r.patch === undefined) return undefined;
  const ops = JSON.parse(Buffer.from(r.patch, "base64").toString("utf8")) as JsonPatchOp[];
  const text = JSON.stringify(ops);
  return text.includes("karpenter.sh/capacity-type") || text.includes("wave.sh/capacity-assignment")
    ? text
    : undefined;
}

async function scenario(t: TestContext): Promise<void> {
  const say = (msg: string): void => t.diagnostic(msg);
  const [api = 0, grpc = 0, mEast = 0, mWest = 0, hEast = 0, mIntruder = 0] = await freePorts(6);
  const core = startComponent(work, "core-0", "core", {
    WAVE_NAMESPACE: waveNs,
    WAVE_CLUSTER_ID: EAST,
    WAVE_PORT: String(api),
    WAVE_GRPC_PORT: String(grpc),
    WAVE_GRPC_TLS_DIR: join(work, "grpc"),
    WAVE_AGENT_CREDENTIALS: join(work, "agents.json"),
    WAVE_ADMIN_TOKEN: tokens.admin,
    WAVE_VIEWER_TOKEN: tokens.viewer,
  });
  procs.push(core);
  /** The agent of `cluster`, with the credential of `as` (its own unless a test says otherwise). */
  const agent = (cluster: string, metrics: number, as = cluster): WaveProcess => {
    const name = as === cluster ? `agent-${cluster}` : `agent-${as}-as-${cluster}`;
    const p = startComponent(work, name, "agent", {
      WAVE_NAMESPACE: agentNs[cluster] ?? ns,
      WAVE_CLUSTER_ID: cluster,
      // Each cluster's agent holds its own Lease (in its own cluster it would be the only one).
      WAVE_AGENT_LEASE: `wave-${name}`,
      WAVE_CORE_ADDRESS: `https://127.0.0.1:${grpc}`,
      WAVE_AGENT_TLS_DIR: join(work, `agent-${as}`),
      WAVE_AGENT_TOKEN: agentTokens[as] ?? "",
      WAVE_METRICS_PORT: String(metrics),
    });
    procs.push(p);
    return p;
  };
  const webhook = (cluster: string, port: number): WaveProcess => {
    const p = startComponent(work, `webhook-${cluster}`, "webhook", {
      WAVE_NAMESPACE: waveNs,
      WAVE_CLUSTER_ID: cluster,
      WAVE_SPOT_POLICIES_URL: `http://127.0.0.1:${api}/api/v1/clusters/${cluster}/policies/spot`,
      WAVE_VIEWER_TOKEN: tokens.viewer,
      WAVE_WEBHOOK_TLS_DIR: join(work, "webhook"),
      WAVE_WEBHOOK_PORT: String(port),
    });
    procs.push(p);
    return p;
  };
  const connected = async (id: string): Promise<boolean> =>
    (await call<{ id: string; connected: boolean }[]>(api, "/api/v1/clusters")).body.find((c) => c.id === id)
      ?.connected === true;
  const events = async (id: string, pool: string): Promise<EventRow[]> =>
    (await call<EventRow[]>(api, `/api/v1/clusters/${id}/events?pool=${pool}&from=0&limit=1000`)).body;
  const series = async (id: string, pool?: string): Promise<Series> =>
    (await call<Series>(api, `/api/v1/clusters/${id}/series?window=3600${pool ? `&pool=${pool}` : ""}`)).body;
  const phases = (rows: EventRow[]): Set<string> => new Set(rows.map((e) => `${e.nodeClaim}/${e.phase}`));

  try {
    await waitApiUp(core, api);
    agent(EAST, mEast);
    await waitFor(`${EAST} connected`, () => connected(EAST), { timeoutMs: 60_000, intervalMs: 250 });

    // ---- east alone: pool A up, into history, then torn down ----
    await apply(deployment("web-a", ns, poolA, 2));
    const claimsA = await waitFor(
      "pool A's 2 NodeClaims initialized",
      async () => {
        const c = (await poolClaims(poolA)).filter((x) => isTrue(x, "Initialized"));
        return c.length === 2 ? c.map((x) => x.metadata.name).sort() : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await waitFor(
      `a history point of pool A with its nodes in ${EAST}`,
      async () => (await series(EAST, poolA)).points.some((p) => p.nodes === 2),
      { timeoutMs: STEP_MS + 30_000, intervalMs: 1_000 },
    );
    await kubectl(["scale", "deployment", "web-a", "--replicas=0", "-n", ns]);
    for (const c of claimsA) await remove("nodeclaims.karpenter.sh", c);
    await waitFor(
      `pool A's NodeClaims gone and Terminated in ${EAST}`,
      async () => {
        if ((await poolClaims(poolA)).length > 0) return false;
        const has = phases(await events(EAST, poolA));
        return claimsA.every((c) => has.has(`${c}/Launched`) && has.has(`${c}/Terminated`));
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    say(`${EAST} alone: pool A's ${claimsA.join(", ")} launched, sampled and terminated`);

    // ---- west joins; pool B up, seen by both ----
    agent(WEST, mWest);
    await waitFor(`${WEST} connected`, () => connected(WEST), { timeoutMs: 60_000, intervalMs: 250 });
    // West's credential is bound to west: an agent holding it cannot stream (or take over) east.
    const intruder = agent(EAST, mIntruder, WEST);
    await waitFor(
      `west's credential refused for ${EAST}`,
      () => Promise.resolve(intruder.output.some((l) => l.includes("PermissionDenied") && l.includes(EAST))),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.equal(await stopWave(intruder, 5_000), 0, "the refused agent stops cleanly");
    assert.equal(await connected(EAST), true, `${EAST} still streamed by its own agent`);
    say(`west's credential refused for ${EAST}; ${EAST} untouched`);
    await apply(deployment("web-b", ns, poolB, 1));
    const claimsB = await waitFor(
      "pool B's NodeClaim initialized",
      async () => {
        const c = (await poolClaims(poolB)).filter((x) => isTrue(x, "Initialized"));
        return c.length === 1 ? c.map((x) => x.metadata.name) : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    for (const id of [EAST, WEST]) {
      await waitFor(
        `pool B's lifecycle complete in ${id}`,
        async () => {
          const has = phases(await events(id, poolB));
          return claimsB.every((c) =>
            ["Launched", "Registered", "Initialized"].every((p) => has.has(`${c}/${p}`)),
          );
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
    }
    await waitFor(
      `a history point of pool B in ${WEST} (core samples every cluster it serves)`,
      async () => (await series(WEST, poolB)).points.some((p) => p.nodes === 1),
      { timeoutMs: STEP_MS + 30_000, intervalMs: 1_000 },
    );

    // ---- each cluster's own data ----
    const clusters = (await call<{ id: string; connected: boolean }[]>(api, "/api/v1/clusters")).body;
    assert.deepEqual(
      clusters.filter((c) => c.id === EAST || c.id === WEST).map((c) => [c.id, c.connected]),
      [
        [EAST, true],
        [WEST, true],
      ],
    );
    const eastA = await events(EAST, poolA);
    const westA = await events(WEST, poolA);
    assert.ok(eastA.length >= 2 * 4, `${EAST} has pool A's rows (${eastA.length})`);
    assert.deepEqual(westA, [], `${WEST} never saw pool A's NodeClaims`);
    const eastHistA = (await series(EAST, poolA)).points.filter((p) => p.nodes > 0);
    const westHistA = (await series(WEST, poolA)).points.filter((p) => p.nodes > 0);
    assert.ok(eastHistA.length >= 1, `${EAST}'s history has pool A's nodes`);
    assert.deepEqual(westHistA, [], `${WEST}'s history has no point of pool A`);
    const westAll = await series(WEST);
    assert.ok(
      westAll.points.every((p) => p.t >= Date.now() - 10 * STEP_MS),
      `${WEST}'s history starts when its agent joined`,
    );
    say(
      `lifecycle rows of pool A: ${EAST} ${eastA.length}, ${WEST} ${westA.length}; of pool B: ${EAST} ${(await events(EAST, poolB)).length}, ` +
        `${WEST} ${(await events(WEST, poolB)).length}; history points of pool A with nodes: ${EAST} ${eastHistA.length}, ${WEST} ${westHistA.length}; ` +
        `${WEST}'s points in all: ${westAll.points.length}`,
    );

    // ---- policies: set for east, applied by east's agent as a SpotPolicy resource ----
    // Policies are resources of the cluster they act in (issue 31): separate clusters keep them
    // apart in their own apiservers. These two "clusters" share the rig's one apiserver, so both
    // agents see the resource; what is shown here is the path — through east's agent to east's
    // webhook (ADR 0018).
    const spotPath = `/policies/spot/Deployment/${ns}/web-b`;
    await call(api, `/api/v1/clusters/${EAST}${spotPath}`, {
      method: "PUT",
      body: { threshold: 0, strategy: "Require" },
    });
    webhook(EAST, hEast);
    const tls = new HttpsAgent({ keepAlive: false, ca: readFileSync(join(work, "ca", "ca.crt"), "utf8") });
    let uid = 1;
    const answer = async (port: number): Promise<string | undefined> => {
      const res = await httpsRequest(tls, port, podReview("web-b", uid++), { path: "/mutate" });
      assert.equal(res.status, 200, res.body);
      return placement(res.body);
    };
    const eastPatch = await waitFor(
      `${EAST}'s webhook to place the pod (its policy pulled)`,
      async () => answer(hEast).catch(() => undefined),
      { timeoutMs: 60_000, intervalMs: 1_000 },
    );
    tls.destroy();
    const spot = await get("spotpolicies.wave.sh", "web-b", ns);
    assert.ok(spot, "east's edit is a SpotPolicy resource in the workload's namespace");
    assert.deepEqual(
      await waitFor(
        `${EAST}'s API lists the policy`,
        async () => {
          const names = (
            await call<{ policies: { workload: { namespace: string; name: string } }[] }>(
              api,
              `/api/v1/clusters/${EAST}/policies/spot`,
            )
          ).body.policies
            // The rig's apiserver is shared with the other e2e lane: its SpotPolicies show here too.
            .filter((p) => p.workload.namespace === ns)
            .map((p) => p.workload.name);
          return names.length > 0 ? names : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 1_000 },
      ),
      ["web-b"],
    );
    // Warmup stats are the cluster's own (no warmup ran in either: none counted in either).
    for (const id of [EAST, WEST]) {
      const o = await call<{ warmup: { hits: number; misses: number } }>(
        api,
        `/api/v1/clusters/${id}/overview`,
      );
      assert.deepEqual([o.body.warmup.hits, o.body.warmup.misses], [0, 0], `${id}'s warmup stats`);
    }
    say(`${EAST}'s webhook placed web-b's pod (${eastPatch.slice(0, 80)}…)`);

    const ends = await stopAll(procs);
    say(`stopped: ${ends.join(", ")}`);
  } catch (err) {
    for (const p of procs) say(`${p.name} output (last lines):\n${p.output.slice(-30).join("\n")}`);
    throw err;
  }
}
