// The rig's version pairs (hack/rig/versions.env): parsing, selection by exact version or minor,
// and the --karpenter / WAVE_RIG_KARPENTER request.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  parseVersions,
  readVersions,
  requestedGates,
  requestedKarpenter,
  selectPair,
} from "../../hack/rig/lib.ts";
import { majorMinor, TESTED_KARPENTER } from "../../src/karpenter/compat.ts";

const sample = `# comment
DEFAULT_KARPENTER=v1.15.0
PAIR_v1.15.0=v1.36.3 v3.6.16 v0.7.0
PAIR_v1.8.2=v1.34.12 v3.6.16 v0.7.0
`;

test("versions.env: default and pairs parse", () => {
  const v = parseVersions(sample);
  assert.equal(v.defaultKarpenter, "v1.15.0");
  assert.deepEqual(v.pairs[1], {
    karpenter: "v1.8.2",
    kubernetes: "v1.34.12",
    etcd: "v3.6.16",
    kwok: "v0.7.0",
  });
});

test("versions.env: malformed lines and a default without a pair are refused", () => {
  assert.throws(
    () => parseVersions("DEFAULT_KARPENTER=v1.0.0\nPAIR_v1.1.0=v1.34.0 v3.6.0 v0.7.0\n"),
    /no PAIR_ line/,
  );
  assert.throws(() => parseVersions("DEFAULT_KARPENTER=v1.1.0\nPAIR_v1.1.0=v1.34.0 v3.6.0\n"), /line 2/);
  assert.throws(() => parseVersions("KUBE_VERSION=v1.34.0\n"), /unknown key KUBE_VERSION/);
});

test("selectPair: default, exact, by minor (with or without v), unknown names the supported pairs", () => {
  const v = parseVersions(sample);
  assert.equal(selectPair(v).karpenter, "v1.15.0");
  assert.equal(selectPair(v, "v1.8.2").kubernetes, "v1.34.12");
  assert.equal(selectPair(v, "v1.8").karpenter, "v1.8.2");
  assert.equal(selectPair(v, "1.15").karpenter, "v1.15.0");
  assert.throws(
    () => selectPair(v, "v1.1"),
    /not a supported rig pair; supported: v1\.15\.0 \(Kubernetes v1\.36\.3\), v1\.8\.2/,
  );
  // v1.1 must not match v1.15.0 by prefix.
  assert.throws(() => selectPair(v, "1.1"), /not a supported/);
});

test("requestedKarpenter: flag forms beat the environment", () => {
  assert.equal(requestedKarpenter(["--karpenter", "v1.8"], {}), "v1.8");
  assert.equal(requestedKarpenter(["--karpenter=v1.6.4"], { WAVE_RIG_KARPENTER: "v1.8" }), "v1.6.4");
  assert.equal(requestedKarpenter([], { WAVE_RIG_KARPENTER: "v1.8" }), "v1.8");
  assert.equal(requestedKarpenter([], { WAVE_RIG_KARPENTER: "" }), undefined);
});

test("the committed versions.env is valid and its default is one of its pairs", () => {
  const v = readVersions();
  assert.ok(v.pairs.length >= 3, "at least three Karpenter minors for test:compat");
  assert.equal(selectPair(v).karpenter, v.defaultKarpenter);
  const minors = new Set(v.pairs.map((p) => p.karpenter.split(".").slice(0, 2).join(".")));
  assert.equal(minors.size, v.pairs.length, "one pair per Karpenter minor");
});

// Wave's "tested with" range (API field, UI tag, log warning) must say what test:compat runs.
test("the tested range is exactly the rig's oldest and newest Karpenter pair", () => {
  const pairs = readVersions().pairs.map((p) => p.karpenter);
  const byMinor = [...pairs].sort((a, b) => {
    const [x0, x1] = majorMinor(a) ?? [0, 0];
    const [y0, y1] = majorMinor(b) ?? [0, 0];
    return x0 - y0 || x1 - y1;
  });
  assert.deepEqual(TESTED_KARPENTER, { oldest: byMinor[0], newest: byMinor.at(-1) });
});

test("feature gates: a pair's GATES_ line, overridden by --gates or WAVE_RIG_FEATURE_GATES, 'off' = release defaults", () => {
  const v = parseVersions(`${sample}GATES_v1.15.0=NodeOverlay=true,StaticCapacity=true\n`);
  const pair = selectPair(v);
  assert.equal(pair.gates, "NodeOverlay=true,StaticCapacity=true");
  assert.equal(selectPair(v, "v1.8").gates, undefined);
  assert.equal(requestedGates(pair, [], {}), "NodeOverlay=true,StaticCapacity=true");
  assert.equal(requestedGates(pair, ["--gates", "off"], {}), "");
  assert.equal(requestedGates(pair, ["--gates=NodeRepair=true"], {}), "NodeRepair=true");
  assert.equal(requestedGates(pair, [], { WAVE_RIG_FEATURE_GATES: "off" }), "");
  assert.equal(requestedGates(selectPair(v, "v1.8"), [], {}), "");
  assert.throws(() => parseVersions(`${sample}GATES_v1.15.0=NodeOverlay\n`), /GATES_v1.15.0 needs/);
  assert.throws(() => parseVersions(`${sample}GATES_v9.9.9=NodeOverlay=true\n`), /no PAIR_ line/);
});

test("the committed versions.env turns on, per release, only gates that release has", () => {
  // From each release's pkg/operator/options/options.go (its FEATURE_GATES default lists them).
  const known: Record<string, string[]> = {
    "v1.15.0": [
      "NodeRepair",
      "ReservedCapacity",
      "SpotToSpotConsolidation",
      "NodeOverlay",
      "StaticCapacity",
      "CapacityBuffer",
      "TerminateFirstDrift",
      "TerminateFirstRepair",
      "PodDeletionCostManagement",
    ],
    "v1.8.2": ["NodeRepair", "ReservedCapacity", "SpotToSpotConsolidation", "NodeOverlay", "StaticCapacity"],
    "v1.6.4": ["NodeRepair", "ReservedCapacity", "SpotToSpotConsolidation"],
  };
  for (const p of readVersions().pairs) {
    const names = (p.gates ?? "")
      .split(",")
      .filter(Boolean)
      .map((g) => g.split("=")[0] ?? "");
    for (const n of names) assert.ok(known[p.karpenter]?.includes(n), `${p.karpenter} has no gate ${n}`);
  }
});
