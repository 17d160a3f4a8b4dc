// Spot policies as the API takes and serves them: one workload's policy from a PUT body, and the
// stored policies as the SpotPolicySet the webhook pulls. Both checked by the webhook's own
// validator, so nothing the API accepts can be rejected later.
import { createHash } from "node:crypto";
import {
  POLICY_SET_API_VERSION,
  workloadKey,
  type SpotPolicy,
  type SpotPolicySet,
} from "../../../policy/spot.ts";
import { parseSpotPolicy, PolicyValidationError } from "../../../policy/validate-spot.ts";
import type { SpotPolicySetDto } from "../../../dashboard/dto.ts";

/** A body the API refuses (400). */
export class BadPolicy extends Error {}

/** One workload's policy from a PUT body, checked by the webhook's own validator. */
export function spotPolicyFrom(params: SpotPolicy["workload"], body: unknown): SpotPolicy {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new BadPolicy("body must be a JSON object with threshold, strategy and optional percentAboveBase");
  }
  if ("workload" in body) throw new BadPolicy("workload: comes from the URL, leave it out of the body");
  try {
    return parseSpotPolicy({
      ...body,
      workload: { kind: params.kind, namespace: params.namespace, name: params.name },
    });
  } catch (err) {
    if (!(err instanceof PolicyValidationError)) throw err;
    throw new BadPolicy(
      `invalid spot policy: ${err.problems.map((p) => p.replace(/^policies\[0\]\./, "")).join("; ")}`,
    );
  }
}

/** The stored spot policies as one set; a stored row that no longer validates is skipped, not fatal. */
export function spotPolicySet(values: readonly unknown[], onBad?: (err: Error) => void): SpotPolicySetDto {
  const policies: SpotPolicy[] = [];
  for (const v of values) {
    try {
      policies.push(parseSpotPolicy(v));
    } catch (err) {
      onBad?.(err as Error);
    }
  }
  policies.sort((a, b) => workloadKey(a.workload).localeCompare(workloadKey(b.workload)));
  const revision = createHash("sha256").update(JSON.stringify(policies)).digest("hex").slice(0, 16);
  const set: SpotPolicySet & { revision: string } = {
    apiVersion: POLICY_SET_API_VERSION,
    kind: "SpotPolicySet",
    revision,
    policies,
  };
  return set;
}
