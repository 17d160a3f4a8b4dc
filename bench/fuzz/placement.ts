// The placement fuzz target of `npm run fuzz` (issue 32): forged AdmissionReviews over HTTPS
// against the real webhook server, allocator and backing verifier, on the in-memory apiserver with
// real ReplicaSets whose pods the ReplicaSet controller creates through the same webhook (from the
// apiserver's address, src/webhook/placement-world.ts). Forgeries are generated from a real pod's
// review — owner uid removed or emptied, a made-up pod-template-hash, another ReplicaSet's name, a
// non-controller reference, dry-run, replayed verbatim — then mutated, mangled, grown up to and past
// the 3 MiB body cap, or sent slowly. They are sent while every ReplicaSet is full (no pod is about
// to be created), so none may record a slot. After each round of forgeries the real workload churns
// (a pod deleted and replaced, scale, rollouts) and its placement is asserted:
//   - the ledger holds only live real pods' slots (no forged reservation);
//   - exactly min(N, replicas) real pods on-demand;
//   - the repair evicted nothing.
// Each broken assertion is a placement violation; HTTP 5xx (or a dropped request under the caps)
// is a server error.
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seeded } from "../../src/shared/random.ts";
import { generateDevCerts } from "../../src/webhook/certs.ts";
import { APP_NS, PlacementWorld } from "../../src/webhook/placement-world.ts";
import { InMemoryPolicySource } from "../../src/webhook/policy-source.ts";
import { DEFAULT_MAX_BODY_BYTES, startWebhookServer } from "../../src/webhook/server.ts";
import { SLOT_LABEL } from "../../src/objects/wave.ts";
import { gen, type Gen, type Json } from "./gen.ts";
import type { TargetResult } from "./targets.ts";

const LOOPBACK = "127.0.0.1";
const THRESHOLD = 3;
/** Forgeries between two placement checks. */
const ROUND = 50;

