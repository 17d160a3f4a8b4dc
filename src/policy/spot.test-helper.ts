// Spot policy fixtures shared by the policy, webhook and ledger tests.
import type { SpotPolicy, WorkloadRef } from "./spot.ts";

/** The workload most tests place: shop/Deployment/web. */
export const WEB = { namespace: "shop", kind: "Deployment", name: "web" } as const;

/** A Prefer policy for `workload`, with `extra` fields. */
export const preferPolicy = (
  workload: WorkloadRef,
  threshold: number,
  extra: Partial<SpotPolicy> = {},
): SpotPolicy => ({ workload, threshold, strategy: "Prefer", ...extra });

/** A Prefer policy for WEB. */
export const spotPolicy = (threshold: number, percentAboveBase?: number): SpotPolicy =>
  preferPolicy(WEB, threshold, percentAboveBase === undefined ? {} : { percentAboveBase });

/** WEB's policy as untrusted JSON (the validator's input). */
export const webInput = { workload: { ...WEB }, threshold: 2, strategy: "Prefer" };

/** A SpotPolicySet of `policies` as core serves it. */
export const policySet = (policies: unknown[], revision = "1") => ({
  apiVersion: "wave.sh/v1alpha1",
  kind: "SpotPolicySet",
  revision,
  policies,
});
