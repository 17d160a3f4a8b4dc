// Shared by the spot e2e files: `wave webhook` replicas as child processes (how the chart runs
// them, each its own SlotAllocator, pod watch and apiserver connection), a TLS front that hands
// each request to the next replica (what a Service over N endpoints does), a policy endpoint that
// serves a SpotPolicySet the way core does (including the long-poll watch), and answer parsing.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { Agent, createServer, type Server } from "node:https";
import { readFile } from "node:fs/promises";
import { connect, type AddressInfo } from "node:net";
import { join } from "node:path";
import { repoRoot } from "../../hack/rig/lib.ts";
import type { AdmissionReviewResponse, JsonPatchOp } from "../../src/webhook/admission.ts";
import { POLICY_SET_API_VERSION, type SpotPolicy } from "../../src/policy/spot.ts";
import { httpsRequest } from "../../src/webhook/test-helpers.ts";
import { kubeconfigPath } from "./harness.ts";
import { ASSIGNMENT_LABEL, SLOT_LABEL } from "../../src/objects/wave.ts";

// ---------------------------------------------------------------------------------------------
// `wave webhook` processes

export interface Replica {
  name: string;
  child: ChildProcess;
  port: number;
  output: string[];
  exited: Promise<number | null>;
}

export interface ReplicaOptions {
  name: string;
  policiesUrl: string;
  /** The serving certificate directory (tls.crt, tls.key), also HOME. */
  tlsDir: string;
  /** Wave's namespace (ledger Leases, the repair's leader Lease). */
  waveNamespace: string;
  viewerToken: string;
  deadlineMs: number;
  /** Every child started, also one whose start failed (so none outlives the test). */
  spawned: ChildProcess[];
  /** More environment (WAVE_SPOT_*). */
  env?: Record<string, string>;
}

export function startReplica(o: ReplicaOptions): Promise<Replica> {
  const { name } = o;
  const child = spawn(process.execPath, [join(repoRoot, "bin", "wave.ts"), "webhook"], {
    cwd: repoRoot,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: o.tlsDir,
      KUBECONFIG: kubeconfigPath,
      WAVE_POD_NAME: name,
      WAVE_NAMESPACE: o.waveNamespace,
      WAVE_HOST: "127.0.0.1",
      WAVE_WEBHOOK_PORT: "0",
      WAVE_WEBHOOK_TLS_DIR: o.tlsDir,
      WAVE_SPOT_POLICIES_URL: o.policiesUrl,
      WAVE_VIEWER_TOKEN: o.viewerToken,
      WAVE_WEBHOOK_DEADLINE_MS: String(o.deadlineMs),
      ...o.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  o.spawned.push(child);
  const output: string[] = [];
  const exited = new Promise<number | null>((ok) => child.on("exit", (code) => ok(code)));
  return new Promise<Replica>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`wave webhook ${name} did not start within 60 s:\n${output.slice(-20).join("\n")}`));
    }, 60_000);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`wave webhook ${name} exited (${code}):\n${output.slice(-20).join("\n")}`));
    });
    // Log lines (JSON) may arrive split across chunks: only whole lines are parsed.
    const reader = (): ((b: Buffer) => void) => {
      let rest = "";
      return (b) => {
        const lines = (rest + b.toString("utf8")).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) {
          if (line === "") continue;
          output.push(line);
          if (output.length > 2000) output.splice(0, 1000);
          if (!line.includes('"wave webhook started"')) continue;
          let port: unknown;
          try {
            port = (JSON.parse(line) as { port?: unknown }).port;
          } catch {
            continue;
          }
          if (typeof port !== "number") continue;
          clearTimeout(timer);
          resolve({ name, child, port, output, exited });
        }
      };
    };
    child.stdout.on("data", reader());
    child.stderr.on("data", reader());
  });
}

export function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", () => resolve(true));
  });
}

export const running = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null;

/** SIGTERM (a graceful stop, as on a rollout), SIGKILL if still running after 15 s. */
export async function stopChild(c: ChildProcess): Promise<void> {
  if (!running(c)) return;
  const exited = new Promise<void>((ok) => c.once("exit", () => ok()));
  c.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const done = await Promise.race([
    exited.then(() => true),
    new Promise<false>((ok) => (timer = setTimeout(() => ok(false), 15_000))),
  ]);
  clearTimeout(timer);
  if (!done) c.kill("SIGKILL");
}

// ---------------------------------------------------------------------------------------------
// the round-robin front (what a Service spreading over the webhook pods does)

export interface Admission {
  replica: string;
  namespace: string;
  /** The pod's owner (`burst-<hash>` for a Deployment's pods). */
  owner: string;
  dryRun: boolean;
  status: number;
  /** The assignment label Wave's patch sets, if any. */
  assigned: string | undefined;
  warned: boolean;
  /** Time from the request's last byte to the replica's answer. */
  ms: number;
}

export interface RoundRobinFront {
  port: number;
  admissions: Admission[];
  /** Most requests in flight at once (all replicas). */
  maxInFlight: number;
  /** Takes a replica out of the rotation (its endpoint removed). */
  drop(name: string): void;
  close(): Promise<void>;
}

