import { useState } from "react";
import type { ThrashingDto, ThrashingFixesDto } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { dateTime, duration, num } from "../format.ts";
import { useJson } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";

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

function Copy({ text }: { text: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={() => {
        void navigator.clipboard.writeText(text).then(
          () => setDone(true),
          () => setDone(false),
        );
      }}
    >
      {done ? "Copied" : "Copy"}
    </button>
  );
}

export function Thrashing({ ctx }: { ctx: PageCtx }) {
  const reports = useJson<ThrashingDto[]>(`${ctx.base}/thrashing`, ctx.token, ctx.version, 5000);
  const fixes = useJson<ThrashingFixesDto[]>(`${ctx.base}/thrashing/fixes`, ctx.token, ctx.version, 5000);
  return (
    <Loadable state={reports} what="thrashing reports">
      {(all) => {
        const flagged = all.filter((r) => r.severity !== "none");
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
                  <h3>What to do</h3>
                  <ul className="fixes">
                    {(f?.fixes ?? r.advice.map((a) => ({ title: a, detail: "", kubectl: null }))).map((x) => (
                      <li key={x.title}>
                        <b>{x.title}</b>
                        {x.detail ? `: ${x.detail}` : ""}
                        {x.kubectl ? (
                          <div className="cmd">
                            <code data-testid="kubectl-patch">{x.kubectl}</code>
                            <Copy text={x.kubectl} />
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
