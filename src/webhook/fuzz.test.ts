// 10,000 random and mutated AdmissionReviews (seeded, reproducible): the webhook never crashes,
// never answers 5xx, answers every well-enveloped review with its uid, and every patch it sends
// applies cleanly to the object it was computed for.
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import type { AdmissionReviewResponse, JsonPatchOp } from "./admission.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts } from "./certs.ts";
import { handleHttp, type HttpResult } from "./handler.ts";
import { jsonPatch as applyJsonPatch } from "../kube/memory/patch.ts";
import { fixturePolicies } from "./placement.test-helper.ts";
import type { ReviewDeps } from "./review.ts";
import { startWebhookServer } from "./server.ts";
import { FIXTURE_NAMES, httpsRequest, loadFixture, prng } from "./test-helpers.ts";

const SEED = 20261202;
const TOTAL = 10_000;
const OVER_HTTPS = 300; // of TOTAL, also sent through the real TLS server

const policies = fixturePolicies({ web: 3, db: 1, api: 2, checkout: 2 });

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function generator(rand: () => number) {
  const int = (n: number): number => Math.floor(rand() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const strings = [
    "",
    "a",
    "on-demand",
    "spot",
    "karpenter.sh/capacity-type",
    "ReplicaSet",
    "apps/v1",
    "-",
    "~1/",
    "\u0000",
    "é",
    "x".repeat(300),
    "__proto__",
    "constructor",
  ];
  const value = (depth: number): Json => {
    switch (int(depth > 3 ? 5 : 8)) {
      case 0:
        return null;
      case 1:
        return rand() < 0.5;
      case 2:
        return pick([0, -1, 1.5, 1e308, -0, 2 ** 53, NaN]);
      case 3:
        return pick(strings);
      case 4:
        return String(int(1e9));
      case 5:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      case 6:
        return Object.fromEntries(Array.from({ length: int(4) }, () => [pick(strings), value(depth + 1)]));
      default:
        return {
          matchExpressions: [
            { key: pick(strings), operator: pick(["In", "NotIn", 3]), values: [pick(strings)] },
          ],
        };
    }
  };
  /** Every container path in the document. */
  const paths = (
    doc: Json,
    at: (string | number)[] = [],
    out: (string | number)[][] = [],
  ): (string | number)[][] => {
    out.push(at);
    if (Array.isArray(doc)) doc.forEach((v, i) => paths(v, [...at, i], out));
    else if (doc !== null && typeof doc === "object")
      for (const [k, v] of Object.entries(doc)) paths(v, [...at, k], out);
    return out;
  };
  const mutate = (doc: Json): Json => {
    const all = paths(doc);
    const path = pick(all);
    if (path.length === 0) return rand() < 0.1 ? value(0) : doc;
    let parent = doc as Record<string | number, Json>;
    for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, Json>;
    const last = path[path.length - 1] as string | number;
    const op = int(4);
    if (op === 0) {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else Reflect.deleteProperty(parent, last);
    } else if (op === 1) parent[last] = value(0);
    else if (op === 2) parent[last] = pick(strings);
    else {
      const target = parent[last];
      if (Array.isArray(target)) target.push(value(1));
      else if (target !== null && typeof target === "object") target[pick(strings)] = value(1);
      else parent[last] = [target ?? null];
    }
    return doc;
  };
  const fixtures = FIXTURE_NAMES.map((n) => loadFixture(n) as unknown as Json);
  /** One fuzz case: the body bytes and, when it is valid JSON, the parsed document. */
  return (): string => {
    const kind = rand();
    if (kind < 0.05) return JSON.stringify(value(0));
    let doc = structuredClone(pick(fixtures));
    const uid = `fuzz-${int(1e9)}`;
    (doc as { request: { uid: string } }).request.uid = uid;
    const n = 1 + int(6);
    for (let i = 0; i < n; i++) doc = mutate(doc);
    const text = JSON.stringify(doc);
    if (kind < 0.12) {
      const cut = int(text.length);
      return text.slice(0, cut) + (rand() < 0.5 ? "" : pick(["}", "\uFFFF", "\\", '"', "ÿ"]));
    }
    return text;
  };
}

function check(body: string, r: HttpResult): void {
  assert.ok(r.status < 500, `5xx for ${body.slice(0, 200)}`);
  assert.ok(r.status === 200 || r.status === 400, `status ${r.status}`);
  const out = JSON.parse(r.body) as Record<string, unknown>;
  if (r.status === 400) {
    assert.equal(typeof out.error, "string");
    return;
  }
  const review = out as unknown as AdmissionReviewResponse;
  const sent = JSON.parse(body) as { request: { uid: string; object: unknown } };
  assert.equal(review.response.uid, sent.request.uid);
  assert.equal(review.response.allowed, true);
  if (review.response.patch !== undefined) {
    const ops = JSON.parse(Buffer.from(review.response.patch, "base64").toString("utf8")) as JsonPatchOp[];
    assert.ok(Array.isArray(ops) && ops.length > 0);
    applyJsonPatch(sent.request.object, ops); // throws if the patch does not apply
  }
}

describe("fuzz", () => {
  it(`${TOTAL} random and mutated AdmissionReviews: no crash, no 5xx, every patch applies`, async () => {
    const clock = new FakeClock();
    const policySource = policies;
    const deps: ReviewDeps = {
      policies: policySource,
      allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
      clock,
    };
    const next = generator(prng(SEED));
    const bodies = Array.from({ length: TOTAL }, next);
    const statuses = new Map<number, number>();
    for (const [i, body] of bodies.entries()) {
      let r: HttpResult;
      try {
        r = await handleHttp("POST", "/mutate", Buffer.from(body), deps);
      } catch (err) {
        assert.fail(`case ${i} (seed ${SEED}) crashed: ${String(err)}\n${body.slice(0, 500)}`);
      }
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      try {
        check(body, r);
      } catch (err) {
        assert.fail(`case ${i} (seed ${SEED}): ${String(err)}\n${body.slice(0, 500)}`);
      }
    }
    // The corpus must exercise both outcomes, or the fuzzer tests nothing.
    assert.ok((statuses.get(200) ?? 0) > TOTAL / 2, JSON.stringify([...statuses]));
    assert.ok((statuses.get(400) ?? 0) > 100, JSON.stringify([...statuses]));

    // A slice through the real HTTPS server: the socket layer adds no failure mode.
    const certs = await generateDevCerts({
      dir: await mkdtemp(join(tmpdir(), "wave-fuzz-")),
      hosts: ["localhost", "127.0.0.1"],
    });
    const server = await startWebhookServer({
      certFile: certs.certFile,
      keyFile: certs.keyFile,
      host: "127.0.0.1",
      policies: policySource,
      allocator: deps.allocator,
      clock,
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 8, ca: certs.caPem });
    try {
      for (let i = 0; i < OVER_HTTPS; i += 8) {
        await Promise.all(
          bodies.slice(i, i + 8).map(async (body) => {
            const r = await httpsRequest(agent, server.port, body);
            check(body, r);
          }),
        );
      }
    } finally {
      agent.destroy();
      await server.close();
    }
  });
});
