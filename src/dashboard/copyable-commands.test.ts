// Issue 42, finding 2: every copyable command the console shows (the Consolidation and Thrashing
// pages' `kubectl patch` lines) pasted into a real shell with hostile object names: a `kubectl`
// stub on PATH records its argv, and no command beyond it runs (a sentinel file stays absent).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { BlockerReasonSchema, type BlockerDto, type BlockerReason } from "./dto.ts";
import { blockerFix } from "./consolidation/fixes.ts";
import { thrashingFixDtos } from "./thrashing/fixes.ts";
import { pendingFix } from "./consolidation/pending-fixes.ts";
import type { Pod } from "../objects/kube.ts";
import type { ThrashingReport } from "./thrashing/detect.ts";
import { shellArg, shellCommand } from "../shared/shell.ts";
import type { NodePool } from "../objects/karpenter.ts";

const dir = mkdtempSync(join(tmpdir(), "wave-paste-"));
const SENTINEL = join(dir, "ran");
const ARGV = join(dir, "argv");
writeFileSync(
  join(dir, "kubectl"),
  `#!/bin/sh\n{ for a in "$@"; do printf '%s\\0' "$a"; done; printf '\\001\\0'; } >> "${ARGV}"\n`,
);
chmodSync(join(dir, "kubectl"), 0o755);
after(() => rmSync(dir, { recursive: true, force: true }));

/** Names a compromised agent could stream, each trying to run `touch SENTINEL` when pasted. */
export const HOSTILE_NAMES: readonly string[] = [
  `$(touch ${SENTINEL})`,
  `\`touch ${SENTINEL}\``,
  `x; touch ${SENTINEL}`,
  `x' ; touch ${SENTINEL} ; '`,
  `x" ; touch ${SENTINEL} ; "`,
  `x\ntouch ${SENTINEL}`,
  `x && touch ${SENTINEL} #`,
  `x | tee ${SENTINEL}`,
  `$HOME*`,
  `-n`,
];

/**
 * Pastes `lines` into one bash (stdin, as a terminal paste) with the stub first on PATH; the argv
 * of each kubectl run, in order.
 */
function paste(lines: readonly string[]): string[][] {
  rmSync(ARGV, { force: true });
  const r = spawnSync("bash", [], {
    input: lines.map((l) => `${l}\n`).join(""),
    env: { PATH: `${dir}:/usr/bin:/bin`, HOME: dir },
    encoding: "utf8",
  });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!existsSync(SENTINEL), "pasting ran a command");
  const runs = readFileSync(ARGV, "utf8").split("\u0001\0").slice(0, -1);
  return runs.map((run) => run.split("\0").slice(0, -1));
}

const pool: NodePool = {
  metadata: { name: "general" },
  spec: {
    template: { spec: { requirements: [] } },
    disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "Never", budgets: [{ nodes: "0" }] },
  },
} as unknown as NodePool;

function blocker(reason: BlockerReason, name: string, namespace: string | null): BlockerDto {
  return {
    reason,
    blocking: true,
    waiting: false,
    message: "",
    object: { kind: namespace === null ? "NodePool" : "Pod", namespace, name },
    pods: [],
    until: null,
    source: "state",
    fix: null,
  };
}

describe("copyable commands pasted into a real shell with hostile names", () => {
  it("shellArg keeps plain words readable and quotes everything else", () => {
    assert.equal(shellCommand(["kubectl", "patch", "nodepool", "general"]), "kubectl patch nodepool general");
    assert.equal(shellArg("it's"), `'it'\\''s'`);
    assert.equal(shellArg(""), "''");
  });

  it("every consolidation blocker's fix: argv intact, nothing else runs", () => {
    const lines: string[] = [];
    const expected: string[][] = [];
    for (const reason of BlockerReasonSchema.anyOf.map((s) => s.const))
      for (const name of HOSTILE_NAMES)
        for (const ns of [null, name]) {
          const fix = blockerFix(blocker(reason, name, ns), { pool, node: undefined, version: "1.2.0" });
          if (!fix?.kubectl || !fix.target || !fix.patch) continue;
          lines.push(fix.kubectl);
          expected.push([
            "patch",
            fix.target.kind.toLowerCase(),
            name,
            ...(fix.target.namespace ? ["-n", fix.target.namespace] : []),
            "--type",
            "merge",
            "-p",
            JSON.stringify(fix.patch),
          ]);
        }
    assert.ok(lines.length >= 6 * HOSTILE_NAMES.length, `pasted ${lines.length}`);
    assert.deepEqual(paste(lines), expected);
  });

  it("every pending pod's fix: argv intact, nothing else runs", () => {
    // A requirement the pool does not offer: the fix patches the hostile-named pool with the pod's
    // hostile value.
    const key = "example.com/rack";
    const lines: string[] = [];
    const expected: string[][] = [];
    for (const name of HOSTILE_NAMES) {
      const hostilePool = { ...pool, metadata: { name } } as NodePool;
      const pod = {
        metadata: { name: "p", namespace: "shop" },
        spec: { nodeSelector: { [key]: name }, containers: [] },
      } as unknown as Pod;
      const r = {
        nodePool: name,
        kind: "requirement" as const,
        key,
        detail: `label "${key}" does not have known values`,
      };
      const fix = pendingFix(r, pod, hostilePool, []).fix;
      assert.ok(fix?.kubectl && fix.patch, `a patch for ${JSON.stringify(name)}`);
      lines.push(fix.kubectl);
      expected.push(["patch", "nodepool", name, "--type", "merge", "-p", JSON.stringify(fix.patch)]);
    }
    assert.deepEqual(paste(lines), expected);
  });

  it("every thrashing fix: argv intact, nothing else runs", () => {
    const patch = { spec: { disruption: { consolidateAfter: `1m'; touch ${SENTINEL}; '` } } };
    const reports = HOSTILE_NAMES.map(
      (name) =>
        ({
          nodePool: name,
          severity: "high",
          advice: [{ id: "raise-consolidate-after", title: "Raise consolidateAfter", detail: "", patch }],
        }) as unknown as ThrashingReport,
    );
    const lines = thrashingFixDtos(reports, false).map((d) => d.fixes[0]?.kubectl ?? "");
    assert.deepEqual(
      paste(lines),
      HOSTILE_NAMES.map((name) => [
        "patch",
        "nodepool",
        name,
        "--type",
        "merge",
        "-p",
        JSON.stringify(patch),
      ]),
    );
  });
});
