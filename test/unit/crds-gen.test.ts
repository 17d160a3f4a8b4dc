// Wave's CRD manifests are generated from src/policy/crd-schema.ts by `npm run crds:gen`: this
// fails when a committed manifest (in either chart) differs from what the generator writes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import { drifted, renderCrds } from "../../hack/helm/crds-gen.ts";
import {
  POLICY_SERVED_VERSIONS,
  POLICY_STORAGE_VERSION,
  POLICY_VERSION,
} from "../../src/objects/policy-crds.ts";
import { KINDS } from "../../src/kube/kinds.ts";

interface Version {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  [k: string]: unknown;
}
interface Crd {
  spec: { conversion?: { strategy: string }; versions: Version[] };
}
const crds = async (): Promise<[string, Crd][]> =>
  [...(await renderCrds())].map(([f, text]) => [f, parse(text, { version: "1.1" }) as Crd]);
/** What the wave-crds chart served before v1beta1 (0.1.0): Wave must keep working on it. */
const OLDER_CHART_SERVES = ["v1alpha1"];

describe("Wave's CRD manifests (npm run crds:gen)", () => {
  it("are what the generator writes, in both charts (no drift)", async () => {
    assert.deepEqual(await drifted(), [], "stale CRD manifests: run npm run crds:gen");
  });

  it("read back as Kubernetes reads YAML (1.1): On and Off stay strings, not booleans", async () => {
    const spot = (await renderCrds()).get("wave.sh_spotpolicies.yaml") ?? assert.fail("no SpotPolicy CRD");
    const doc = parse(spot, { version: "1.1" }) as {
      spec: {
        versions: {
          schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, unknown> } } } };
        }[];
      };
    };
    const repair = doc.spec.versions[0]?.schema.openAPIV3Schema.properties.spec.properties.repair;
    assert.deepEqual(repair, {
      description: (repair as { description: string }).description,
      type: "string",
      enum: ["On", "Off", "DryRun"],
      default: "On",
    });
  });

  // Conversion None is right only while the versions differ in name alone: the apiserver then
  // rewrites apiVersion and nothing else, in both directions, and no field can be lost.
  it("serve v1alpha1 (storage) and v1beta1 from one schema, conversion None, neither deprecated", async () => {
    for (const [file, doc] of await crds()) {
      const { versions, conversion } = doc.spec;
      assert.deepEqual(
        versions.map((v) => v.name),
        ["v1alpha1", "v1beta1"],
        file,
      );
      assert.deepEqual(conversion, { strategy: "None" }, file);
      assert.deepEqual(
        versions.filter((v) => v.storage).map((v) => v.name),
        [POLICY_STORAGE_VERSION],
        `${file}: one storage version`,
      );
      assert.ok(
        versions.every((v) => v.served && v.deprecated === undefined),
        file,
      );
      const [first, ...rest] = versions.map(({ name: _n, storage: _s, ...same }) => same);
      for (const r of rest)
        assert.deepEqual(r, first, `${file}: every version has the same schema and columns`);
    }
  });

  it("Wave's own clients use the storage version, which an older wave-crds chart serves too", () => {
    assert.equal(POLICY_VERSION, POLICY_STORAGE_VERSION);
    assert.ok((POLICY_SERVED_VERSIONS as readonly string[]).includes(POLICY_VERSION));
    assert.ok(OLDER_CHART_SERVES.includes(POLICY_VERSION), "an upgrade that keeps the old CRDs still works");
    assert.equal(KINDS.SpotPolicy.version, POLICY_VERSION);
    assert.equal(KINDS.WarmupPolicy.version, POLICY_VERSION);
  });
});
