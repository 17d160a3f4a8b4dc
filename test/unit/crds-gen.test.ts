// Wave's CRD manifests are generated from src/policy/crd-schema.ts by `npm run crds:gen`: this
// fails when a committed manifest (in either chart) differs from what the generator writes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import { drifted, renderCrds } from "../../hack/helm/crds-gen.ts";

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
});
