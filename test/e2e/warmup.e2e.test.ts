// Node warmup acceptance on the real rig (Karpenter + KWOK). On a NodePool of its own whose
// KWOKNodeClass registers nodes 30 s after launch:
//   cold     a pod that needs a new node, no warmup: pending → Running ≥ the registration delay;
//   warm     Wave's warmup controller (a process of its own) sees that the pool's largest pod fits
//            no Ready node, parks a warmup pod, Karpenter launches a node for it, the node gets
//            do-not-disrupt and the workload's images are pre-pulled onto it (pull pods, all at
//            once); the next real pod preempts the warmup pod: pending → Running in about a
//            second (hit → protection removed, the node is consolidated once the pod goes);
//   restart  the controller is SIGKILLed while its second warmup waits for a node; a new process
//            adopts it (no duplicate), protects and pre-pulls the node, and is SIGKILLed in turn;
//            a third enforces the TTL: the node keeps do-not-disrupt until the deadline, then
//            loses it (miss), Karpenter consolidates it, and no Wave pod or mark is left.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { after, before, test, type TestContext } from "node:test";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import type { ClientNodeKube } from "../../src/kube/clientnode/client.ts";
import type { Node, Pod } from "../../src/objects/kube.ts";
import { isNotFound } from "../../src/kube/port.ts";
import { DO_NOT_DISRUPT_ANNOTATION, NODE_POOL_LABEL, type NodeClaim } from "../../src/objects/karpenter.ts";
import { realClock } from "../../src/shared/clock.ts";
import { WarmupController } from "../../src/warmup/controller.ts";
import {
  DEADLINE_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_ANNOTATION,
  DO_NOT_DISRUPT_OWNER_VALUE,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PREPULL_IMAGE_HASH_LABEL,
  PREPULL_LABEL,
  WARMUP_LABEL,
  WARMUP_POOL_LABEL,
} from "../../src/objects/wave.ts";
import { imageHash } from "../../src/warmup/manifests.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../../src/policy/warmup.ts";
import { runController } from "../../src/warmup/run.ts";
import type { WarmupEvent } from "../../src/warmup/stats.ts";
import { followCluster } from "../../src/state/follow.ts";
import type { NodeListDto, WarmupViewDto } from "../../src/dashboard/dto.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import { chromium } from "playwright-core";
import { open as openPage, warmupAgrees, type Site } from "./console-pages.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubeconfigPath,
  kubectl,
  list,
  remove,
  requireRig,
  sleep,
  waitFor,
  withRigLogsOnFailure,
  type KubeList,
} from "./harness.ts";
import { applyTaintedPool, FOUR_VCPU } from "./pools.ts";

const REGISTRATION_DELAY_S = 30;
const POOL_LABEL = "wave.dev/e2e-pool";
const PREPULLED = "wave.sh/prepulled";
// KWOK never pulls or runs images: any names work, and they are what the pull pods must carry.
const IMAGES = ["example.test/wave-e2e/app:1.4.2", "example.test/wave-e2e/sidecar:0.9"];

let ns = "";
let pool = "";
let client: ClientNodeKube;

async function applyPoolAndClass(): Promise<void> {
  await apply({
    apiVersion: "karpenter.kwok.sh/v1alpha1",
    kind: "KWOKNodeClass",
    metadata: { name: pool },
    spec: { nodeRegistrationDelay: `${REGISTRATION_DELAY_S}s` },
  });
  await applyTaintedPool(pool, {
    nodeClass: pool,
    // 4-vCPU nodes only, so a second workload pod never fits beside the first (a cheap 8-vCPU
    // spot offering would have room).
    requirements: [FOUR_VCPU],
    disruption: {
      consolidationPolicy: "WhenEmptyOrUnderutilized",
      consolidateAfter: "10s",
      budgets: [{ nodes: "100%" }],
    },
  });
}

