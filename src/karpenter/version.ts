// Which Karpenter a cluster runs, read from its controller pods: the agent already streams every
// pod (labels and images kept), so no extra permission is needed. The Karpenter Helm chart labels
// its pods app.kubernetes.io/name=karpenter and tags the controller image with the release
// (`…/karpenter/controller:1.8.2@sha256:…`); a version label, when present, wins.
import type { Pod } from "../objects/kube.ts";

const NAME_LABEL = "app.kubernetes.io/name";
const VERSION_LABEL = "app.kubernetes.io/version";

/** True for a pod of a Karpenter controller Deployment. */
export function isKarpenterPod(pod: Pod): boolean {
  return pod.metadata.labels?.[NAME_LABEL] === "karpenter" || pod.spec.containers.some(isControllerImage);
}

/** The Karpenter version a controller pod runs, or undefined when it cannot tell. */
export function karpenterVersionOfPod(pod: Pod): string | undefined {
  if (!isKarpenterPod(pod)) return undefined;
  const label = pod.metadata.labels?.[VERSION_LABEL];
  if (label) return withV(label);
  const image = pod.spec.containers.find(isControllerImage)?.image;
  const tag = image ? imageTag(image) : undefined;
  return tag && /^v?\d+\.\d+/.test(tag) ? withV(tag) : undefined;
}

/** The newest version among the cluster's Karpenter pods (mid-upgrade both may run). */
export function karpenterVersion(pods: Iterable<Pod>): string | undefined {
  const versions: string[] = [];
  for (const p of pods) {
    const v = karpenterVersionOfPod(p);
    if (v) versions.push(v);
  }
  return newestVersion(versions);
}

/** The highest of `versions` (numeric per dot-separated part: 1.10 > 1.9). */
export function newestVersion(versions: Iterable<string>): string | undefined {
  let best: string | undefined;
  for (const v of versions) if (!best || compareVersions(v, best) > 0) best = v;
  return best;
}

function isControllerImage(c: { image?: string }): boolean {
  const repo = c.image ? repository(c.image) : "";
  return /(^|\/)karpenter\/controller$/.test(repo);
}

/** `host/path/name:tag@sha256:…` → `host/path/name` (a registry port is not a tag). */
function repository(image: string): string {
  const noDigest = image.split("@")[0] ?? "";
  const slash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

function imageTag(image: string): string | undefined {
  const noDigest = image.split("@")[0] ?? "";
  const slash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > slash ? noDigest.slice(colon + 1) : undefined;
}

const withV = (v: string): string => (v.startsWith("v") ? v : `v${v}`);

function compareVersions(a: string, b: string): number {
  const pa = a.replace(/^v/, "").split(/[.-]/);
  const pb = b.replace(/^v/, "").split(/[.-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = Number(pa[i] ?? 0);
    const y = Number(pb[i] ?? 0);
    if (Number.isFinite(x) && Number.isFinite(y) && x !== y) return x - y;
  }
  return 0;
}
