// The header's word on the cluster's agent stream: nothing while it streams, "catching up" while
// the embedded simulated cluster generates its past day at start (no agent streams yet, and none
// is missing), "agent disconnected" once a stream has gone, and core's reason while it refuses what
// the agent sends at a bound (issue 30: a refused cluster is never silently stale).
import type { ClusterDto } from "../../src/dashboard/dto.ts";
import { ago } from "./format.ts";

/** How far the generated history has come, 0..100 (whole percent). */
export function catchUpPercent(c: NonNullable<ClusterDto["catchingUp"]>): number {
  const span = c.until - c.from;
  if (!(span > 0)) return 100;
  return Math.max(0, Math.min(100, Math.floor(((c.at - c.from) / span) * 100)));
}

/** The cluster switcher's suffix. */
export const connectionSuffix = (
  c: Pick<ClusterDto, "connected" | "catchingUp"> & Partial<Pick<ClusterDto, "rejected">>,
): string =>
  c.rejected ? " (rejected)" : c.catchingUp ? " (catching up)" : c.connected ? "" : " (disconnected)";

/** The header's words for a refusal: what it was, with core's reason. */
export const rejectedText = (r: NonNullable<ClusterDto["rejected"]>): string =>
  `${r.bound.startsWith("object") ? "object" : "snapshot"} rejected: ${r.message}`;

export function Connection({ cluster, now }: { cluster: ClusterDto; now: number }) {
  // Shown even while a stream is open: the agent reconnects and is refused again.
  if (cluster.rejected)
    return (
      <span
        className="tag bad"
        role="alert"
        data-testid="agent-rejected"
        title={`Core refused what the agent sent ${ago(cluster.rejected.at, now)} ago and keeps the last accepted state; the agent backs off and retries. Raise the bound or shrink what the agent sends.`}
      >
        {rejectedText(cluster.rejected)}
      </span>
    );
  if (cluster.catchingUp)
    return (
      <span
        className="tag sim"
        role="status"
        data-testid="catching-up"
        title="The simulated cluster is fast-forwarding through its past day; its history fills in as it goes and the live stream starts when it reaches now."
      >
        generating the past day · {catchUpPercent(cluster.catchingUp)} %
      </span>
    );
  if (cluster.connected) return null;
  return (
    <span
      className="tag bad"
      data-testid="agent-disconnected"
      title="Figures are frozen at the agent's last message; history marks the gap."
    >
      agent disconnected · last data {ago(cluster.lastSeen, now)} ago
    </span>
  );
}
