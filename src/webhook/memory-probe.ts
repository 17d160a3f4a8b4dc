// A webhook server with its default limits (but one address's cap) in a process of its own, reporting its RSS over IPC:
// the child of server-memory.test.ts (issue 32: 120 slow 3 MiB connections must not take the
// webhook's memory). Messages in: "baseline" (GC, then measure from here), "report". Out: the port
// and CA once listening, then { baseline, peak, now } for each "report".
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryKube } from "../kube/memory/memory.ts";
import { FakeClock } from "../shared/clock.ts";
import { SlotAllocator } from "./allocator.ts";
import { generateDevCerts } from "./certs.ts";
import { InMemoryPolicySource } from "./policy-source.ts";
import { DEFAULT_SERVER_LIMITS, startWebhookServer } from "./server.ts";

const send = (m: unknown): void => void process.send?.(m);
const dir = await mkdtemp(join(tmpdir(), "wave-webhook-memory-"));
const certs = await generateDevCerts({ dir, hosts: ["localhost", "127.0.0.1"] });
const clock = new FakeClock();
const server = await startWebhookServer({
  certFile: certs.certFile,
  keyFile: certs.keyFile,
  host: "127.0.0.1",
  policies: new InMemoryPolicySource({
    apiVersion: "wave.sh/v1alpha1",
    kind: "SpotPolicySet",
    policies: [
      { workload: { namespace: "shop", kind: "Deployment", name: "web" }, threshold: 1, strategy: "Prefer" },
    ],
  }),
  allocator: new SlotAllocator({ kube: new MemoryKube({ clock }), namespace: "wave", clock }),
  clock,
  // All 120 connections come from 127.0.0.1: lifted per address, the memory bound is what is
  // measured (it must hold for as many addresses; issue 42 caps one address at 32).
  limits: { maxConnectionsPerAddress: DEFAULT_SERVER_LIMITS.maxConnections },
});

let baseline = process.memoryUsage().rss;
let peak = baseline;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
process.on("message", (m) => {
  if (m === "baseline") {
    (globalThis as { gc?: () => void }).gc?.();
    baseline = process.memoryUsage().rss;
    peak = baseline;
    send({ baseline });
  } else if (m === "report") send({ baseline, peak, now: process.memoryUsage().rss });
});
process.on("disconnect", () => {
  clearInterval(sampler);
  void server.close().then(() => rm(dir, { recursive: true, force: true }));
});
send({ port: server.port, ca: certs.caPem });
