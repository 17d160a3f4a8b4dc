import { useEffect, useRef } from "react";
import type { NodeDetailDto } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { bytes, cores, dateTime, duration, usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { BlockerItem } from "./blockers.tsx";

/** Can Karpenter disrupt the node, and if not why: each blocker with its object and fix. */
function DisruptionSection({ d }: { d: NonNullable<NodeDetailDto["disruption"]> }) {
  const blocking = d.blockers.filter((b) => b.blocking);
  return (
    <section className="disruption" data-testid="drawer-disruption" aria-label="can Karpenter disrupt it">
      <h3>Can Karpenter disrupt it?</h3>
      <p data-testid="drawer-disruptable">
        {d.disruptable ? (
          <span className="tag ok">yes</span>
        ) : d.waiting && blocking.length === 0 ? (
          <span className="tag warn">waiting for consolidateAfter</span>
        ) : (
          <span className="tag bad">
            no · {blocking.length} blocker{blocking.length === 1 ? "" : "s"}
          </span>
        )}{" "}
        {d.savingsPerHour > 0 ? (
          <span>
            consolidating it would save <b>{usd(d.savingsPerHour)}/h</b>
            {d.action === "replace" && d.replacement
              ? ` (replace with ${d.replacement.instanceType} at ${usd(d.replacement.usdPerHour)}/h)`
              : d.empty
                ? " (empty: delete)"
                : " (its pods fit elsewhere: delete)"}
          </span>
        ) : (
          <span className="muted">not under-used: consolidation would save nothing now</span>
        )}
      </p>
      {d.blockers.length ? (
        <ul className="blockers">
          {d.blockers.map((b) => (
            <BlockerItem key={`${b.reason}/${b.object.kind}/${b.object.name}`} b={b} />
          ))}
        </ul>
      ) : null}
      {d.events.length ? (
        <details>
          <summary>Karpenter's Events ({d.events.length})</summary>
          <ul className="events" data-testid="drawer-karpenter-events">
            {d.events.slice(0, 10).map((e) => (
              <li key={`${e.at}/${e.reason}/${e.object.kind}/${e.message}`}>
                {dateTime(e.at)} <b>{e.reason}</b> <span className="muted">({e.object.kind})</span>{" "}
                {e.message}
                {e.count > 1 ? <span className="muted"> ×{e.count}</span> : null}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </section>
  );
}

/** A node or NodeClaim: lifecycle with durations, pods, price and source, labels, taints. */
export function NodeDrawer({ ctx, name }: { ctx: PageCtx; name: string }) {
  const d = useJson<NodeDetailDto>(
    `${ctx.base}/nodes/${encodeURIComponent(name)}`,
    ctx.token,
    ctx.version,
    2000,
  );
  const close = (): void => ctx.go({ node: undefined });
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    ref.current?.focus();
    const onKey = (e: KeyboardEvent): void => {
      if (e.key === "Escape") ctx.go({ node: undefined });
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [ctx]);
  return (
    <aside
      className="drawer"
      role="dialog"
      aria-label={`node ${name}`}
      tabIndex={-1}
      ref={ref}
      data-testid="node-drawer"
    >
      <header>
        <h2>{name}</h2>
        <button type="button" onClick={close} aria-label="close">
          ×
        </button>
      </header>
      <Loadable state={d} what={`node ${name}`}>
        {(n) => (
          <>
            {n.gone ? (
              <p className="muted" data-testid="drawer-gone">
                This NodeClaim no longer exists: Karpenter removed it. Shown from the stored history.
              </p>
            ) : null}
            <dl className="facts">
              <dt>NodeClaim</dt>
              <dd>{n.nodeClaim ?? "—"}</dd>
              <dt>pool · type</dt>
              <dd>
                {n.node?.nodePool ?? n.labels["karpenter.sh/nodepool"] ?? "—"} ·{" "}
                {n.node?.instanceType ?? n.labels["node.kubernetes.io/instance-type"] ?? "—"} ·{" "}
                {n.node?.capacityType ?? n.labels["karpenter.sh/capacity-type"] ?? "—"} ·{" "}
                {n.node?.zone ?? n.labels["topology.kubernetes.io/zone"] ?? "—"}
              </dd>
              <dt>price</dt>
              <dd data-testid="drawer-price">
                {n.price.usdPerHour === null ? "unknown" : `${usd(n.price.usdPerHour)}/h`} · source{" "}
                {n.price.source}
                {n.price.asOf ? ` (as of ${n.price.asOf})` : ""}
                {n.price.listUsdPerHour !== null
                  ? ` · Karpenter's price: ${n.price.pricedBy}, list ${usd(n.price.listUsdPerHour)}/h`
                  : ""}
              </dd>
              <dt>do-not-disrupt</dt>
              <dd data-testid="drawer-dnd">
                {n.doNotDisruptBy === null
                  ? "not set"
                  : n.doNotDisruptBy === "wave-warmup"
                    ? "set by Wave's warmup (held warm)"
                    : "set by a user"}
              </dd>
              {n.node ? (
                <>
                  <dt>requests</dt>
                  <dd>
                    {cores(n.node.cpu.requested)}/{cores(n.node.cpu.allocatable)} cores ·{" "}
                    {bytes(n.node.memoryBytes.requested)}/{bytes(n.node.memoryBytes.allocatable)}
                  </dd>
                </>
              ) : null}
            </dl>
            {n.disruption ? <DisruptionSection d={n.disruption} /> : null}
            <h3>Lifecycle</h3>
            {n.timeline.length === 0 ? (
              <p className="empty">
                No lifecycle recorded: the NodeClaim is older than the store's history, or the node is not
                Karpenter's.
              </p>
            ) : (
              <ol className="timeline" data-testid="drawer-timeline">
                {n.timeline.map((t) => (
                  <li key={t.phase}>
                    <b>{t.phase}</b> {dateTime(t.at)}
                    {t.sincePreviousSeconds === null ? (
                      ""
                    ) : (
                      <span className="muted"> +{duration(t.sincePreviousSeconds)}</span>
                    )}
                    {t.reason ? <span className="muted"> · {t.reason}</span> : null}
                  </li>
                ))}
              </ol>
            )}
            <h3>Pods ({n.pods.length})</h3>
            {n.pods.length === 0 ? (
              <p className="empty">No pods on this node.</p>
            ) : (
              <ul className="pods">
                {n.pods.map((p) => (
                  <li key={`${p.namespace}/${p.name}`}>
                    {p.namespace}/{p.name}{" "}
                    <span className="muted">
                      {cores(p.cpu)} cpu · {bytes(p.memoryBytes)}
                      {p.wave ? ` · ${p.wave}` : ""}
                    </span>
                  </li>
                ))}
              </ul>
            )}
            <h3>Taints</h3>
            {n.taints.length === 0 ? (
              <p className="empty">None.</p>
            ) : (
              <ul>
                {n.taints.map((t) => (
                  <li key={`${t.key}:${t.effect}`}>
                    <code>
                      {t.key}
                      {t.value ? `=${t.value}` : ""}:{t.effect}
                    </code>
                  </li>
                ))}
              </ul>
            )}
            <h3>Labels</h3>
            <ul className="labels">
              {Object.entries(n.labels).map(([k, v]) => (
                <li key={k}>
                  <code>
                    {k}={v}
                  </code>
                </li>
              ))}
            </ul>
          </>
        )}
      </Loadable>
    </aside>
  );
}
