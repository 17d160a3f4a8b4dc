// Read your write for policy edits: the agent answers an edit before its watch streams the
// resource back into core's state, so a page that reloads on the answer would show the policy from
// before the edit. The edit's answer waits (bounded) until core holds what the agent applied.
import type { PolicyKind } from "../../../core/store/store.ts";
import type { PolicyCrAccess } from "../../../console/policy-crs.ts";

/** How long an answer waits for its resource (the agent's watch usually brings it in milliseconds). */
export const READ_YOUR_WRITE_MS = 2_000;

export const resourceVersionOf = (o: unknown): string | undefined =>
  (o as { metadata?: { resourceVersion?: string } } | undefined)?.metadata?.resourceVersion;

/**
 * Resolves once core's state of `cluster` holds the resource at `resourceVersion` (undefined: once
 * it is gone), at the latest after READ_YOUR_WRITE_MS; at once when core holds no state of the
 * cluster (another replica owns it).
 */
export async function heldAs(
  crs: PolicyCrAccess,
  kind: PolicyKind,
  cluster: string,
  cr: { namespace: string; name: string },
  resourceVersion: string | undefined,
): Promise<void> {
  const held = (): boolean => {
    const list = kind === "spot" ? crs.spot(cluster) : crs.warmup(cluster);
    if (list === undefined) return true;
    const got = list.find(
      (c) => c.metadata.name === cr.name && (cr.namespace === "" || c.metadata.namespace === cr.namespace),
    ) as { metadata: { resourceVersion?: string } } | undefined;
    return resourceVersion === undefined
      ? got === undefined
      : got?.metadata.resourceVersion === resourceVersion;
  };
  for (const until = Date.now() + READ_YOUR_WRITE_MS; !held() && Date.now() < until;)
    await new Promise((r) => setTimeout(r, 20));
}
