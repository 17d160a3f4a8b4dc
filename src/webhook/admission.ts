// admission.k8s.io/v1 AdmissionReview wire shapes, their validation, and response builders.
import type { Pod } from "../objects/kube.ts";

export const ADMISSION_API_VERSION = "admission.k8s.io/v1";

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}
export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface AdmissionRequest {
  uid: string;
  kind?: GroupVersionKind;
  resource?: GroupVersionResource;
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: GroupVersionResource;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation?: string;
  userInfo?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
  options?: unknown;
}

export interface AdmissionReviewRequest {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: "AdmissionReview";
  request: AdmissionRequest;
}

export interface JsonPatchOp {
  op: "add" | "replace" | "remove";
  path: string;
  value?: unknown;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: "JSONPatch";
  /** base64 of the JSON Patch document. */
  patch?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export interface AdmissionReviewResponse {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: "AdmissionReview";
  response: AdmissionResponse;
}

export class BadReviewError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BadReviewError";
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const show = (v: unknown): string => (v === undefined ? "nothing" : JSON.stringify(v));

/**
 * Checks the envelope the apiserver always sends. Only what a response cannot be built without is
 * an error (→ HTTP 400); odd optional fields are tolerated and the pod is then left unchanged.
 */
export function parseAdmissionReview(body: unknown): AdmissionReviewRequest {
  if (!isRecord(body)) throw new BadReviewError("body must be a JSON object (an AdmissionReview)");
  if (body.kind !== "AdmissionReview")
    throw new BadReviewError(`kind must be "AdmissionReview", got ${show(body.kind)}`);
  if (body.apiVersion !== ADMISSION_API_VERSION)
    throw new BadReviewError(
      `apiVersion must be "${ADMISSION_API_VERSION}" (admissionReviewVersions: [v1]), got ${show(body.apiVersion)}`,
    );
  const request = body.request;
  if (!isRecord(request)) throw new BadReviewError("request must be an object");
  if (typeof request.uid !== "string" || request.uid === "" || request.uid.length > 256)
    throw new BadReviewError("request.uid must be a non-empty string");
  return {
    apiVersion: ADMISSION_API_VERSION,
    kind: "AdmissionReview",
    request: request as unknown as AdmissionRequest,
  };
}

/** Whether the request creates a pod (and not a subresource such as pods/binding). */
export function isPodCreate(req: AdmissionRequest): boolean {
  const k = req.kind;
  const r = req.resource;
  return (
    isRecord(k) &&
    k.group === "" &&
    k.kind === "Pod" &&
    isRecord(r) &&
    r.group === "" &&
    r.resource === "pods" &&
    (req.subResource === undefined || req.subResource === "") &&
    req.operation === "CREATE"
  );
}

const isStringMap = (v: unknown): boolean =>
  v === undefined || (isRecord(v) && Object.values(v).every((x) => typeof x === "string"));

/**
 * Whether the object is shaped like a Pod along every path the patch builder reads or writes
 * (the apiserver always sends valid pods; anything else is left unchanged rather than guessed at).
 */
export function isPatchablePod(obj: unknown): obj is Pod {
  if (!isRecord(obj) || !isRecord(obj.metadata) || !isRecord(obj.spec)) return false;
  const { metadata, spec } = obj;
  if (!isStringMap(metadata.labels) || !isStringMap(metadata.annotations)) return false;
  if (metadata.ownerReferences !== undefined && !Array.isArray(metadata.ownerReferences)) return false;
  if (!isStringMap(spec.nodeSelector)) return false;
  if (spec.affinity === undefined) return true;
  if (!isRecord(spec.affinity)) return false;
  const na = spec.affinity.nodeAffinity;
  if (na === undefined) return true;
  if (!isRecord(na)) return false;
  const req = na.requiredDuringSchedulingIgnoredDuringExecution;
  if (req !== undefined) {
    if (!isRecord(req)) return false;
    if (req.nodeSelectorTerms !== undefined) {
      if (!Array.isArray(req.nodeSelectorTerms)) return false;
      for (const t of req.nodeSelectorTerms as unknown[]) {
        if (!isRecord(t)) return false;
        if (t.matchExpressions !== undefined && !isRequirementList(t.matchExpressions)) return false;
      }
    }
  }
  const pref = na.preferredDuringSchedulingIgnoredDuringExecution;
  if (pref !== undefined) {
    if (!Array.isArray(pref)) return false;
    for (const p of pref as unknown[]) {
      if (!isRecord(p) || !isRecord(p.preference)) return false;
      if (p.preference.matchExpressions !== undefined && !isRequirementList(p.preference.matchExpressions))
        return false;
    }
  }
  return true;
}

function isRequirementList(v: unknown): boolean {
  return (
    Array.isArray(v) &&
    v.every(
      (r: unknown) =>
        isRecord(r) &&
        typeof r.key === "string" &&
        typeof r.operator === "string" &&
        (r.values === undefined || (Array.isArray(r.values) && r.values.every((x) => typeof x === "string"))),
    )
  );
}

export function admissionResponse(
  uid: string,
  ops: JsonPatchOp[] = [],
  warnings: string[] = [],
): AdmissionReviewResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (ops.length > 0) {
    response.patchType = "JSONPatch";
    response.patch = Buffer.from(JSON.stringify(ops)).toString("base64");
  }
  if (warnings.length > 0) response.warnings = warnings;
  return { apiVersion: ADMISSION_API_VERSION, kind: "AdmissionReview", response };
}
