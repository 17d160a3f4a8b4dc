// Pure request building for the apiserver's REST layout: paths, query strings, patch types.
import { KINDS, type KindName } from "../kinds.ts";
import type { PatchType } from "../port.ts";

/** /api/v1/namespaces/ns/pods/name, /apis/karpenter.sh/v1/nodepools, … */
export function resourcePath(kind: KindName, namespace?: string, name?: string): string {
  const k = KINDS[kind];
  let path = k.group === "" ? `/api/${k.version}` : `/apis/${k.group}/${k.version}`;
  if (k.namespaced && namespace !== undefined && namespace !== "") {
    path += `/namespaces/${encodeURIComponent(namespace)}`;
  }
  path += `/${k.plural}`;
  if (name !== undefined) {
    if (name === "") throw new Error(`a ${k.kind} name must not be empty`);
    path += `/${encodeURIComponent(name)}`;
  }
  return path;
}

/** A query string ("" or "?a=b&c=d") from defined, non-empty values. */
export function queryString(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === "") continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s === "" ? "" : `?${s}`;
}

export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
  json: "application/json-patch+json",
  // The apiserver parses apply bodies as YAML, and JSON is YAML.
  apply: "application/apply-patch+yaml",
};

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Expired",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** The Status reason the apiserver uses for an HTTP code (for bodies that are not a Status). */
export function reasonForCode(code: number): string {
  return REASONS[code] ?? "Unknown";
}
