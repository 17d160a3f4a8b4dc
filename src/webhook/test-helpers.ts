// Shared by the webhook's tests, fuzzer and benchmark: fixtures and a seeded PRNG.
import { readFileSync } from "node:fs";
import { seeded } from "../shared/random.ts";
import { request, type Agent } from "node:https";
import type { TLSSocket } from "node:tls";
import type { AdmissionReviewRequest } from "./admission.ts";
import type { Pod } from "../objects/kube.ts";

export const FIXTURE_NAMES = [
  "deployment-pod-generatename",
  "statefulset-pod",
  "existing-affinity",
  "capacity-constrained",
  "capacity-constrained-affinity",
  "job-pod",
] as const;
export type FixtureName = (typeof FIXTURE_NAMES)[number];

export function loadFixture(name: FixtureName): AdmissionReviewRequest {
  const url = new URL(`../../test/fixtures/admission/${name}.json`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")) as AdmissionReviewRequest;
}

export function fixturePod(name: FixtureName): Pod {
  return loadFixture(name).request.object as Pod;
}

/** A seeded PRNG (mulberry32) — reproducible fuzzing. */
export const prng = seeded;

/** A fresh copy of a fixture with a new uid and pod identity (many pods of one workload). */
export function reviewFor(
  name: FixtureName,
  i: number,
  mutate?: (r: AdmissionReviewRequest) => void,
): AdmissionReviewRequest {
  const r = loadFixtureCached(name);
  const copy = structuredClone(r);
  copy.request.uid = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
  mutate?.(copy);
  return copy;
}

const cache = new Map<FixtureName, AdmissionReviewRequest>();
function loadFixtureCached(name: FixtureName): AdmissionReviewRequest {
  let r = cache.get(name);
  if (!r) {
    r = loadFixture(name);
    cache.set(name, r);
  }
  return r;
}

/** POSTs a body over HTTPS (trusting `ca`) and returns status + parsed-or-raw body. */
export function httpsRequest(
  agent: Agent,
  port: number,
  body: string | Buffer,
  opts: { path?: string; method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string; cert?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: "127.0.0.1",
        port,
        servername: "localhost",
        path: opts.path ?? "/mutate",
        method: opts.method ?? "POST",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        // Read the peer certificate now: a keep-alive agent takes the socket back at "end".
        const serial = (res.socket as TLSSocket | null)?.getPeerCertificate().serialNumber;
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
            cert: serial,
          });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
