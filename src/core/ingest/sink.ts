// Where ingested data goes to be durable. Core acknowledges a sequence to the agent only after
// `write` for the batch that contains it has resolved; the history store implements this
// interface (one transaction per batch), MemorySink serves tests and the benchmark.
import type { WireKind, WireObject } from "../../wire/wire.ts";
import { objectKey } from "../../wire/wire.ts";
import type { LifecycleEvent, OpenNodeClaim } from "../lifecycle/derive.ts";
import { ClusterState } from "../../state/cluster.ts";

export interface ClusterInfo {
  clusterId: string;
  kubernetesVersion: string;
  karpenterVersion: string;
  agentVersion: string;
  sessionId: string;
  /** Unix ms. */
  connectedAt: number;
}

/** Which bound a refused stream hit (the `reason` label of wave_ingest_rejected_total). */
export type RejectionBound =
  | "snapshot_objects"
  | "chunk_decoded"
  | "snapshot_duration"
  | "object_bytes"
  | "object_decoded"
  /** A name or label the apiserver would refuse (DNS-1123 per kind; issue 42). */
  | "object_name";

/** Core refused a cluster's snapshot or object: when, which bound, and the figures (one line). */
export interface IngestRejection {
  /** Unix ms. */
  at: number;
  bound: RejectionBound;
  /** What the agent is told, e.g. "snapshot exceeds 2000000 objects; rejected". */
  message: string;
}

export interface IngestChange {
  op: "upsert" | "delete";
  kind: WireKind;
  /** namespace/name (or name). */
  key: string;
  /** The object (for a delete: its last known state). */
  object: WireObject["object"];
  /** When the agent saw the change (unix ms). */
  observedAt: number;
}

export interface IngestBatch {
  clusterId: string;
  sessionId: string;
  /** Highest agent sequence this batch completes; acknowledged once `write` resolves. */
  sequence: number;
  /** Unix ms. */
  receivedAt: number;
  /**
   * Objects of a snapshot, applied before `changes`. Core streams a snapshot over several batches
   * (ADR 0020; `snapshotPart` says which); without `snapshotPart` these are the whole snapshot.
   */
  snapshot?: readonly WireObject[];
  /**
   * Which part of a streamed snapshot `snapshot` is: `first` opens it (the cluster's objects are
   * being replaced), `last` completes it (what it did not carry is gone from the state).
   */
  snapshotPart?: { first: boolean; last: boolean };
  changes: readonly IngestChange[];
  /**
   * Lifecycle steps derived from this batch. Ids are stable: a step seen again after a core
   * restart has the same id, so the store should keep the first and ignore repeats.
   */
  lifecycle: readonly LifecycleEvent[];
}

/** The batch opens a snapshot: the cluster's objects are being replaced from here. */
export const snapshotStarts = (b: IngestBatch): boolean =>
  b.snapshot !== undefined && (b.snapshotPart?.first ?? true);

/** The batch completes a snapshot: the state is the cluster's complete state again. */
/** Whether a batch carries any object of `kind` (a change, or a part of a snapshot). */
export const batchTouches = (b: IngestBatch, kind: string): boolean =>
  b.changes.some((c) => c.kind === kind) || (b.snapshot ?? []).some((o) => o.kind === kind);

export const snapshotCompletes = (b: IngestBatch): boolean =>
  b.snapshot !== undefined && (b.snapshotPart?.last ?? true);

