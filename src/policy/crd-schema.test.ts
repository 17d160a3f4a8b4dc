import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spotPolicySchema, warmupPolicySchema, type Schema } from "./crd-schema.ts";
import { validatePolicy } from "./validate-spot.ts";
import { warmupPolicyFromResource } from "./warmup-resource.ts";
import type { WarmupPolicyResource } from "../objects/policy-crds.ts";

/** Every schema node under `s` with its path. */
function walk(s: Schema, at: string, out: [string, Schema][] = []): [string, Schema][] {
  out.push([at, s]);
  for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${at}.${k}`, out);
  if (s.items) walk(s.items, `${at}[]`, out);
  return out;
}

const spec = (s: Schema): Schema => s.properties?.spec ?? assert.fail("no spec");
const field = (s: Schema, k: string): Schema => spec(s).properties?.[k] ?? assert.fail(k);

/** Whether the TypeScript validators accept `value` in a spot / warmup spec field. */
const spotOk = (k: string, value: unknown): boolean => {
  const problems: string[] = [];
  const v = {
    workload: { namespace: "ns", kind: "Deployment", name: "web" },
    threshold: 1,
    strategy: "Prefer",
  };
  const key = k === "targetRef.name" ? "workload" : k;
  const input =
    k === "targetRef.name" ? { ...v, workload: { ...v.workload, name: value } } : { ...v, [key]: value };
  return validatePolicy(input, "p", problems) !== undefined;
};
const warmOk = (k: string, value: unknown): boolean =>
  warmupPolicyFromResource({
    spec: { nodePool: "p", enabled: true, [k]: value },
  } as unknown as WarmupPolicyResource).ok;

describe("the CRD schema (one source with the validators)", () => {
  for (const [name, schema] of [
    ["SpotPolicy", spotPolicySchema()],
    ["WarmupPolicy", warmupPolicySchema()],
  ] as const)
    it(`${name}: every field has a description (kubectl explain shows it)`, () => {
      // metadata is the exception the apiserver demands (ObjectMeta's own docs show instead).
      for (const [at, s] of walk(schema, name))
        if (at !== `${name}.metadata`)
          assert.ok((s.description ?? "").trim().length > 3, `${at} has no description`);
    });

  it("keeps CEL only for the rule across two fields; enums and ranges are schema", () => {
    const rules = [...walk(spotPolicySchema(), "s"), ...walk(warmupPolicySchema(), "w")].flatMap(([at, s]) =>
      (s["x-kubernetes-validations"] ?? []).map((r) => `${at}: ${r.rule}`),
    );
    assert.deepEqual(rules, ["s.spec: !has(self.fallbackWindowSeconds) || self.strategy == 'Prefer'"]);
    assert.deepEqual(field(spotPolicySchema(), "strategy").enum, ["Prefer", "Require"]);
    assert.equal(field(spotPolicySchema(), "threshold").minimum, 0);
  });

  it("SpotPolicy: each bound and enum agrees with validate-spot.ts (min and max pass, one beyond fails)", () => {
    const s = spotPolicySchema();
    for (const k of ["threshold", "percentAboveBase", "fallbackWindowSeconds"]) {
      const { minimum, maximum } = field(s, k);
      assert.ok(minimum !== undefined, k);
      assert.equal(spotOk(k, minimum), true, `${k}=${minimum}`);
      assert.equal(spotOk(k, minimum - 1), false, `${k}=${minimum - 1}`);
      if (maximum === undefined) continue;
      assert.equal(spotOk(k, maximum), true, `${k}=${maximum}`);
      assert.equal(spotOk(k, maximum + 1), false, `${k}=${maximum + 1}`);
    }
    for (const v of field(s, "strategy").enum ?? []) assert.equal(spotOk("strategy", v), true, v);
    assert.equal(spotOk("strategy", "prefer"), false);
    const name = new RegExp(field(s, "targetRef").properties?.name?.pattern ?? "");
    for (const n of ["web", "a.b-c", "Web", "-web", "web_1"])
      assert.equal(name.test(n), spotOk("targetRef.name", n), n);
  });

  it("WarmupPolicy: each bound and the cost pattern agree with validate-warmup.ts and warmup-resource.ts", () => {
    const s = warmupPolicySchema();
    for (const k of ["maxWarmNodes", "ttlSeconds", "cooldownSeconds", "prePullDeadlineSeconds"]) {
      const { minimum, maximum } = field(s, k);
      assert.ok(minimum !== undefined && maximum !== undefined, k);
      assert.deepEqual(
        [warmOk(k, minimum), warmOk(k, maximum), warmOk(k, minimum - 1), warmOk(k, maximum + 1)],
        [true, true, false, false],
        k,
      );
    }
    const cost = new RegExp(field(s, "maxCostPerHour").pattern ?? "");
    for (const c of ["0.50", "3", "1.", ".5", "-1", "1e3"])
      assert.equal(cost.test(c), warmOk("maxCostPerHour", c), c);
  });
});
