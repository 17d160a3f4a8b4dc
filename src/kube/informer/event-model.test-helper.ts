// Test helper: replays informer events into a model that refuses impossible sequences.
import assert from "node:assert/strict";
import type { Informer } from "./informer.ts";
import type { KindName } from "../kinds.ts";
import type { KubeObject } from "../../objects/kube.ts";

/**
 * Replays informer events into a model, failing on any impossible sequence: an add for a key
 * already present (a duplicate) or an update/delete for a key never added (a lost add).
 */
export class EventModel<T extends KubeObject> {
  readonly objects = new Map<string, T>();
  readonly counts = new Map<string, { add: number; update: number; delete: number }>();
  readonly log: string[] = [];

  attach<K extends KindName>(inf: Informer<K>): this {
    const key = (o: KubeObject): string =>
      (o.metadata.namespace ? `${o.metadata.namespace}/` : "") + (o.metadata.name ?? "");
    const count = (k: string): { add: number; update: number; delete: number } => {
      let c = this.counts.get(k);
      if (!c) this.counts.set(k, (c = { add: 0, update: 0, delete: 0 }));
      return c;
    };
    inf.on("add", (o) => {
      const k = key(o);
      assert.ok(!this.objects.has(k), `duplicate add for ${k}`);
      this.objects.set(k, o as unknown as T);
      count(k).add++;
      this.log.push(`add ${k}`);
    });
    inf.on("update", (o, old) => {
      const k = key(o);
      assert.ok(this.objects.has(k), `update for unknown ${k}`);
      assert.equal(
        this.objects.get(k)?.metadata.resourceVersion,
        old.metadata.resourceVersion,
        `stale old for ${k}`,
      );
      this.objects.set(k, o as unknown as T);
      count(k).update++;
      this.log.push(`update ${k}`);
    });
    inf.on("delete", (o) => {
      const k = key(o);
      assert.ok(this.objects.has(k), `delete for unknown ${k}`);
      this.objects.delete(k);
      count(k).delete++;
      this.log.push(`delete ${k}`);
    });
    return this;
  }

  /** name → resourceVersion, sorted. */
  versions(): Record<string, string> {
    return versionsOf([...this.objects.values()]);
  }
}

/** namespace/name → resourceVersion, sorted by key. */
export function versionsOf(objs: readonly KubeObject[]): Record<string, string> {
  const entries = objs.map((o): [string, string] => [
    (o.metadata.namespace ? `${o.metadata.namespace}/` : "") + (o.metadata.name ?? ""),
    o.metadata.resourceVersion ?? "",
  ]);
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
