// Pure cache bookkeeping for the informer: object keys and the diff between a cache and a fresh
// list, so a relist after 410 Gone emits exactly what changed — nothing lost, nothing doubled.
import type { KubeObject } from "../../objects/kube.ts";
import { namespacedKey } from "../../objects/keys.ts";

export const objectKey = (obj: KubeObject): string =>
  obj.metadata.namespace
    ? namespacedKey(obj.metadata.namespace, obj.metadata.name ?? "")
    : (obj.metadata.name ?? "");

export type Change<T> =
  { type: "add"; obj: T } | { type: "update"; obj: T; old: T } | { type: "delete"; obj: T };

/**
 * What turns `cache` into `fresh`: adds for new keys, updates where the resourceVersion moved,
 * deletes (with the last known state) for keys that are gone. Ordered by key for determinism.
 */
export function diffCache<T extends KubeObject>(
  cache: ReadonlyMap<string, T>,
  fresh: readonly T[],
): Change<T>[] {
  const seen = new Set<string>();
  return [...diffPage(cache, fresh, seen), ...gone(cache, seen)];
}

/**
 * One page of a list against the cache: adds and updates only (ordered by key); the page's keys
 * go into `seen`, for `gone` once the last page is in.
 */
export function diffPage<T extends KubeObject>(
  cache: ReadonlyMap<string, T>,
  fresh: readonly T[],
  seen: Set<string>,
): Change<T>[] {
  const changes: Change<T>[] = [];
  for (const obj of [...fresh].sort((a, b) => cmp(objectKey(a), objectKey(b)))) {
    const key = objectKey(obj);
    seen.add(key);
    const old = cache.get(key);
    if (old === undefined) changes.push({ type: "add", obj });
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion)
      changes.push({ type: "update", obj, old });
  }
  return changes;
}

/** Deletes (with the last known state) for the cached keys a complete list did not have. */
export function gone<T extends KubeObject>(
  cache: ReadonlyMap<string, T>,
  seen: ReadonlySet<string>,
): Change<T>[] {
  const changes: Change<T>[] = [];
  for (const key of [...cache.keys()].sort(cmp)) {
    const old = cache.get(key);
    if (old !== undefined && !seen.has(key)) changes.push({ type: "delete", obj: old });
  }
  return changes;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
