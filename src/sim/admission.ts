// Wave's spot-placement admission applied in-process to the pods the simulator creates: the
// same review() the HTTPS webhook answers with, its JSON patch applied to the pod.
import { randomUUID } from "node:crypto";
import { jsonPatch } from "../kube/memory/patch.ts";
import type { Pod } from "../objects/kube.ts";
import type { AdmissionRequest } from "../webhook/admission.ts";
import { review, type ReviewDeps } from "../webhook/review.ts";

export function webhookAdmission(deps: ReviewDeps): (pod: Pod) => Promise<Pod> {
  return async (pod) => {
    const req: AdmissionRequest = {
      uid: randomUUID(),
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      requestKind: { group: "", version: "v1", kind: "Pod" },
      requestResource: { group: "", version: "v1", resource: "pods" },
      namespace: pod.metadata.namespace ?? "default",
      operation: "CREATE",
      userInfo: { username: "system:serviceaccount:kube-system:replicaset-controller" },
      object: pod,
      dryRun: false,
    };
    const res = await review(req, deps);
    const patch = res.response.patch;
    if (!patch) return pod;
    const ops = JSON.parse(Buffer.from(patch, "base64").toString("utf8")) as unknown[];
    return jsonPatch(pod, ops) as Pod;
  };
}
