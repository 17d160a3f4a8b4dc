// Runs one server under test in a worker thread, so the load generator (main thread) and the
// server do not share an event loop: "wave" is the real webhook (in-memory apiserver, real slot
// ledger), "baseline" a bare node:https server that reads the body and returns a fixed patch.
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { parentPort, workerData } from "node:worker_threads";
import { MemoryKube } from "../../src/kube/memory/memory.ts";
import { realClock } from "../../src/shared/clock.ts";
import { admissionResponse } from "../../src/webhook/admission.ts";
import { SlotAllocator } from "../../src/webhook/allocator.ts";
import { buildPatch } from "../../src/webhook/patch.ts";
import { InMemoryPolicySource } from "../../src/webhook/policy-source.ts";
import { startWebhookServer } from "../../src/webhook/server.ts";
import { fixturePod } from "../../src/webhook/test-helpers.ts";

export interface WorkerInput {
  mode: "wave" | "baseline";
  certFile: string;
  keyFile: string;
  workloads: number;
  threshold: number;
}

const input = workerData as WorkerInput;
const port = parentPort;
if (!port) throw new Error("run as a worker");

async function start(): Promise<{ port: number; close: () => Promise<void> }> {
  if (input.mode === "wave") {
    const policies = new InMemoryPolicySource({
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicySet",
      policies: Array.from({ length: input.workloads }, (_, i) => ({
        workload: { namespace: "shop", kind: "Deployment" as const, name: `web${i}` },
        threshold: input.threshold,
        strategy: "Prefer" as const,
      })),
    });
    const allocator = new SlotAllocator({ kube: new MemoryKube(), namespace: "wave", clock: realClock });
    return startWebhookServer({
      certFile: input.certFile,
      keyFile: input.keyFile,
      host: "127.0.0.1",
      policies,
      allocator,
    });
  }
  // The same answer size as Wave's: a spot preference plus labels.
  const fixed = JSON.stringify(
    admissionResponse(
      "00000000-0000-4000-8000-000000000000",
      buildPatch(
        fixturePod("deployment-pod-generatename"),
        { capacity: "spot", slot: "0123456789abcdef0123", ledger: "0123456789abcdef0123" },
        "Prefer",
      ),
    ),
  );
  const server = createServer(
    { cert: readFileSync(input.certFile), key: readFileSync(input.keyFile), keepAliveTimeout: 65_000 },
    (req, res) => {
      req.on("data", () => undefined);
      req.on("end", () => {
        res.writeHead(200, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(fixed),
        });
        res.end(fixed);
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

const server = await start();
port.postMessage({ port: server.port });
port.on("message", (msg: unknown) => {
  if (msg === "close") void server.close().then(() => process.exit(0));
});
