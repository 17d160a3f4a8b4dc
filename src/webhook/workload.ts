// Which workload a pod belongs to, from its ownerReferences — no apiserver round trip.
import type { OwnerReference, Pod } from "../objects/kube.ts";
import { POD_TEMPLATE_HASH_LABEL } from "./constants.ts";
import type { WorkloadRef } from "../policy/spot.ts";

export type WorkloadResolution =
  { managed: true; candidates: WorkloadRef[] } | { managed: false; reason: string };

function controllerOf(pod: Pod): OwnerReference | undefined {
  const refs = Array.isArray(pod.metadata.ownerReferences) ? pod.metadata.ownerReferences : [];
  return refs.find(
    (r: unknown) => typeof r === "object" && r !== null && (r as OwnerReference).controller === true,
  );
}

/**
 * Resolves the workload(s) whose policy may govern the pod, most specific owner last:
 * a ReplicaSet whose name is `<deployment>-<pod-template-hash>` yields the Deployment first, then
 * the ReplicaSet itself (a bare ReplicaSet may have its own policy). Jobs, DaemonSets, bare pods
 * and other controllers are not managed: their pods are admitted unchanged.
 */
export function resolveWorkload(pod: Pod, namespace: string): WorkloadResolution {
  const owner = controllerOf(pod);
  if (!owner) return { managed: false, reason: "pod has no controller" };
  if (typeof owner.name !== "string" || owner.name === "" || typeof owner.apiVersion !== "string")
    return { managed: false, reason: "malformed ownerReference" };
  const group = owner.apiVersion.includes("/") ? owner.apiVersion.split("/")[0] : "";
  if (group !== "apps") return { managed: false, reason: `controller ${owner.kind} is not managed` };
  switch (owner.kind) {
    case "StatefulSet":
      return { managed: true, candidates: [{ namespace, kind: "StatefulSet", name: owner.name }] };
    case "ReplicaSet": {
      const rs: WorkloadRef = { namespace, kind: "ReplicaSet", name: owner.name };
      const hash = pod.metadata.labels?.[POD_TEMPLATE_HASH_LABEL];
      const suffix = `-${hash ?? ""}`;
      if (
        typeof hash === "string" &&
        hash !== "" &&
        owner.name.endsWith(suffix) &&
        owner.name.length > suffix.length
      ) {
        const deployment = owner.name.slice(0, -suffix.length);
        return { managed: true, candidates: [{ namespace, kind: "Deployment", name: deployment }, rs] };
      }
      return { managed: true, candidates: [rs] };
    }
    default:
      return { managed: false, reason: `controller ${owner.kind} is not managed` };
  }
}
