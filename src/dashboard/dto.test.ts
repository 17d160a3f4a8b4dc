import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import type { SpotPolicy, SpotPolicySet } from "../policy/spot.ts";
import { parsePolicySet } from "../policy/validate-spot.ts";
import { parsePolicy } from "../policy/validate-warmup.ts";
import { DEFAULT_POLICY, type WarmupPolicy } from "../policy/warmup.ts";
import {
  SpotPolicySchema,
  SpotPolicySetSchema,
  WarmupPolicyRecordSchema,
  WarmupPolicySchema,
  type SpotPolicyDto,
  type SpotPolicySetDto,
  type WarmupPolicyDto,
} from "./dto.ts";

// The policy DTOs hold exactly what src/policy's types hold: assignable both ways (a field added
// to one and not the other fails the typecheck).
const _spotToDto: SpotPolicyDto = {} as SpotPolicy;
const _dtoToSpot: SpotPolicy = {} as SpotPolicyDto;
const _warmupToDto: WarmupPolicyDto["policy"] = {} as WarmupPolicy;
const _dtoToWarmup: WarmupPolicy = {} as WarmupPolicyDto["policy"];
const _setToDto: SpotPolicySetDto = {} as SpotPolicySet & { revision: string };
const _dtoToSet: SpotPolicySet = {} as SpotPolicySetDto;

const errors = (schema: TSchema, v: unknown) =>
  [...Value.Errors(schema, v)].map((e) => `${e.path}: ${e.message}`);

describe("policy DTO schemas", () => {
  it("accept every field a valid spot policy set holds, optional ones included", () => {
    const set = parsePolicySet({
      apiVersion: "wave.sh/v1alpha1",
      kind: "SpotPolicySet",
      revision: "7",
      policies: [
        {
          workload: { namespace: "shop", kind: "Deployment", name: "web" },
          threshold: 2,
          strategy: "Require",
        },
        {
          workload: { namespace: "shop", kind: "StatefulSet", name: "db" },
          threshold: 0,
          strategy: "Prefer",
          percentAboveBase: 20,
          repair: "dry-run",
          fallbackWindowSeconds: 600,
        },
      ],
    });
    assert.deepEqual(errors(SpotPolicySetSchema, set), []);
    for (const p of set.policies) assert.deepEqual(errors(SpotPolicySchema, p), []);
  });

  it("refuse a field the policy type does not hold", () => {
    const policy = {
      workload: { namespace: "a", kind: "Deployment", name: "b" },
      threshold: 1,
      strategy: "Prefer",
    };
    assert.notDeepEqual(errors(SpotPolicySchema, { ...policy, extra: 1 }), []);
    assert.notDeepEqual(errors(SpotPolicySchema, { ...policy, repair: "yes" }), []);
  });

  it("accept a valid warmup policy, with and without a cost cap", () => {
    const capped = parsePolicy({ enabled: true, maxWarmNodes: 3, maxCostPerHour: 1.5 });
    if (!capped.ok) throw new Error(capped.errors.join("; "));
    assert.deepEqual(errors(WarmupPolicySchema, capped.policy), []);
    assert.deepEqual(errors(WarmupPolicySchema, DEFAULT_POLICY), []);
    assert.deepEqual(
      errors(WarmupPolicyRecordSchema, { nodePool: "batch", policy: capped.policy, updatedAt: 1 }),
      [],
    );
  });
});
