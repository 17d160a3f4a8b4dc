// Shared by the tests that run core, a real agent and the in-memory apiserver in one process
// (policy-sync, policy-migration): the agent as they start it, and a SpotPolicy applied from Git.
import { runAgent, type RunningAgent } from "../agent/run.ts";
import type { MemoryKube } from "../kube/memory/memory.ts";
import { silentLogger } from "../shared/log.ts";

export const AGENT_TOKEN = "agent-token";

/** Cluster c1's agent over `kube`, streaming to the ingest server on `port` (quick retries). */
export function startTestAgent(kube: MemoryKube, port: number): Promise<RunningAgent> {
  return runAgent({
    kube,
    coreUrl: `http://127.0.0.1:${String(port)}`,
    token: AGENT_TOKEN,
    clusterId: "c1",
    agentVersion: "0.1.0",
    log: silentLogger,
    backoff: { initialMs: 100, maxMs: 200, jitter: "none" },
  });
}

/** The SpotPolicy of Deployment shop/`name` (threshold 1, Require) as Argo CD applies it from Git. */
export async function applyFromGit(kube: MemoryKube, name: string): Promise<void> {
  await kube.patch(
    "SpotPolicy",
    name,
    {
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicy",
      metadata: { name, namespace: "shop" },
      spec: { targetRef: { kind: "Deployment", name }, threshold: 1, strategy: "Require" },
    },
    { namespace: "shop", type: "apply", fieldManager: "argocd-controller" },
  );
}

/** The spec a SpotPolicy of Deployment `name` carries for `fields` (the repair On unless they say). */
export const deploymentSpec = (
  name: string,
  fields: { threshold: number; strategy: string; percentAboveBase?: number },
) => ({
  targetRef: { kind: "Deployment", name },
  ...fields,
  repair: "On",
});