/** A workload pod of the pool: 3 of a 4-vCPU node, so a second one never fits beside it. */
function workloadPod(name: string): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels: { app: "warmup-e2e" } },
    spec: {
      nodeSelector: { [POOL_LABEL]: pool },
      tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
      terminationGracePeriodSeconds: 0,
      containers: [
        { name: "app", image: IMAGES[0] ?? "", resources: { requests: { cpu: "2500m", memory: "1Gi" } } },
        {
          name: "sidecar",
          image: IMAGES[1] ?? "",
          resources: { requests: { cpu: "500m", memory: "256Mi" } },
        },
      ],
    },
  };
}

/** Creates the pod and returns its pending → Running time in seconds (polled every 200 ms). */
async function createAndTimeToRunning(pod: Pod): Promise<{ seconds: number; pod: Pod }> {
  const t0 = Date.now();
  await client.create("Pod", pod, { namespace: ns });
  const running = await waitFor(
    `pod ${pod.metadata.name ?? ""} Running`,
    async () => {
      const p = await client.get("Pod", pod.metadata.name ?? "", ns);
      return p.status?.phase === "Running" && p.spec.nodeName !== undefined ? p : undefined;
    },
    { timeoutMs: 150_000, intervalMs: 200 },
  );
  return { seconds: (Date.now() - t0) / 1000, pod: running };
}

const wavePods = async (label: string): Promise<Pod[]> =>
  (await client.list("Pod", { namespace: ns, labelSelector: `${label}=true` })).items.filter(
    (p) => p.metadata.deletionTimestamp === undefined,
  );

async function claimOfNode(node: string): Promise<NodeClaim | undefined> {
  return (await client.list("NodeClaim")).items.find((c) => c.status?.nodeName === node);
}

const annotations = (o: { metadata: { annotations?: Record<string, string> } } | undefined) =>
  o?.metadata.annotations ?? {};

async function protectedByWave(node: string): Promise<{ node: boolean; claim: boolean }> {
  const n = await client.get("Node", node).catch(() => undefined);
  const c = await claimOfNode(node);
  const marked = (a: Record<string, string>): boolean =>
    a[DO_NOT_DISRUPT_ANNOTATION] === "true" &&
    a[DO_NOT_DISRUPT_OWNER_ANNOTATION] === DO_NOT_DISRUPT_OWNER_VALUE;
  return { node: marked(annotations(n)), claim: marked(annotations(c)) };
}

/** Wave's marks on an object: karpenter.sh/do-not-disrupt and every wave.sh/ annotation. */
const waveMarks = (o: { metadata: { annotations?: Record<string, string> } } | undefined): string[] =>
  Object.keys(annotations(o))
    .filter((k) => k === DO_NOT_DISRUPT_ANNOTATION || k.startsWith("wave.sh/"))
    .sort();

async function assertNoMarks(node: string, claim: string): Promise<void> {
  const n = await client.get("Node", node).catch(() => undefined);
  const c = await client.get("NodeClaim", claim).catch(() => undefined);
  assert.deepEqual(waveMarks(n), [], `no Wave marks left on Node ${node}`);
  assert.deepEqual(waveMarks(c), [], `no Wave marks left on NodeClaim ${claim}`);
}

/** The warmup controller as a separate process (test/e2e/warmup-controller.ts). */
const CONTROLLER_SCRIPT = fileURLToPath(new URL("./warmup-controller.ts", import.meta.url));

type Tagged = WarmupEvent & { by: string };

interface ControllerProc {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  /** Last lines of its stderr (logs), printed when the test fails. */
  tail: string[];
  killedByTest: boolean;
}

const procs: ControllerProc[] = [];

