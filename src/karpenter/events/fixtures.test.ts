// Every Karpenter Event recorded per release of the rig's matrix (fixtures/<version>/, see its
// README) read by the explain parser: each DisruptionBlocked / Unconsolidatable message gets the
// reason its wording means, each FailedScheduling part its kind and key or NodePool — nothing
// parsed as "other".
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Event } from "../../objects/kube.ts";
import {
  DISRUPTION_EVENT_REASONS,
  parseDisruptionMessage,
  parsePodEvent,
  type DisruptionEventReason,
} from "./parse.ts";
import { readVersions } from "../../../hack/rig/lib.ts";

const dir = join(dirname(fileURLToPath(import.meta.url)), "fixtures");

/** What each wording means, written from Karpenter's source (independent of the parser). */
const MEANING: [RegExp, DisruptionEventReason, { nodePool?: string; disruptionReason?: string }?][] = [
  [/^Node is nominated for a pending pod$/, "nominated"],
  [/^Pod has "karpenter\.sh\/do-not-disrupt" annotation \(Pod=[^)]+\)$/, "do-not-disrupt"],
  [/^Disruption is blocked through the "karpenter\.sh\/do-not-disrupt" annotation$/, "do-not-disrupt"],
  [/^Pdb prevents pod evictions \(PodDisruptionBudget=\[?[^)\]]+\]?\)$/, "pdb"],
  [/^No allowed disruptions for disruption reason (\w+) due to blocking budget$/, "budget"],
  [/^NodePool "([^"]+)" has consolidation disabled$/, "consolidation-disabled"],
  [/^NodePool "([^"]+)" has consolidation policy WhenEmpty, but node is not empty$/, "when-empty"],
  [/^NodePool "([^"]+)" has non-empty consolidation disabled$/, "when-empty"],
  [/^SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node$/, "spot-to-spot"],
  // v1.15 node repair (disruption/repair.go): about repair, never a consolidation blocker.
  [/^repair is blocked through the "karpenter\.sh\/do-not-repair" annotation$/, "repair-blocked"],
  [/^repair requires a termination grace period to bypass blocking pods$/, "repair-blocked"],
  [/^more than 20% of nodes in nodepool "([^"]+)" are unhealthy$/, "repair-blocked"],
  [/^static NodePool is at its node limit and cannot stage a replacement$/, "repair-blocked"],
  [/^static NodePool's capacity reservations are full and cannot stage a replacement$/, "repair-blocked"],
  // Recorded on the rig during a repair's replacement and a reboot: Karpenter's own word, shown as is.
  [/^Nodeclaim does not have an associated node$/, "other"],
  [/^Node is rebooting$/, "other"],
];

function fixtures(version: string): (Event & { "x-wave-source"?: string })[] {
  return readdirSync(join(dir, version))
    .filter((f) => f.endsWith("events.json"))
    .flatMap((f) => JSON.parse(readFileSync(join(dir, version, f), "utf8")) as Event[]);
}

const matrix = readVersions().pairs.map((p) => p.karpenter);

describe("Karpenter Event fixtures of every release in the matrix, through the explain parser", () => {
  it("has a folder per Karpenter release of hack/rig/versions.env", () => {
    assert.deepEqual(
      readdirSync(dir, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name)
        .sort(),
      [...matrix].sort(),
    );
  });

  for (const version of matrix) {
    it(`${version}: every disruption Event and every pending pod's part is read`, () => {
      const events = fixtures(version);
      const disruption = events.filter((e) =>
        (DISRUPTION_EVENT_REASONS as readonly string[]).includes(e.reason ?? ""),
      );
      const kinds = new Set<string>();
      for (const e of disruption) {
        const msg = e.message ?? "";
        const meaning = MEANING.find(([re]) => re.test(msg));
        assert.ok(meaning, `${version}: a fixture message this test does not know: ${msg}`);
        const got = parseDisruptionMessage(msg);
        assert.equal(got.reason, meaning[1], `${version}: ${msg}`);
        const captured = meaning[0].exec(msg)?.[1];
        if (meaning[1] === "budget") assert.equal(got.disruptionReason, captured, msg);
        if (["consolidation-disabled", "when-empty"].includes(meaning[1]))
          assert.equal(got.nodePool, captured, msg);
        kinds.add(meaning[1]);
      }
      for (const k of ["do-not-disrupt", "pdb", "budget", "consolidation-disabled", "when-empty"])
        assert.ok(kinds.has(k), `${version}: a fixture for ${k}`);

      const failed = events.filter((e) => e.reason === "FailedScheduling");
      assert.ok(failed.length > 0, `${version}: FailedScheduling fixtures`);
      const partKinds = new Set<string>();
      for (const e of failed) {
        const parsed = parsePodEvent(e);
        assert.equal(parsed.kind, "failed-scheduling");
        const parts = (e.message ?? "").replace(/^Failed to schedule pod, /, "").split("; ");
        assert.equal(parsed.reasons.length, parts.length, `one reason per part: ${e.message ?? ""}`);
        parsed.reasons.forEach((r, i) => {
          const part = parts[i] ?? "";
          const taint = /^did not tolerate taint \(taint=([^=:)]+)/.exec(part);
          const limit = /^all available instance types exceed limits for nodepool \(NodePool=([^)]+)\)$/.exec(
            part,
          );
          const key =
            /^incompatible requirements, key ([^,]+),/.exec(part) ??
            /^incompatible requirements, label "([^"]+)" does not have known values$/.exec(part);
          if (taint) {
            assert.equal(r.kind, "taint", part);
            assert.ok(r.key?.startsWith(taint[1] ?? "~"), `${part} → ${r.key ?? "null"}`);
          } else if (limit) {
            assert.equal(r.kind, "limit", part);
            assert.equal(r.nodePool, limit[1], part);
          } else if (key) {
            assert.equal(r.kind, "requirement", part);
            assert.equal(r.key, key[1], part);
          } else assert.fail(`${version}: a FailedScheduling part this test does not know: ${part}`);
          partKinds.add(r.kind);
        });
      }
      for (const k of ["taint", "limit", "requirement"])
        assert.ok(partKinds.has(k), `${version}: a FailedScheduling fixture with a ${k} part`);

      const nominated = events.filter((e) => e.reason === "Nominated");
      for (const e of nominated) assert.match(parsePodEvent(e).nominatedTo ?? "", /^nodeclaim\//);
    });
  }
});
