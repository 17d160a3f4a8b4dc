// Status errors shaped exactly like the apiserver's, so callers' isNotFound/isConflict/isGone
// checks and messages behave the same against the in-memory adapter and a real cluster.
import { KINDS, type KindName } from "../kinds.ts";
import { KubeApiError } from "../port.ts";
import type { Status } from "../../objects/kube.ts";

export function statusError(code: number, reason: string, message: string): KubeApiError {
  const status: Status = { apiVersion: "v1", kind: "Status", status: "Failure", message, reason, code };
  return new KubeApiError(status);
}

/** "pods" or "nodepools.karpenter.sh", as the apiserver names a resource in messages. */
export function resourceName(kind: KindName): string {
  const k = KINDS[kind];
  return k.group === "" ? k.plural : `${k.plural}.${k.group}`;
}

export const notFound = (kind: KindName, name: string): KubeApiError =>
  statusError(404, "NotFound", `${resourceName(kind)} "${name}" not found`);

export const alreadyExists = (kind: KindName, name: string): KubeApiError =>
  statusError(409, "AlreadyExists", `${resourceName(kind)} "${name}" already exists`);

export const conflict = (kind: KindName, name: string, detail?: string): KubeApiError =>
  statusError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${resourceName(kind)} "${name}": ${
      detail ?? "the object has been modified; please apply your changes to the latest version and try again"
    }`,
  );

export const badRequest = (message: string): KubeApiError => statusError(400, "BadRequest", message);

export const invalid = (kind: KindName, name: string, detail: string): KubeApiError =>
  statusError(422, "Invalid", `${KINDS[kind].kind} "${name}" is invalid: ${detail}`);

export const gone = (message: string): KubeApiError => statusError(410, "Expired", message);