function heap(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

const HASH_CHARS = "bcdfghjklmnpqrstvwxz2456789";
const randomHash = (g: Gen): string =>
  Array.from({ length: 10 }, () => HASH_CHARS.charAt(g.int(HASH_CHARS.length))).join("");

/** One forged review built from a real pod's review of the current revision. */
function forgery(w: PlacementWorld, hash: string, g: Gen): Json {
  const other = randomHash(g);
  const variants = [
    () => w.podReview(hash, "api", { uid: undefined }),
    () => w.podReview(hash, "api", { uid: "" }),
    () => w.podReview(other, "api", { uid: undefined }),
    () => w.podReview(other, "api", { uid: "made-up" }),
    () => w.podReview(hash, "api"), // a genuine review replayed: its ReplicaSet is full
    () => w.podReview(hash, "api", { controller: false }),
    () => ({ ...w.podReview(hash, "api", { uid: undefined }), dryRun: true }),
    () => w.podReview(hash, "api", { name: `api-${other}` }),
  ];
  const req = g.pick(variants)() as unknown as Json;
  return g.chance(0.3) ? g.mutate(req) : req;
}

/** Grows a review with one annotation to about `bytes`. */
function grow(doc: Json, bytes: number): Json {
  const req = (doc as { object?: { metadata?: { annotations?: Record<string, string> } } }).object;
  if (req?.metadata && typeof req.metadata === "object")
    req.metadata.annotations = { ...req.metadata.annotations, "example.com/big": "x".repeat(bytes) };
  return doc;
}

export async function fuzzPlacement(n: number, seed: number): Promise<TargetResult> {
  const g = gen(seeded(seed));
  const world = await PlacementWorld.create({ threshold: THRESHOLD, repair: true });
  const dir = await mkdtemp(join(tmpdir(), "wave-fuzz-placement-"));
  const certs = await generateDevCerts({ dir, hosts: ["localhost", LOOPBACK] });
  const server = await startWebhookServer({
    certFile: certs.certFile,
    keyFile: certs.keyFile,
    host: LOOPBACK,
    policies: new InMemoryPolicySource({
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicySet",
      policies: world.policies,
    }),
    allocator: world.allocator,
    clock: world.clock,
    metrics: world.metrics,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: certs.caPem });
  const statuses: Record<string, number> = {};
  const examples: string[] = [];
  let serverErrors = 0;
  let violations = 0;
  let checks = 0;
  const count = (status: string, isError: boolean, example: () => string): void => {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (!isError) return;
    serverErrors++;
    if (examples.length < 5) examples.push(example().slice(0, 400));
  };
  const violated = (what: string): void => {
    violations++;
    if (examples.length < 5) examples.push(`placement: ${what}`);
  };

  /** Sends one body, whole or in pieces `gapMs` apart; the status, or "closed" if cut off. */
  const send = (text: string, pieces: number, gapMs: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const body = Buffer.from(text);
      const req = httpsRequest(
        {
          agent,
          host: LOOPBACK,
          port: server.port,
          servername: "localhost",
          path: "/mutate",
          method: "POST",
          headers: { "content-type": "application/json", "content-length": body.length },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(String(res.statusCode ?? 0)));
        },
      );
      req.on("error", reject);
      void (async () => {
        const size = Math.ceil(body.length / pieces);
        for (let at = 0; at < body.length; at += size) {
          if (at > 0) await new Promise((r) => setTimeout(r, gapMs));
          if (!req.destroyed) req.write(body.subarray(at, at + size));
        }
        req.end();
      })();
    });

  let hash = "h1";
  let replicas = 2; // both on-demand: a free on-demand slot, but no room for a pod
  let generation = 1;
  await world.scale(hash, replicas);
  await world.sync();

  const check = async (when: string): Promise<void> => {
    checks++;
    const live = await world.live();
    const tokens = new Set(live.map((p) => p.metadata.labels?.[SLOT_LABEL]));
    const ledger = await world.ledger();
    const stray = [...ledger.entries.keys()].filter((t) => !tokens.has(t));
    if (stray.length > 0) violated(`${when}: ${stray.length} ledger slot(s) without a real pod (forged)`);
    const onDemand = await world.onDemand();
    const want = Math.min(THRESHOLD, replicas);
    if (onDemand !== want)
      violated(`${when}: ${onDemand} of ${live.length} real pods on-demand, want ${want}`);
    if (world.evictions > 0) violated(`${when}: the repair evicted ${world.evictions} real pod(s)`);
  };

  const before = heap();
  const started = performance.now();
  for (let done = 0, round = 0; done < n; round++) {
    const batch = Math.min(ROUND, n - done);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < batch) {
          const i = done + next++;
          const doc = forgery(world, hash, g);
          // Large inputs: near, at and past the body cap.
          const large = g.chance(0.01);
          if (large) grow(doc, DEFAULT_MAX_BODY_BYTES - 2048 + g.int(4096));
          let text = JSON.stringify({
            apiVersion: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            request: doc,
          });
          if (g.chance(0.05)) text = g.mangle(text);
          const slow = g.chance(0.02);
          try {
            const status = await send(text, slow ? 2 + g.int(4) : 1, slow ? 20 + g.int(200) : 0);
            count(status, Number(status) >= 500, () => `#${i}: ${text}`);
          } catch (err) {
            // A body past the cap is answered 413 and its connection closed: the client may see
            // the close before the answer. Anything else dropped is a server error.
            const over = Buffer.byteLength(text) > DEFAULT_MAX_BODY_BYTES;
            count(over ? "closed" : "transport-error", !over, () => `#${i}: ${String(err)}: ${text}`);
          }
        }
      }),
    );
    done += batch;
    await world.settle();
    await check(`after forgeries of round ${round}`);
    // The real workload lives on: a pod dies and is replaced; now and then a scale or a rollout
    // instead (a pod deleted in the same pass as a scale-down is not replaced: that shortfall is
    // the repair's, after its 5 s grace — not what this target checks).
    const live = await world.live();
    const victim = live[g.int(live.length)];
    if (round % 25 === 24) {
      await world.scale(hash, 0);
      hash = `h${++generation}`;
      await world.scale(hash, replicas);
    } else if (round % 10 === 9) {
      replicas = 2 + g.int(5);
      await world.scale(hash, replicas);
    } else if (victim) await world.kube.delete("Pod", victim.metadata.name ?? "", { namespace: APP_NS });
    await world.tick(1_000);
    await check(`after the real pods' churn of round ${round}`);
  }
  const ms = performance.now() - started;
  agent.destroy();
  await server.close();
  await world.stop();
  await rm(dir, { recursive: true, force: true });
  const heapGrowth = heap() - before;
  return {
    target: "placement",
    inputs: n,
    serverErrors,
    statuses,
    examples,
    heapGrowth,
    placementViolations: violations,
    placementChecks: checks,
    ms,
  };
}
