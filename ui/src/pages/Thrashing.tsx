import { useState } from "react";
import type { ThrashingDto, ThrashingFixesDto } from "../../../src/dashboard/dto.ts";
import { ApiError, applyThrashingFix } from "../api.ts";
import type { PageCtx } from "../ctx.ts";
import { dateTime, duration, num, time } from "../format.ts";
import { useJson } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";
import { Copy } from "../Copy.tsx";

type Evidence = ThrashingDto["evidence"][number];

const evidenceColumns: Column<Evidence>[] = [
  { key: "claim", label: "NodeClaim", value: (e) => e.nodeClaim },
  { key: "type", label: "type", value: (e) => e.instanceType },
  {
    key: "created",
    label: "created",
    numeric: true,
    value: (e) => e.createdAt,
    render: (e) => dateTime(e.createdAt),
  },
  {
    key: "lived",
    label: "lived",
    numeric: true,
    value: (e) => e.lifetimeSeconds,
    render: (e) => (e.lifetimeSeconds === null ? "alive" : duration(e.lifetimeSeconds)),
  },
  { key: "reason", label: "reason", value: (e) => e.reason },
  {
    key: "cause",
    label: "cause",
    value: (e) => e.cause,
    render: (e) => (e.cause === "warmup" ? "Wave warmup (unused)" : "—"),
  },
];

/**
 * On the embedded simulated cluster Wave can apply a fix itself (admin, after a confirmation
 * that shows the exact patch). On a real cluster there is no button: the kubectl patch is the way.
 */
function Apply({
  ctx,
  pool,
  title,
  kubectl,
}: {
  ctx: PageCtx;
  pool: string;
  title: string;
  kubectl: string;
}) {
  const [state, setState] = useState<"idle" | "confirm" | "busy" | "done">("idle");
  const [error, setError] = useState<string>();
  if (state === "done")
    return (
      <span className="ok" role="status" data-testid="fix-applied">
        Applied to NodePool {pool}.
      </span>
    );
  if (state === "idle")
    return (
      <button
        type="button"
        onClick={() =>
          ctx.role === "admin"
            ? setState("confirm")
            : ctx.askAdmin(`apply "${title}" to NodePool ${pool}`, () => setState("confirm"))
        }
      >
        {ctx.role === "admin" ? "Apply…" : "Apply (admin)"}
      </button>
    );
  const apply = async (): Promise<void> => {
    setState("busy");
    setError(undefined);
    try {
      await applyThrashingFix(ctx.base, ctx.token, pool, title);
      setState("done");
      ctx.refresh();
    } catch (err) {
      setState("confirm");
      if (err instanceof ApiError && (err.status === 401 || err.status === 403))
        ctx.askAdmin(`apply "${title}" to NodePool ${pool}`);
      else setError((err as Error).message);
    }
  };
  return (
    <div className="confirm" role="group" aria-label={`apply the fix to ${pool}`}>
      <p>
        Patch NodePool <b>{pool}</b> on the simulated cluster, as this command would?
      </p>
      <code className="command" data-testid="confirm-command">
        {kubectl}
      </code>
      <button type="button" disabled={state === "busy"} onClick={() => void apply()}>
        Apply patch
      </button>
      <button type="button" disabled={state === "busy"} onClick={() => setState("idle")}>
        Cancel
      </button>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </div>
  );
}

/**
 * A fix applied within the detector's window: the score still counts the cycles from before it,
 * so say when it went in and when the score should clear, rather than advise on top of it.
 */
function FixInEffect({ fix, now }: { fix: NonNullable<ThrashingFixesDto["applied"]>; now: number }) {
  const windowMin = Math.round((fix.clearsBy - fix.at) / 60_000);
  const left = Math.max(0, Math.ceil((fix.clearsBy - now) / 60_000));
  return (
    <p className="applied" role="status" data-testid="fix-in-effect">
      <b>Fix applied at {dateTime(fix.at)}</b>: {fix.title}. The score counts the cycles of the last{" "}
      {windowMin} minutes, all from before the fix: it is expected to clear by {time(fix.clearsBy)}
      {left > 0 ? ` (in ${num(left)} min)` : ""} if no new cycle comes. No other change is advised until then.
    </p>
  );
}

export function Thrashing({ ctx }: { ctx: PageCtx }) {
  const reports = useJson<ThrashingDto[]>(`${ctx.base}/thrashing`, ctx.token, ctx.version, 5000);
  const fixes = useJson<ThrashingFixesDto[]>(`${ctx.base}/thrashing/fixes`, ctx.token, ctx.version, 5000);
  return (
    <Loadable state={reports} what="thrashing reports">
      {(all) => {
        const flagged = all.filter((r) => r.flagged);
        if (flagged.length === 0)
          return (
            <p className="empty" data-testid="no-thrashing">
              No NodePool is thrashing: no pool has repeatedly created and removed nodes within the detector's
              window ({num(all.length)} pools checked).
            </p>
          );
        return (
          <>
            {flagged.map((r) => {
              const f = fixes.data?.find((x) => x.nodePool === r.nodePool);
              return (
                <section
                  key={r.nodePool}
                  className={`panel alert ${r.severity}`}
                  data-testid="thrashing-alert"
                  data-pool={r.nodePool}
                >
                  <h2>
                    <b>{r.nodePool}</b>
                    <span className={`tag ${r.severity}`}>{r.severity}</span>
                    <span className="muted">score {num(r.score)}</span>
                  </h2>
                  <p>{r.summary}</p>
                  {f?.applied ? <FixInEffect fix={f.applied} now={ctx.now} /> : null}
                  {f?.applied ? null : <h3>What to do</h3>}
                  <ul className="fixes">
                    {(f?.fixes ?? r.advice.map((a) => ({ title: a, detail: "", kubectl: null }))).map((x) => (
                      <li key={x.title}>
                        <b>{x.title}</b>
                        {x.detail ? `: ${x.detail}` : ""}
                        {x.kubectl ? (
                          <div className="cmd">
                            <code data-testid="kubectl-patch">{x.kubectl}</code>
                            <Copy text={x.kubectl} />
                            {f?.canApply ? (
                              <Apply ctx={ctx} pool={r.nodePool} title={x.title} kubectl={x.kubectl} />
                            ) : null}
                          </div>
                        ) : null}
                      </li>
                    ))}
                  </ul>
                  <Table
                    label="Evidence"
                    columns={evidenceColumns}
                    rows={r.evidence}
                    rowKey={(e) => e.nodeClaim}
                    initialSort={{ key: "created", desc: true }}
                    empty="No NodeClaims."
                    rowTestId="evidence-row"
                    onRow={(e) => ctx.go({ node: e.nodeClaim })}
                  />
                </section>
              );
            })}
          </>
        );
      }}
    </Loadable>
  );
}
