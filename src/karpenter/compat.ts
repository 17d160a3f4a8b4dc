// Which Karpenter releases Wave is tested against, and what to tell a user whose cluster runs one
// outside them. The range mirrors the rig's pairs (hack/rig/versions.env; `npm run test:compat`
// runs the Karpenter-crossing e2e subset on each) — test/unit/karpenter-compat.test.ts keeps the
// two equal. Wave still works outside the range: unknown reasons and conditions are shown as
// they are; the warning only says nobody has checked that release.

/** The oldest and newest Karpenter release the e2e suite ran on (docs/compatibility.md). */
export const TESTED_KARPENTER = { oldest: "v1.6.4", newest: "v1.15.0" } as const;

export type KarpenterSupportStatus = "tested" | "older" | "newer" | "unknown";

export interface KarpenterSupport {
  /** tested: within the tested minors; older/newer: outside them; unknown: version not detected. */
  status: KarpenterSupportStatus;
  oldestTested: string;
  newestTested: string;
  /** What to show the user when status is not "tested" (null when it is). */
  warning: string | null;
}

/** "v1.8.2", "1.8", "v1.8-sim" → [1, 8]; undefined when there is no major.minor. */
export function majorMinor(version: string): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version.trim());
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

function cmp(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}

/** Where a detected Karpenter version stands against the tested range (compared by minor). */
export function karpenterSupport(
  version: string | null | undefined,
  tested: { oldest: string; newest: string } = TESTED_KARPENTER,
): KarpenterSupport {
  const base = { oldestTested: tested.oldest, newestTested: tested.newest };
  const range = `${tested.oldest}–${tested.newest}`;
  const v = version ? majorMinor(version) : undefined;
  const lo = majorMinor(tested.oldest);
  const hi = majorMinor(tested.newest);
  if (!version || !v || !lo || !hi) {
    return {
      ...base,
      status: "unknown",
      warning: version
        ? `Karpenter version "${version}" is not a release number; Wave is tested with ${range}.`
        : `Karpenter's version was not detected (no Karpenter controller pod seen); Wave is tested with ${range}.`,
    };
  }
  if (cmp(v, lo) < 0) {
    return {
      ...base,
      status: "older",
      warning: `Karpenter ${version} is older than the releases Wave is tested with (${range}): figures that rely on newer fields may be missing.`,
    };
  }
  if (cmp(v, hi) > 0) {
    return {
      ...base,
      status: "newer",
      warning: `Karpenter ${version} is newer than the releases Wave is tested with (${range}): new reasons and conditions are shown as Karpenter writes them.`,
    };
  }
  return { ...base, status: "tested", warning: null };
}

/**
 * NodePool settings only some Karpenter releases accept, and the first release (major.minor)
 * that does. `consolidationPolicy: Balanced` came with v1.14.
 */
export const KARPENTER_SETTING_SINCE = {
  "consolidationPolicy: Balanced": "v1.14",
} as const;

export type KarpenterSetting = keyof typeof KARPENTER_SETTING_SINCE;

/**
 * Whether a cluster's Karpenter accepts a setting — the one function every advice path asks
 * (the thrashing report, its fixes list and their apply all come from the same advice). An
 * undetected or unreadable version may be any release: the setting is offered, and says which
 * release it needs.
 */
export function karpenterAccepts(version: string | null | undefined, setting: KarpenterSetting): boolean {
  const v = version ? majorMinor(version) : undefined;
  const since = majorMinor(KARPENTER_SETTING_SINCE[setting]);
  return v === undefined || since === undefined || cmp(v, since) >= 0;
}
