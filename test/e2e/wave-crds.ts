// Wave's CRDs on the shared rig, for every e2e file that needs them (policy-crds, crdsync's): the
// CRDs from their one source (deploy/helm/wave-crds/templates) and the aggregated policy roles as
// the wave chart renders them, applied server-side — idempotent, safe when several files (or
// engineers) install them at once — then waited on until the apiserver serves them.
import { join } from "node:path";
import { repoRoot } from "../../hack/rig/lib.ts";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { kubectl } from "./harness.ts";

const run = promisify(execFile);
const CRD_DIR = join(repoRoot, "deploy/helm/wave-crds/templates");

export const WAVE_CRDS = ["spotpolicies.wave.sh", "warmuppolicies.wave.sh"] as const;

/** Applies Wave's CRDs and waits until they are Established. */
export async function installWaveCrds(): Promise<void> {
  await kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "--field-manager=wave-e2e-crds",
    "-f",
    CRD_DIR,
  ]);
  await kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    ...WAVE_CRDS.map((c) => `crd/${c}`),
  ]);
}

/** Applies the chart's aggregated ClusterRoles wave-policy-view / wave-policy-edit. */
export async function installPolicyRoles(): Promise<void> {
  const helm = join(repoRoot, ".rig/bin/helm");
  const { stdout } = await run(helm, [
    "template",
    "wave",
    join(repoRoot, "deploy/helm/wave"),
    "--namespace",
    "wave",
    "--kube-version",
    "1.33.0",
    "--api-versions",
    "karpenter.sh/v1/NodePool",
    "--api-versions",
    "cert-manager.io/v1/Certificate",
    "--show-only",
    "templates/policy-roles.yaml",
  ]);
  await kubectl(
    ["apply", "--server-side", "--force-conflicts", "--field-manager=wave-e2e-crds", "-f", "-"],
    stdout,
  );
}
