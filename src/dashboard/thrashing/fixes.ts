// The fixes list (`GET …/thrashing/fixes`) and its apply, derived from the same reports and
// advice as `GET …/thrashing`: one definition of what Wave advises for a thrashing pool.
import type { ThrashingFixesDto } from "../dto.ts";
import type { AppliedFix } from "./applied.ts";
import { isFlagged, type ThrashingReport } from "./detect.ts";
import { kubectlMergePatch } from "../consolidation/fixes.ts";

/** The one-line command that applies a fix's merge patch to a NodePool (the consolidation fixes' builder). */
export const kubectlPatch = (pool: string, patch: Record<string, unknown>): string =>
  kubectlMergePatch({ kind: "NodePool", namespace: null, name: pool }, patch);

/**
 * Each flagged pool's advice as fixes — the advice `/thrashing` shows (its `title: detail`
 * strings), each with the kubectl patch when it is a spec change.
 */
export function thrashingFixDtos(
  reports: readonly ThrashingReport[],
  canApply: boolean,
  applied: (pool: string) => AppliedFix | undefined = () => undefined,
): ThrashingFixesDto[] {
  return reports
    .filter((r) => isFlagged(r.severity))
    .map((r) => {
      const fix = applied(r.nodePool) ?? null;
      return {
        nodePool: r.nodePool,
        severity: r.severity,
        canApply,
        applied: fix,
        // While a fix is in effect the score is the cycles from before it: no advice on top of it.
        fixes: fix
          ? []
          : r.advice.map((a) => ({
              title: a.title,
              detail: a.detail,
              kubectl: a.patch ? kubectlPatch(r.nodePool, a.patch) : null,
            })),
      };
    });
}

/** The fix named `title` of a flagged pool, as the reports give it now (never a client's patch). */
export function thrashingFix(reports: readonly ThrashingReport[], nodePool: string, title: string) {
  const report = reports.find((r) => r.nodePool === nodePool && isFlagged(r.severity));
  return { report, fix: report?.advice.find((a) => a.title === title) };
}
