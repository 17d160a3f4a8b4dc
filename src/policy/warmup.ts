// Per-NodePool warmup policy: the model the warmup controller, the console, the API, the simulator
// and the UI share, its defaults and its ranges (validate-warmup.ts checks them; the CRD's schema
// says the same: crd-schema.ts).

export interface WarmupPolicy {
  enabled: boolean;
  /** Warmup pods (pending or on a node) the pool may hold at once. */
  maxWarmNodes: number;
  /** How long a warm node is protected waiting for a real pod before it counts as a miss. */
  ttlSeconds: number;
  /** Quiet time after starting a warmup before the pool may start another. */
  cooldownSeconds: number;
  /** Ceiling on the hourly price of the pool's warm capacity; null = no cap. */
  maxCostPerHour: number | null;
  /** Pre-pull the pool's workload images onto each warm node. */
  prePull: boolean;
  /** A pre-pull pod still running after this is removed (pull stuck or image missing). */
  prePullDeadlineSeconds: number;
}

export const DEFAULT_POLICY: Readonly<WarmupPolicy> = Object.freeze({
  enabled: false,
  maxWarmNodes: 1,
  ttlSeconds: 600,
  cooldownSeconds: 300,
  maxCostPerHour: null,
  prePull: true,
  prePullDeadlineSeconds: 300,
});

const DAY = 86_400;

/** [min, max] of each whole-number field (the editor's hints use the same). */
export const WARMUP_INTEGER_RANGES = {
  maxWarmNodes: [0, 100],
  ttlSeconds: [30, DAY],
  cooldownSeconds: [0, DAY],
  prePullDeadlineSeconds: [10, 3600],
} as const;