function startController(name: string, policyFile: string, events: Tagged[]): ControllerProc {
  const child = spawn(process.execPath, [CONTROLLER_SCRIPT], {
    env: {
      ...process.env,
      WAVE_E2E_KUBECONFIG: kubeconfigPath,
      WAVE_E2E_NAMESPACE: ns,
      WAVE_E2E_POOL: pool,
      WAVE_E2E_POLICY: policyFile,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const proc: ControllerProc = { name, child, exited: Promise.resolve(), tail: [], killedByTest: false };
  const keep = (line: string): void => {
    proc.tail.push(line);
    if (proc.tail.length > 80) proc.tail.shift();
  };
  createInterface({ input: child.stdout }).on("line", (line) => {
    try {
      events.push({ ...(JSON.parse(line) as WarmupEvent), by: name });
    } catch {
      keep(`stdout: ${line}`);
    }
  });
  createInterface({ input: child.stderr }).on("line", keep);
  proc.exited = new Promise((resolve) => {
    child.once("exit", (code, signal) => {
      if (!proc.killedByTest) keep(`exited unexpectedly: code ${String(code)} signal ${String(signal)}`);
      resolve();
    });
  });
  procs.push(proc);
  return proc;
}

/** Like a crashed core: no chance to finish a reconcile or clean anything up. */
async function kill(proc: ControllerProc, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.killedByTest = true;
  proc.child.kill(signal);
  if (signal === "SIGKILL") return proc.exited;
  // A clean stop must end the process promptly; one that hangs is a bug (and is killed).
  const timer = new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 10_000).unref());
  if ((await Promise.race([proc.exited.then(() => "exited" as const), timer])) === "exited") return;
  proc.child.kill("SIGKILL");
  await proc.exited;
  assert.fail(`controller ${proc.name} did not exit within 10 s of ${signal}`);
}

function assertAlive(proc: ControllerProc): void {
  assert.ok(
    proc.child.exitCode === null && proc.child.signalCode === null,
    `controller ${proc.name} died:\n${proc.tail.join("\n")}`,
  );
}

/** Every pull pod the controller creates, as the apiserver reports it (a watch on the namespace). */
interface PullSeen {
  name: string;
  node: string;
  image: string;
  hash: string;
  createdAt: string;
  seenAt: number;
  running: boolean;
  deletedAt?: number;
}

function watchPullPods(signal: AbortSignal): Map<string, PullSeen> {
  const seen = new Map<string, PullSeen>();
  const stopped = (): boolean => signal.aborted;
  const loop = async (): Promise<void> => {
    let rv = (await client.list("Pod", { namespace: ns, labelSelector: `${PREPULL_LABEL}=true` }))
      .resourceVersion;
    while (!signal.aborted) {
      try {
        for await (const ev of client.watch(
          "Pod",
          { namespace: ns, labelSelector: `${PREPULL_LABEL}=true`, resourceVersion: rv, timeoutSeconds: 60 },
          signal,
        )) {
          if (ev.type === "BOOKMARK" || ev.type === "ERROR") continue;
          const p = ev.object;
          rv = p.metadata.resourceVersion ?? rv;
          const name = p.metadata.name ?? "";
          const s = seen.get(name) ?? {
            name,
            node: p.spec.nodeName ?? "",
            image: p.spec.containers[0]?.image ?? "",
            hash: p.metadata.labels?.[PREPULL_IMAGE_HASH_LABEL] ?? "",
            createdAt: p.metadata.creationTimestamp ?? "",
            seenAt: Date.now(),
            running: false,
          };
          if (p.status?.phase === "Running") s.running = true;
          if (ev.type === "DELETED") s.deletedAt = Date.now();
          seen.set(name, s);
        }
      } catch (err) {
        if (stopped()) return;
        process.stderr.write(`# pull-pod watch restarts: ${String(err)}\n`);
        await sleep(500);
      }
    }
  };
  void loop();
  return seen;
}

/** Asserts the pull pods on `node`: one per workload image, bound by name, created together. */
async function assertPrepulled(t: TestContext, seen: Map<string, PullSeen>, node: string): Promise<void> {
  const pulls = await waitFor(
    `pull pods for ${IMAGES.join(", ")} on ${node}`,
    () => {
      const on = [...seen.values()].filter((s) => s.node === node);
      return Promise.resolve(on.length >= IMAGES.length ? on : undefined);
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  assert.deepEqual(
    pulls.map((p) => p.image).sort(),
    [...IMAGES].sort(),
    "one pull pod per workload image, nothing else",
  );
  for (const p of pulls) assert.equal(p.hash, imageHash(p.image), `${p.name} labelled with its image hash`);
  const created = pulls.map((p) => Date.parse(p.createdAt));
  const spread = Math.max(...created) - Math.min(...created);
  assert.ok(spread <= 1000, `pull pods created together (creationTimestamp spread ${spread} ms)`);
  const firstDelete = Math.min(...pulls.map((p) => p.deletedAt ?? Infinity));
  assert.ok(
    pulls.every((p) => p.seenAt <= firstDelete),
    "every pull pod existed before the first one was removed (parallel, not one after another)",
  );
  // KWOK runs them (no runtime, so "pulled" at once); the controller records and removes them.
  const n = await waitFor(
    `${node} annotated ${PREPULLED} with both images`,
    async () => {
      const n = await client.get("Node", node);
      const done = (annotations(n)[PREPULLED] ?? "").split(",");
      return IMAGES.every((i) => done.includes(imageHash(i))) ? n : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
  assert.ok(n);
  await waitFor(
    `pull pods on ${node} removed`,
    async () => (await wavePods(PREPULL_LABEL)).every((p) => p.spec.nodeName !== node),
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  assert.ok(
    pulls.every((p) => p.running),
    "KWOK ran every pull pod (Running) before it was removed",
  );
  t.diagnostic(
    `pre-pull on ${node}: ${pulls.length} pods [${pulls.map((p) => p.image).join(", ")}], creation spread ${spread} ms`,
  );
}

async function readyNode(name: string): Promise<Node | undefined> {
  const n = await client.get("Node", name).catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
  return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? n : undefined;
}

async function dumpState(): Promise<void> {
  const pods = (await client.list("Pod", { namespace: ns }).catch(() => ({ items: [] }))).items;
  const claims = (await client.list("NodeClaim").catch(() => ({ items: [] }))).items.filter(
    (c) => c.metadata.labels?.[NODE_POOL_LABEL] === pool,
  );
  process.stderr.write(
    `\n----- warmup e2e state -----\npods: ${pods
      .map((p) => `${p.metadata.name ?? ""}@${p.spec.nodeName ?? "-"}:${p.status?.phase ?? "?"}`)
      .join(" ")}\nnodeclaims:\n  ${claims
      .map((c) => `${c.metadata.name ?? ""}→${c.status?.nodeName ?? "-"} ${JSON.stringify(annotations(c))}`)
      .join("\n  ")}\n`,
  );
  for (const p of procs) process.stderr.write(`----- controller ${p.name} -----\n${p.tail.join("\n")}\n`);
}

before(async () => {
  await requireRig();
  ns = await createNamespace("warmup");
  pool = ns;
  client = clientFromKubeconfig(kubeconfigPath);
  await applyPoolAndClass();
});

after(async () => {
  for (const p of procs) await kill(p);
  if (ns !== "") await deleteNamespace(ns);
  if (pool === "") return;
  // The NodePool's deletion makes Karpenter remove its NodeClaims; the class goes after them.
  await remove("nodepools.karpenter.sh", pool);
  await waitFor(
    `NodeClaims of ${pool} gone`,
    async () =>
      (await list("nodeclaims.karpenter.sh")).every((c) => c.metadata.labels?.[NODE_POOL_LABEL] !== pool),
    { timeoutMs: 60_000, intervalMs: 1_000 },
  ).catch((e: unknown) => process.stderr.write(`# cleanup: ${String(e)}\n`));
  await remove("kwoknodeclasses.karpenter.kwok.sh", pool);
});

test(
  "warmup: warm node cuts pending→Running, do-not-disrupt until hit/TTL, killed controller leaves no orphans",
  { timeout: 330_000 },
  (t) =>
    withRigLogsOnFailure(async () => {
      const events: Tagged[] = [];
      const of = (by: string): Tagged[] => events.filter((e) => e.by === by);
      // The controller processes re-read their policy from this file on every reconcile.
      const dir = mkdtempSync(join(tmpdir(), "wave-warmup-e2e-"));
      const policyFile = join(dir, "policy.json");
      const setPolicy = (p: Partial<WarmupPolicy>): void => {
        // Written whole, then renamed: a controller never reads half a file.
        writeFileSync(`${policyFile}.tmp`, JSON.stringify({ enabled: true, cooldownSeconds: 0, ...p }));
        renameSync(`${policyFile}.tmp`, policyFile);
      };
      const watchStop = new AbortController();
      const pulls = watchPullPods(watchStop.signal);
      // Another Wave install on the same cluster (like any other e2e test's `wave start`): it
      // sees every pool, has warmup off for ours and must never release our warm nodes.
      const stopOther = new AbortController();
      // Wave's own pipeline (agent → gRPC → core → API) watching the rig: while the warmup is
      // live, the API must report the node warm (the agent once trimmed away the owner mark).
      // Its own namespace: its warmup controller (policy off) must not own this test's marks.
      const waveNs = await createNamespace("warmup-wave");
      const wave: Started = await startWave(
        {
          ...DEFAULTS,
          port: 0,
          grpcPort: 0,
          webhookPort: 0,
          dataDir: join(dir, "wave"),
          logLevel: "error",
          kubeconfig: kubeconfigPath,
          clusterId: "warmup-e2e",
          namespace: waveNs,
        },
        {},
        { log: createLogger({ level: "error", base: { app: "wave-e2e-warmup" } }) },
      );
      const waveApi = async <T>(path: string): Promise<T> => {
        const res = await fetch(new URL(`api/v1/clusters/warmup-e2e/${path}`, wave.url), {
          headers: { authorization: `Bearer ${wave.tokens.viewer}` },
        });
        assert.equal(res.status, 200, `GET ${path}: ${res.status}`);
        return (await res.json()) as T;
      };
      const loopOther = runController(
        new WarmupController({
          client,
          view: await followCluster({ client, signal: stopOther.signal, clock: realClock }),
          clock: realClock,
          namespace: `${ns}-other`,
          policyOf: () => DEFAULT_POLICY,
          onEvent: (e) => events.push({ ...e, by: "other" }),
          idleRequeueMs: 1_000,
        }),
        { clock: realClock, signal: stopOther.signal, resyncMs: 5_000 },
      );
      try {
        // 1. COLD: nothing warm, the pod waits for Karpenter to launch and register a node.
        const cold = await createAndTimeToRunning(workloadPod("seed"));
        const node1 = cold.pod.spec.nodeName ?? "";
        t.diagnostic(`cold pending→Running: ${cold.seconds.toFixed(1)} s (node ${node1})`);
        assert.ok(
          cold.seconds >= REGISTRATION_DELAY_S,
          `a cold start waits for node registration (${cold.seconds}s)`,
        );

        // 2. Start the controller: the largest pod (3 vCPU) fits no Ready node → a warmup pod.
        setPolicy({ ttlSeconds: 120 });
        const a = startController("A", policyFile, events);
        const tWarmStart = Date.now();
        const warm1 = await waitFor(
          "a warmup pod for the pool",
          async () => {
            assertAlive(a);
            return (await wavePods(WARMUP_LABEL))[0];
          },
          { timeoutMs: 30_000, intervalMs: 250 },
        );
        assert.equal(warm1.metadata.labels?.[WARMUP_POOL_LABEL], pool);
        assert.equal(
          warm1.spec.containers[0]?.resources?.requests?.["cpu"],
          "3",
          "reserves the largest pod's cpu",
        );
        const node2 = await waitFor(
          "the warmup pod bound to a new Ready node",
          async () => {
            const p = await client.get("Pod", warm1.metadata.name ?? "", ns);
            const n = p.spec.nodeName;
            return n !== undefined && n !== node1 && (await readyNode(n)) !== undefined ? n : undefined;
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        t.diagnostic(
          `warm node ${node2} Ready ${((Date.now() - tWarmStart) / 1000).toFixed(1)} s after the controller started`,
        );
        assert.equal((await client.get("Node", node2)).metadata.labels?.[NODE_POOL_LABEL], pool);
        await waitFor(
          `do-not-disrupt on ${node2} and its NodeClaim`,
          async () => {
            const p = await protectedByWave(node2);
            return p.node && p.claim;
          },
          { timeoutMs: 20_000, intervalMs: 250 },
        );
        const claim2 = (await claimOfNode(node2))?.metadata.name ?? "";
        await waitFor(
          `core's API to report ${node2} warm (node table and Warmup page)`,
          async () => {
            const row = (await waveApi<NodeListDto>(`nodes?q=${encodeURIComponent(node2)}`)).items.find(
              (n) => n.name === node2,
            );
            const view = await waveApi<WarmupViewDto>("warmup");
            const listed = view.pools
              .find((p) => p.nodePool === pool)
              ?.warmNodes.some((w) => w.name === node2);
            return row?.warm === true && listed === true;
          },
          { timeoutMs: 30_000, intervalMs: 250 },
        );
        t.diagnostic(`core's API reports ${node2} warm while the warmup is live`);
        // …and the console shows it (Chromium, built UI): tagged warm on the Nodes page, listed
        // with its pre-pull on the Warmup page, both equal to the API while the warmup is live.
        const site: Site = {
          url: wave.url,
          cluster: "warmup-e2e",
          viewer: wave.tokens.viewer,
          log: (m) => t.diagnostic(m),
        };
        const browser = await chromium.launch({
          executablePath: "/usr/bin/chromium",
          args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
        });
        try {
          const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
          await openPage(site, page, `nodes?pool=${pool}`, wave.tokens.viewer);
          await waitFor(
            `the Nodes page to tag ${node2} warm`,
            async () =>
              (await page.getByTestId("node-row").filter({ hasText: node2 }).locator(".tag.warm").count()) ===
              1,
            { timeoutMs: 30_000, intervalMs: 250 },
          );
          await openPage(site, page, "warmup", wave.tokens.viewer);
          await waitFor(
            `the Warmup page to list ${node2} warm, as the API does`,
            async () =>
              (await warmupAgrees(site, page))?.pools
                .find((p) => p.nodePool === pool)
                ?.warmNodes.some((w) => w.name === node2),
            { timeoutMs: 30_000, intervalMs: 250 },
          );
        } finally {
          await browser.close();
        }
        t.diagnostic(`the console shows ${node2} warm (Nodes page tag, Warmup page) = API`);
        await assertPrepulled(t, pulls, node2);
        assert.deepEqual(
          await protectedByWave(node2),
          { node: true, claim: true },
          "still protected before the hit",
        );

        // 3. WARM: the next real pod preempts the warmup pod and runs on the warm node. The next
        //    warmup (made right after the hit) gets a shorter TTL: it is the miss case. The TTL
        //    also applies to the live warm node, which has lived through the console checks
        //    above (slow on a loaded machine): it must not expire before the hit.
        setPolicy({ ttlSeconds: Math.ceil((Date.now() - tWarmStart) / 1000) + 75 });
        const warm = await createAndTimeToRunning(workloadPod("hit"));
        const ratio = warm.seconds / cold.seconds;
        t.diagnostic(
          `warm pending→Running: ${warm.seconds.toFixed(2)} s on ${warm.pod.spec.nodeName ?? "?"}; warm/cold = ${ratio.toFixed(3)} (goal ≤ 0.1)`,
        );
        assert.equal(warm.pod.spec.nodeName, node2, "the real pod lands on the warm node");
        const preempted = await client
          .get("Pod", warm1.metadata.name ?? "", ns)
          .catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e as Error)));
        assert.ok(
          preempted === undefined || preempted.metadata.deletionTimestamp !== undefined,
          "the real pod took the warmup pod's place (preempted it)",
        );
        // Generous (the goal is 0.1): a loaded CI machine must not turn this red. The measured
        // ratio is in the diagnostics above.
        assert.ok(ratio <= 0.5, `warm start well under the cold start (warm/cold ${ratio.toFixed(3)})`);
        await waitFor(
          "the warmup to end as a hit and its protection to go",
          async () => {
            const p = await protectedByWave(node2);
            return of("A").some((e) => e.type === "hit" && e.node === node2) && !p.node && !p.claim;
          },
          { timeoutMs: 20_000, intervalMs: 250 },
        );
        await assertNoMarks(node2, claim2);

        // 4. KILL mid-warmup: the pool is full again, so a second warmup starts; SIGKILL the
        //    controller while that warmup waits for its node, then start a new process.
        const warm2 = await waitFor(
          "a second warmup pod",
          async () => (await wavePods(WARMUP_LABEL)).find((p) => p.metadata.name !== warm1.metadata.name),
          { timeoutMs: 30_000, intervalMs: 250 },
        );
        const deadline = Date.parse(warm2.metadata.annotations?.[DEADLINE_ANNOTATION] ?? "");
        assert.ok(Number.isFinite(deadline), "the warmup pod carries its deadline");
        await kill(a);
        const pendingAtKill =
          (await client.get("Pod", warm2.metadata.name ?? "", ns)).spec.nodeName === undefined;
        t.diagnostic(
          `controller A killed; second warmup ${pendingAtKill ? "still pending" : "already bound"}`,
        );
        const b = startController("B", policyFile, events);
        const node3 = await waitFor(
          "the adopted warmup pod bound to a new Ready node",
          async () => {
            assertAlive(b);
            const p = await client.get("Pod", warm2.metadata.name ?? "", ns);
            const n = p.spec.nodeName;
            return n !== undefined && (await readyNode(n)) !== undefined ? n : undefined;
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        assert.ok(![node1, node2].includes(node3), "the second warmup got a node of its own");
        await waitFor(
          `do-not-disrupt on ${node3} (set by the new process)`,
          async () => {
            const p = await protectedByWave(node3);
            return p.node && p.claim;
          },
          { timeoutMs: 20_000, intervalMs: 250 },
        );
        const claim3 = (await claimOfNode(node3))?.metadata.name ?? "";
        assert.notEqual(claim3, "", `${node3} has a NodeClaim`);
        await assertPrepulled(t, pulls, node3);
        assert.deepEqual(
          (await wavePods(WARMUP_LABEL)).map((p) => p.metadata.name),
          [warm2.metadata.name],
          "the new process adopted the warmup: no duplicate",
        );

        // 5. KILL while the node is protected; a third process must still enforce the TTL. No more
        //    workload: nothing to warm for after this warmup ends, and nodes 1 and 2 empty out.
        await kill(b);
        await client.delete("Pod", "seed", { namespace: ns, gracePeriodSeconds: 0 });
        await client.delete("Pod", "hit", { namespace: ns, gracePeriodSeconds: 0 });
        const tEmptied = Date.now();
        const c = startController("C", policyFile, events);

        // 6. TTL: protected (and never disrupted) until the deadline, then a miss, released, and
        //    consolidated. The release must not come before the deadline.
        let disruptedWhileProtected = "";
        const releasedAt = await waitFor(
          "the TTL miss: warmup pod gone, protection removed",
          async () => {
            assertAlive(c);
            const p = await protectedByWave(node3);
            const claim = await client.get("NodeClaim", claim3).catch(() => undefined);
            if (p.node || p.claim) {
              if (claim === undefined) disruptedWhileProtected = "NodeClaim gone";
              else if (claim.metadata.deletionTimestamp !== undefined)
                disruptedWhileProtected = "NodeClaim deleting";
              return undefined;
            }
            return (await wavePods(WARMUP_LABEL)).length === 0 ? Date.now() : undefined;
          },
          { timeoutMs: deadline - Date.now() + 30_000, intervalMs: 250 },
        );
        assert.equal(disruptedWhileProtected, "", "Karpenter left the protected warm node alone");
        assert.ok(
          releasedAt >= deadline,
          `released at the TTL, not before (${((releasedAt - deadline) / 1000).toFixed(1)} s after the deadline)`,
        );
        t.diagnostic(
          `TTL miss released ${node3} ${((releasedAt - deadline) / 1000).toFixed(1)} s after its deadline; ` +
            `it sat protected with no workload for ${((deadline - tEmptied) / 1000).toFixed(0)} s`,
        );
        await assertNoMarks(node3, claim3);
        assert.ok(
          of("C").some((e) => e.type === "miss" && e.reason === "ttl" && e.node === node3),
          `the third process reported the TTL miss (events: ${JSON.stringify(of("C"))})`,
        );
        assert.ok(
          ![...of("B"), ...of("C")].some((e) => e.type === "created"),
          "the restarted processes started no warmup of their own",
        );
        assert.equal(
          [...pulls.values()].filter((s) => s.node === node3).length,
          IMAGES.length,
          "the restart did not pull the images again",
        );
        const consolidated = async (claim: string, since: number): Promise<number> => {
          await waitFor(
            `NodeClaim ${claim} consolidated`,
            async () => (await get("nodeclaims.karpenter.sh", claim)) === undefined,
            { timeoutMs: 120_000, intervalMs: 1_000 },
          );
          return (Date.now() - since) / 1000;
        };
        const [s3, s2] = await Promise.all([
          consolidated(claim3, releasedAt),
          consolidated(claim2, tEmptied),
        ]);
        t.diagnostic(
          `consolidated: ${node3} ${s3.toFixed(1)} s after its TTL release; ${node2} (hit) ${s2.toFixed(1)} s after its pod went`,
        );
        // Karpenter's own word on why the warm node went (events are best effort: not asserted).
        const nodeEvents = (
          JSON.parse(
            await kubectl([
              "get",
              "events",
              "--all-namespaces",
              "--field-selector",
              `involvedObject.name=${node3}`,
              "-o",
              "json",
            ]),
          ) as KubeList
        ).items
          .filter((e) => String(e["reason"]).startsWith("Disruption"))
          .map((e) => `${String(e["reason"])}: ${String(e["message"])}`);
        t.diagnostic(`Karpenter on ${node3}: ${nodeEvents.join(" | ") || "no disruption events"}`);
        assert.deepEqual(
          (await client.list("Pod", { namespace: ns })).items
            .filter((p) => p.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE)
            .map((p) => p.metadata.name),
          [],
          "no orphan warmup or pull pods",
        );
        assert.deepEqual(of("other"), [], "the other install reported nothing about our pool");
        // Transient failures are retried by the loop; they are shown, not asserted.
        const troubles = procs.flatMap((p) =>
          p.tail.filter((l) => /"level":"(warn|error)"/.test(l)).map((l) => `${p.name}: ${l}`),
        );
        t.diagnostic(
          `controller warnings/errors: ${troubles.length}${troubles.length > 0 ? `\n${troubles.join("\n")}` : ""}`,
        );
        await kill(c, "SIGTERM");
        stopOther.abort();
        await loopOther;
      } catch (err) {
        await dumpState();
        throw err;
      } finally {
        await wave.stop();
        await deleteNamespace(waveNs);
        for (const p of procs) await kill(p);
        stopOther.abort();
        watchStop.abort();
        rmSync(dir, { recursive: true, force: true });
      }
    }),
);
