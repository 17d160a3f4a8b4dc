// E2E helpers for the policy CRs (issue 31): the CRDs (crd's installer), and a core + agent in this
// process against the rig — the agent with a real client, so its edits are server-side applied by
// the rig's apiserver.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { runAgent, type RunningAgent } from "../../src/agent/run.ts";
import { build } from "../../src/api/app.ts";
import { policyRoutes } from "../../src/api/routes/policies.ts";
import { policyCrAccess, startPolicySync } from "../../src/cli/parts.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { IngestCore } from "../../src/core/ingest/core.ts";
import { startIngestServer } from "../../src/core/ingest/server.ts";
import { openStore } from "../../src/core/store/open.ts";
import type { Store } from "../../src/core/store/store.ts";
import { clientFromKubeconfig } from "../../src/kube/clientnode/kubeconfig.ts";
import { realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { kubeconfigPath, waitFor } from "./harness.ts";
import { installWaveCrds } from "./wave-crds.ts";

/** Wave's CRDs on the rig: crd's installer (test/e2e/wave-crds.ts), the one source of them. */
export const ensurePolicyCrds = installWaveCrds;

export const ADMIN_TOKEN = "e2e-admin-token";

/** A core (SQLite in `dataDir`, or a temporary one) + an agent streaming the rig, in this process. */
export async function startCoreAndAgent(clusterId: string, dataDir?: string) {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), "wave-crdsync-e2e-")));
  const store: Store = await openStore(
    { backend: "sqlite", path: join(dir, "wave.db") },
    { log: silentLogger },
  );
  const hub = new ClusterHub(store, realClock);
  const ingest = new IngestCore({ sink: hub, coreVersion: "e2e" });
  const crs = policyCrAccess(hub, ingest.edits);
  const stopSync = startPolicySync({
    store,
    hub,
    edits: ingest.edits,
    crs,
    clock: realClock,
    log: silentLogger,
  });
  const server = await startIngestServer({ core: ingest, port: 0, host: "127.0.0.1", tokens: ["e2e-agent"] });
  const agent: RunningAgent = await runAgent({
    kube: clientFromKubeconfig(kubeconfigPath),
    coreUrl: `http://127.0.0.1:${server.port}`,
    token: "e2e-agent",
    clusterId,
    agentVersion: "e2e",
    log: silentLogger,
    backoff: { initialMs: 200, maxMs: 1000, jitter: "none" },
  });
  const app: FastifyInstance = await build({
    tokens: { admin: ADMIN_TOKEN, viewer: "e2e-viewer-token" },
    plugins: [policyRoutes({ store, defaultClusterId: clusterId, crs })],
  });
  await waitFor("the agent streaming", () => Promise.resolve(agent.agent.status === "streaming"));
  return {
    clusterId,
    store,
    hub,
    app,
    agent,
    stop: async (): Promise<void> => {
      await app.close();
      await agent.stop();
      await stopSync();
      await server.close();
      await store.close();
      if (dataDir === undefined) await rm(dir, { recursive: true, force: true });
    },
  };
}