export async function startFront(
  certFile: string,
  keyFile: string,
  caPem: string,
  replicas: readonly Replica[],
): Promise<RoundRobinFront> {
  const [cert, key] = await Promise.all([readFile(certFile), readFile(keyFile)]);
  const agent = new Agent({ keepAlive: true, ca: caPem, maxSockets: 256 });
  const rotation = replicas.map((r) => ({ name: r.name, port: r.port }));
  let next = 0;
  let inFlight = 0;
  const admissions: Admission[] = [];
  // Keep-alive sockets live as long as the webhook's own (65 s): with Node's 5 s default, a socket
  // opened early in a burst can be closed just as a request is written on it (ECONNRESET).
  const server: Server = createServer({ cert, key, keepAliveTimeout: 65_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const target = rotation[next++ % Math.max(1, rotation.length)];
      if (!target) {
        res.writeHead(503);
        res.end();
        return;
      }
      inFlight++;
      f.maxInFlight = Math.max(f.maxInFlight, inFlight);
      const t0 = performance.now();
      httpsRequest(agent, target.port, body, { path: req.url ?? "/", method: req.method ?? "POST" })
        .then(
          (r) => {
            const ms = performance.now() - t0;
            res.writeHead(r.status, {
              "content-type": "application/json",
              "content-length": Buffer.byteLength(r.body),
            });
            res.end(r.body);
            // Only admissions are recorded (health checks pass through).
            if ((req.url ?? "").startsWith("/mutate"))
              admissions.push({ ...exchangeOf(body, r.body), replica: target.name, status: r.status, ms });
          },
          (err: unknown) => {
            // A dead backend: the apiserver sees an error and fails open, as with a dead endpoint.
            res.writeHead(502);
            res.end(JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
          },
        )
        .finally(() => inFlight--);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const f: RoundRobinFront = {
    port: (server.address() as AddressInfo).port,
    admissions,
    maxInFlight: 0,
    drop: (name) => {
      const i = rotation.findIndex((r) => r.name === name);
      if (i >= 0) rotation.splice(i, 1);
    },
    close: async () => {
      agent.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  return f;
}

/** Wave's answer: the assignment and slot labels its patch sets, and whether it warned (fallback). */
export function answerOf(response: string): { assigned?: string; slot?: string; warned: boolean } {
  try {
    const r = (JSON.parse(response) as AdmissionReviewResponse).response;
    const ops =
      r.patch === undefined
        ? []
        : (JSON.parse(Buffer.from(r.patch, "base64").toString("utf8")) as JsonPatchOp[]);
    const label = (key: string): string | undefined => {
      const v =
        ops.find((o) => o.path === `/metadata/labels/${key.replaceAll("/", "~1")}`)?.value ??
        (ops.find((o) => o.path === "/metadata/labels")?.value as Record<string, unknown> | undefined)?.[key];
      return typeof v === "string" ? v : undefined;
    };
    return {
      assigned: label(ASSIGNMENT_LABEL),
      slot: label(SLOT_LABEL),
      warned: (r.warnings ?? []).length > 0,
    };
  } catch {
    return { warned: false }; // not an AdmissionReview answer (a 400): counted by status
  }
}

/** What an exchange was about: the pod's namespace and owner, and Wave's answer. */
function exchangeOf(request: Buffer, response: string): Omit<Admission, "replica" | "status" | "ms"> {
  let review: {
    request?: {
      namespace?: string;
      dryRun?: boolean;
      object?: { metadata?: { ownerReferences?: { name?: string }[] } };
    };
  } = {};
  try {
    review = JSON.parse(request.toString("utf8")) as typeof review;
  } catch {
    // not JSON: recorded with an empty namespace and owner
  }
  const { assigned, warned } = answerOf(response);
  return {
    namespace: review.request?.namespace ?? "",
    owner: review.request?.object?.metadata?.ownerReferences?.[0]?.name ?? "",
    dryRun: review.request?.dryRun === true,
    assigned,
    warned,
  };
}

// ---------------------------------------------------------------------------------------------
// the policy endpoint (what core serves the webhooks: GET with the viewer token, long-poll watch)

export interface PolicyEndpoint {
  url: string;
  /** Replaces the set (new revision); held watches are answered at once. */
  set(policies: SpotPolicy[]): void;
  readonly revision: string;
  close(): Promise<void>;
}

export async function startPolicyEndpoint(
  viewerToken: string,
  initial: SpotPolicy[],
): Promise<PolicyEndpoint> {
  let policies = initial;
  let revision = 1;
  const waiters = new Set<() => void>();
  const body = (): string =>
    JSON.stringify({
      apiVersion: POLICY_SET_API_VERSION,
      kind: "SpotPolicySet",
      revision: `r${revision}`,
      policies,
    });
  const server: HttpServer = createHttpServer((req, res) => {
    const ok = req.method === "GET" && req.headers.authorization === `Bearer ${viewerToken}`;
    if (!ok) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    const q = new URL(req.url ?? "/", "http://x").searchParams;
    const answer = (): void => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(body());
    };
    if (q.get("watch") !== "true" || q.get("revision") !== `r${revision}`) {
      answer();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      waiters.delete(done);
      if (!res.writableEnded && !res.destroyed) answer();
    };
    const timer = setTimeout(done, Number(q.get("timeoutSeconds") ?? "30") * 1000);
    waiters.add(done);
    res.once("close", done);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/policies/spot`,
    set: (next) => {
      policies = next;
      revision++;
      for (const w of [...waiters]) w();
    },
    get revision() {
      return `r${revision}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const w of [...waiters]) w();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
