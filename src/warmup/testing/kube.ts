// The in-memory apiserver (src/kube/memory) with two test conveniences: a log of writes and a
// gate every create awaits, so a test can hold creates open and see how many run at once, and the
// cluster state (src/state) the warmup controller reads, kept in step.
import type { KindName, KindTypes } from "../../kube/kinds.ts";
import type { WriteOptions } from "../../kube/port.ts";
import { MemoryKube } from "../../kube/memory/memory.ts";
import type { Clock } from "../../shared/clock.ts";
import { ClusterState } from "../../state/cluster.ts";
import { mirrorInto } from "../../state/follow.ts";
import { project } from "../../state/projection.ts";

export interface Call {
  op: string;
  kind: KindName;
  name: string;
}

export class TestKube extends MemoryKube {
  readonly calls: Call[] = [];
  createGate: (() => Promise<void>) | undefined;
  /**
   * The cluster state the agent's informers would keep, in step with every write: the agent's
   * projection (bound pods reduced to what warmup reads, ADR 0021), so warmup is tested on it.
   */
  readonly state = new ClusterState();

  constructor(clock: Clock) {
    super({ clock });
    mirrorInto(this, this.state, project);
    this.inject((req) => {
      if (req.op !== "list" && req.op !== "get" && req.op !== "watch") {
        this.calls.push({ op: req.op, kind: req.kind, name: req.name ?? "" });
      }
      return undefined;
    });
  }

  override async create<K extends KindName>(
    kind: K,
    obj: KindTypes[K],
    opts?: WriteOptions,
  ): Promise<KindTypes[K]> {
    if (this.createGate) await this.createGate();
    return super.create(kind, obj, opts);
  }

  /** Every object of a kind, all namespaces. */
  async all<K extends KindName>(kind: K): Promise<KindTypes[K][]> {
    return (await this.list(kind)).items;
  }
}