export interface IngestSink {
  /**
   * The cluster's model. Ingest applies each batch to it (its only writer) before `write`, and
   * derives the batch's lifecycle steps from the changes it reports.
   */
  state(clusterId: string): ClusterState;
  /** A cluster's agent said hello (record versions, last seen). */
  clusterConnected(info: ClusterInfo): Promise<void>;
  /**
   * The cluster's stream ended and no newer stream replaced it: what core holds for the cluster
   * is no longer live until the next `clusterConnected`.
   */
  clusterDisconnected?(clusterId: string): void;
  /**
   * The cluster's only stream ended before it ever delivered a snapshot: the id was a throwaway
   * (a typo, a probe) and should not stay listed.
   */
  clusterForgotten?(clusterId: string): void;
  /**
   * Core refused what the cluster's agent sent (a bound was hit; the stream ends). Listed as
   * rejected until a later snapshot is accepted, so a refusal is never silent.
   */
  clusterRejected?(clusterId: string, rejection: IngestRejection): void;
  /**
   * Stores the batch durably (all or nothing); rejects if it could not. Its objects are already
   * in `state`: the sink stores what history needs (lifecycle steps, the checkpoint).
   */
  write(batch: IngestBatch): Promise<void>;
  /**
   * The cluster's NodeClaims the sink holds as alive (lifecycle steps, no Terminated). Core asks
   * once per cluster after it starts, so claims deleted while it was down get their Terminated
   * step when the agent's first snapshot lacks them.
   */
  openNodeClaims?(clusterId: string): Promise<OpenNodeClaim[]>;
}

/** In-memory sink: the same contract, with a gate and a failure switch for tests. */
export class MemorySink implements IngestSink {
  readonly clusters = new Map<string, ClusterInfo>();
  /** cluster → the state ingest keeps. */
  readonly states = new Map<string, ClusterState>();
  /** Clusters with a live stream (connected and not disconnected since). */
  readonly live = new Set<string>();
  /** cluster → kind/key → object. */
  readonly objects = new Map<string, Map<string, WireObject["object"]>>();
  /** cluster → lifecycle steps, de-duplicated by id, in arrival order. */
  readonly lifecycle = new Map<string, LifecycleEvent[]>();
  readonly #lifecycleIds = new Set<string>();
  /** cluster → highest sequence written. */
  readonly sequences = new Map<string, number>();
  /** cluster → the last rejection core reported. */
  readonly rejections = new Map<string, IngestRejection>();
  batches = 0;
  /** While set, writes wait for it (simulates a slow or stuck store). */
  gate: Promise<void> | undefined;
  /** The next write rejects with this error. */
  failNext: Error | undefined;
  #waiters: (() => void)[] = [];

  state(clusterId: string): ClusterState {
    let s = this.states.get(clusterId);
    if (!s) this.states.set(clusterId, (s = new ClusterState()));
    return s;
  }

  clusterConnected(info: ClusterInfo): Promise<void> {
    this.clusters.set(info.clusterId, info);
    this.live.add(info.clusterId);
    return Promise.resolve();
  }

  clusterDisconnected(clusterId: string): void {
    this.live.delete(clusterId);
  }

  clusterForgotten(clusterId: string): void {
    this.clusters.delete(clusterId);
    this.states.delete(clusterId);
  }

  clusterRejected(clusterId: string, rejection: IngestRejection): void {
    this.rejections.set(clusterId, rejection);
  }

  async write(b: IngestBatch): Promise<void> {
    if (this.gate) await this.gate;
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    let objs = this.objects.get(b.clusterId);
    if (!objs || snapshotStarts(b)) {
      objs = new Map();
      this.objects.set(b.clusterId, objs);
    }
    for (const o of b.snapshot ?? []) objs.set(`${o.kind}/${objectKey(o.object)}`, o.object);
    for (const c of b.changes) {
      if (c.op === "upsert") objs.set(`${c.kind}/${c.key}`, c.object);
      else objs.delete(`${c.kind}/${c.key}`);
    }
    const steps = this.lifecycle.get(b.clusterId) ?? [];
    for (const e of b.lifecycle) {
      const id = `${b.clusterId}/${e.id}`;
      if (this.#lifecycleIds.has(id)) continue;
      this.#lifecycleIds.add(id);
      steps.push(e);
    }
    this.lifecycle.set(b.clusterId, steps);
    this.sequences.set(b.clusterId, b.sequence);
    this.batches++;
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  /** Resolves once `pred` holds after some write (tests). */
  async until(pred: (s: MemorySink) => boolean): Promise<void> {
    while (!pred(this)) await new Promise<void>((r) => this.#waiters.push(r));
  }
}
