// The Kubernetes access port: the only way Wave talks to an apiserver. Two adapters implement
// it — `client-node/` (a real cluster) and `memory/` (unit tests and the embedded simulator) —
// with the same semantics: monotonic resourceVersions, watch from a version, 410 Gone for a
// compacted version, label and field selectors.
import type { KindName, KindTypes } from "./kinds.ts";
import type { Status } from "../objects/kube.ts";

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  /** "0" lets the server answer from cache; unset means a consistent read. */
  resourceVersion?: string;
}

export interface ObjectList<T> {
  items: T[];
  /** The list's resourceVersion: start a watch from here. */
  resourceVersion: string;
  continue?: string;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion: string;
  allowWatchBookmarks?: boolean;
  /** Server-side timeout; the stream then ends normally. */
  timeoutSeconds?: number;
}

export type WatchEvent<T> =
  | { type: "ADDED" | "MODIFIED" | "DELETED"; object: T }
  | { type: "BOOKMARK"; object: { metadata: { resourceVersion: string } } }
  | { type: "ERROR"; object: Status };

export type PatchType = "merge" | "strategic" | "json" | "apply";

export interface PatchOptions {
  namespace?: string;
  type?: PatchType;
  /** Required for "apply". */
  fieldManager?: string;
  force?: boolean;
  dryRun?: boolean;
  /**
   * "status": the object's status subresource (…/status). Only `status` of the patch counts;
   * spec and metadata stay as they are, so a status writer never bumps metadata.generation.
   */
  subresource?: "status";
}

export interface WriteOptions {
  namespace?: string;
  dryRun?: boolean;
  fieldManager?: string;
}

export interface DeleteOptions {
  namespace?: string;
  gracePeriodSeconds?: number;
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  /** Precondition: only delete this exact object. */
  uid?: string;
}

export interface KubeClient {
  list<K extends KindName>(kind: K, opts?: ListOptions): Promise<ObjectList<KindTypes[K]>>;
  /**
   * Streams watch events until the server closes the stream, the signal aborts, or an error
   * happens (the iterator then throws a KubeApiError or a network error).
   */
  watch<K extends KindName>(
    kind: K,
    opts: WatchOptions,
    signal?: AbortSignal,
  ): AsyncIterable<WatchEvent<KindTypes[K]>>;
  get<K extends KindName>(kind: K, name: string, namespace?: string): Promise<KindTypes[K]>;
  create<K extends KindName>(kind: K, obj: KindTypes[K], opts?: WriteOptions): Promise<KindTypes[K]>;
  /** Replaces the object (optimistic concurrency through metadata.resourceVersion). */
  replace<K extends KindName>(kind: K, obj: KindTypes[K], opts?: WriteOptions): Promise<KindTypes[K]>;
  patch<K extends KindName>(
    kind: K,
    name: string,
    patch: unknown,
    opts?: PatchOptions,
  ): Promise<KindTypes[K]>;
  delete(kind: KindName, name: string, opts?: DeleteOptions): Promise<void>;
  /**
   * Evicts a pod through the Eviction API (policy/v1), which honours PodDisruptionBudgets: a 429
   * KubeApiError means a budget forbids it right now.
   */
  evict(name: string, namespace: string, opts?: { uid?: string }): Promise<void>;
}

/** An error answered by the apiserver (or the in-memory adapter), with its Status. */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly status: Status;

  constructor(status: Status) {
    super(status.message ?? `Kubernetes API error ${status.code ?? "?"} ${status.reason ?? ""}`.trim());
    this.name = "KubeApiError";
    this.code = status.code ?? 0;
    this.reason = status.reason ?? "";
    this.status = status;
  }

  static is(err: unknown, code?: number): err is KubeApiError {
    return err instanceof KubeApiError && (code === undefined || err.code === code);
  }
}

export const isNotFound = (err: unknown): boolean => KubeApiError.is(err, 404);
export const isConflict = (err: unknown): boolean => KubeApiError.is(err, 409);
export const isGone = (err: unknown): boolean => KubeApiError.is(err, 410);
