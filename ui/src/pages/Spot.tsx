import { useState } from "react";
import type {
  SpotPodDto,
  SpotPolicyDto,
  SpotRepairDto,
  SpotViewDto,
  SpotWorkloadDto,
} from "../../../src/dashboard/dto.ts";
import { deleteSpotPolicy, saveSpotPolicy } from "../api.ts";
import type { PageCtx } from "../ctx.ts";
import { dateTime, num, usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { rangeQuery } from "../range.ts";
import { Card, Loadable } from "../Status.tsx";
import { SAVINGS_SCOPE } from "../Savings.tsx";
import { Table, type Column } from "../Table.tsx";
import { spotPreview, spotProblems } from "./policy.ts";
import { WhatifPanel } from "./Whatif.tsx";
import { EditorFooter, usePolicyAction } from "./editor.tsx";
import { workloadKey, workloadName } from "../../../src/policy/spot.ts";
import { WorkloadName } from "../Workload.tsx";

const keyOf = (w: SpotPolicyDto["workload"]): string => workloadKey(w);

/** What a late answer is and what it leaves behind (the column's and the card's explanation). */
const LATE_ANSWERS_EXPLAINED =
  "Admissions the webhook answered after its deadline in the selected range (WaveSpotLateAnswer " +
  "Events). Such a pod was created without Wave's capacity-type affinity, so the scheduler placed " +
  "it on whatever capacity it found; it is corrected at the workload's next rollout or by the repair.";

/**
 * The repair's progress on a workload given a policy while it runs (issue 28): "adopting: k of n
 * pods to move, next in 5 s" and the evictions done; in dry-run what it would evict. `at` is the
 * view's time (the server's now), so "next in" does not drift with the browser's clock.
 */
export function progressLine(w: SpotWorkloadDto, at: number): string | null {
  const p = w.progress;
  if (!p) return null;
  const done = `${num(p.done)} eviction${p.done === 1 ? "" : "s"} done`;
  if (p.mode === "dry-run")
    return `dry-run: ${num(p.toMove)} of ${num(w.pods)} pods would move, ${num(p.planned)} eviction${p.planned === 1 ? "" : "s"} planned, none done`;
  if (p.mode === "off")
    return p.toMove > 0 ? `repair off: ${num(p.toMove)} of ${num(w.pods)} pods off target` : null;
  if (p.toMove === 0) return p.done > 0 ? `at target · ${done}` : null;
  const next = p.nextAt === null ? "" : `, next in ${num(Math.max(0, Math.round((p.nextAt - at) / 1000)))} s`;
  return `adopting: ${num(p.toMove)} of ${num(w.pods)} pods to move${next} · ${done}`;
}

function workloadColumns(at: number): Column<SpotWorkloadDto>[] {
  return [
    {
      key: "workload",
      label: "workload",
      value: (w) => workloadName(w.workload),
      render: (w) => (
        <>
          <WorkloadName w={w.workload} />
          {w.warnings.map((x) => (
            <span key={x.kind} className="tag warn" title={x.message}>
              {x.kind}
            </span>
          ))}
        </>
      ),
    },
    {
      key: "policy",
      label: "policy",
      value: (w) => (w.policy ? `${w.policy.threshold} ${w.policy.strategy}` : null),
      render: (w) => {
        if (!w.policy) return <span className="muted">none</span>;
        const progress = progressLine(w, at);
        return (
          <>
            {`base ${num(w.policy.threshold)} · ${w.policy.strategy}${w.policy.percentAboveBase ? ` · ${num(w.policy.percentAboveBase)}% above` : ""}`}
            {progress ? (
              <div className="muted" data-testid="spot-progress">
                {progress}
              </div>
            ) : null}
          </>
        );
      },
    },
    {
      key: "pods",
      label: "pods",
      numeric: true,
      value: (w) => w.pods,
      render: (w) => <span data-testid="spot-pods">{num(w.pods)}</span>,
    },
    {
      key: "target",
      label: "target od / spot",
      numeric: true,
      value: (w) => w.target?.onDemand ?? null,
      render: (w) => (
        <span data-testid="spot-target">
          {w.target ? `${num(w.target.onDemand)} / ${num(w.target.spot)}` : "—"}
        </span>
      ),
    },
    {
      key: "actual",
      label: "actual od / spot",
      numeric: true,
      value: (w) => w.actual.onDemand,
      render: (w) => (
        <span data-testid="spot-actual">
          {num(w.actual.onDemand)} / {num(w.actual.spot)}
          {w.actual.pending ? <span className="muted"> +{num(w.actual.pending)} pending</span> : null}
        </span>
      ),
    },
    {
      key: "fallbacks",
      label: "fallbacks",
      title: "Prefer's fallbacks in the selected range: the repair's Fallback actions (self-heal)",
      numeric: true,
      wide: true,
      value: (w) => w.fallbacks,
      render: (w) => <span data-testid="spot-fallbacks">{num(w.fallbacks)}</span>,
    },
    {
      key: "repairs",
      label: "self-heal",
      title: "the repair's actions (evictions, blocked evictions, fallbacks) in the selected range",
      numeric: true,
      value: (w) => w.repairs.total,
      render: (w) => <span data-testid="spot-repairs">{num(w.repairs.total)}</span>,
    },
    {
      key: "lateAnswers",
      label: "late answers",
      title: LATE_ANSWERS_EXPLAINED,
      numeric: true,
      value: (w) => w.lateAnswers,
      render: (w) =>
        w.lateAnswers > 0 ? (
          <span
            className="tag warn"
            data-testid="spot-late-answers"
            title={`${num(w.lateAnswers)} pod(s) answered late in range. ${LATE_ANSWERS_EXPLAINED}`}
          >
            {num(w.lateAnswers)}
          </span>
        ) : (
          <span className="muted" data-testid="spot-late-answers" title="no late answers in range">
            —
          </span>
        ),
    },
    {
      key: "cost",
      label: "$/h",
      numeric: true,
      value: (w) => w.costPerHour,
      render: (w) => usd(w.costPerHour),
    },
    {
      key: "saved",
      label: "saved $/h",
      numeric: true,
      value: (w) => w.savedPerHour,
      render: (w) => <span data-testid="spot-saved">{usd(w.savedPerHour)}</span>,
    },
  ];
}

const podColumns: Column<SpotPodDto>[] = [
  { key: "name", label: "pod", value: (p) => p.name },
  { key: "node", label: "node", value: (p) => p.node },
  {
    key: "ct",
    label: "capacity",
    value: (p) => p.capacityType,
    render: (p) => (
      <span className={p.capacityType === "spot" ? "spot" : "od"}>{p.capacityType ?? "pending"}</span>
    ),
  },
  { key: "assigned", label: "Wave assigned", value: (p) => p.assigned },
  {
    key: "cost",
    label: "$/h share",
    numeric: true,
    value: (p) => p.costPerHour,
    render: (p) => (p.costPerHour === null ? "—" : usd(p.costPerHour)),
  },
  { key: "note", label: "note", value: (p) => p.note, wide: true },
];

const repairColumns: Column<SpotRepairDto>[] = [
  {
    key: "at",
    label: "when",
    numeric: true,
    value: (r) => r.at,
    render: (r) => dateTime(r.at),
  },
  {
    key: "action",
    label: "action",
    value: (r) => r.action,
    render: (r) => (
      <span className={r.type === "Warning" ? "tag warn" : "tag"} title={r.type}>
        {r.action || "—"}
      </span>
    ),
  },
  { key: "pod", label: "pod", value: (r) => r.pod },
  { key: "why", label: "why", value: (r) => r.message },
];

/** The repair's self-heal actions for one workload over the range: counts by action, newest few. */
function Repairs({ w }: { w: SpotWorkloadDto }) {
  const counts = Object.entries(w.repairs.byAction).sort((a, b) => b[1] - a[1]);
  const listed = w.repairs.recent.length;
  return (
    <div data-testid="spot-repair-list">
      <Table
        label="Self-heal actions"
        columns={repairColumns}
        rows={w.repairs.recent}
        rowKey={(r) => `${r.at}/${r.pod}/${r.action}`}
        rowTestId="spot-repair-row"
        initialSort={{ key: "at", desc: true }}
        empty="No self-heal actions in this range: the repair found every pod on its slot's capacity type."
      >
        {w.repairs.total > 0 ? (
          <p className="muted" data-testid="spot-repair-counts">
            <span data-testid="spot-repair-total">{num(w.repairs.total)}</span> in range:{" "}
            {counts.map(([a, n]) => `${a} ${num(n)}`).join(" · ")}
            {w.repairs.total > listed ? ` · the newest ${num(listed)} listed` : ""}
          </p>
        ) : null}
      </Table>
    </div>
  );
}

export function Spot({ ctx }: { ctx: PageCtx }) {
  const selected = ctx.route.params["workload"];
  const q = `?${rangeQuery(ctx.route.range, ctx.now)}${selected ? `&workload=${encodeURIComponent(selected)}` : ""}`;
  const view = useJson<SpotViewDto>(`${ctx.base}/spot-placement${q}`, ctx.token, ctx.version, 2000);
  const [editing, setEditing] = useState<string | undefined>();
  return (
    <Loadable state={view} what="spot placement">
      {(v) => {
        const open = v.workloads.find((w) => keyOf(w.workload) === selected);
        return (
          <>
            <section className="cards" aria-label="spot placement totals">
              <Card
                label="managed pods"
                value={num(v.totals.pods)}
                testid="spot-total-pods"
                sub={`pods of the ${num(v.totals.workloads)} workloads with a policy`}
              />
              <Card
                label="on-demand / spot"
                value={`${num(v.totals.onDemand)} / ${num(v.totals.spot)}`}
                testid="spot-total-split"
              />
              <Card
                label="workloads' spot savings"
                value={`${usd(v.totals.savedPerHour)}/h`}
                testid="spot-total-saved"
                sub={`${SAVINGS_SCOPE.workloads}, managed workloads only (the Overview's figure: ${SAVINGS_SCOPE.nodes})`}
              />
              <Card
                label="fallbacks in range"
                value={num(v.totals.fallbacks)}
                testid="spot-total-fallbacks"
                sub={`the repair's Fallback actions · ${num(v.totals.onDemandNow)} pod(s) assigned spot on on-demand now`}
              />
              <Card
                label="late answers"
                value={num(v.totals.lateAnswers)}
                testid="spot-total-late-answers"
                tone={v.totals.lateAnswers > 0 ? "warn" : ""}
                sub="pods created without Wave's affinity in range (webhook past its deadline)"
              />
              <Card
                label="self-heal actions"
                value={num(v.totals.repairs)}
                testid="spot-total-repairs"
                sub="the repair's evictions and fallbacks in range"
              />
            </section>
            <Table
              label="Workloads"
              testId="spot-table"
              rowTestId="spot-row"
              columns={workloadColumns(v.at)}
              rows={v.workloads}
              rowKey={(w) => keyOf(w.workload)}
              empty="No Deployment, StatefulSet or ReplicaSet pods and no spot policy yet."
              onRow={(w) => ctx.go({ params: { workload: keyOf(w.workload) } })}
              headingExtra={
                <button
                  type="button"
                  className="edit"
                  onClick={() =>
                    ctx.role === "admin"
                      ? setEditing("new")
                      : ctx.askAdmin("create spot policies", () => setEditing("new"))
                  }
                >
                  {ctx.role === "admin" ? "New policy" : "New policy (admin)"}
                </button>
              }
            />
            {editing === "new" ? (
              <SpotEditor ctx={ctx} view={v} onDone={() => setEditing(undefined)} />
            ) : null}
            {open ? (
              <section className="panel" data-testid="spot-detail">
                <h2>
                  {workloadName(open.workload)}
                  <button
                    type="button"
                    className="edit"
                    onClick={() =>
                      ctx.role === "admin"
                        ? setEditing(keyOf(open.workload))
                        : ctx.askAdmin("edit spot policies", () => setEditing(keyOf(open.workload)))
                    }
                  >
                    {ctx.role === "admin" ? (open.policy ? "Edit policy" : "Create policy") : "Edit (admin)"}
                  </button>
                  <button type="button" onClick={() => ctx.go({ params: {} })} aria-label="close workload">
                    ×
                  </button>
                </h2>
                {open.warnings.map((w) => (
                  <p key={w.kind} className="warning" role="note">
                    ⚠ {w.message}
                  </p>
                ))}
                <p className="muted">
                  Pools: {open.nodePools.join(", ") || "—"} · {usd(open.costPerHour)}/h now · saves{" "}
                  {usd(open.savedPerHour)}/h against all on-demand
                </p>
                {editing === keyOf(open.workload) ? (
                  <SpotEditor ctx={ctx} view={v} workload={open} onDone={() => setEditing(undefined)} />
                ) : null}
                <Repairs w={open} />
                <Table
                  label="Pods"
                  columns={podColumns}
                  rows={open.items}
                  rowKey={(p) => `${p.namespace}/${p.name}`}
                  empty="No live pods."
                  virtualAbove={60}
                  onRow={(p) => (p.node ? ctx.go({ node: p.node }) : undefined)}
                />
              </section>
            ) : null}
          </>
        );
      }}
    </Loadable>
  );
}

function SpotEditor({
  ctx,
  view,
  workload,
  onDone,
}: {
  ctx: PageCtx;
  view: SpotViewDto;
  workload?: SpotWorkloadDto;
  onDone: () => void;
}) {
  const [target, setTarget] = useState<SpotPolicyDto["workload"]>(
    workload?.workload ?? { namespace: "", kind: "Deployment", name: "" },
  );
  const [threshold, setThreshold] = useState(workload?.policy?.threshold ?? 1);
  const [strategy, setStrategy] = useState<"Prefer" | "Require">(workload?.policy?.strategy ?? "Prefer");
  const [pctAbove, setPctAbove] = useState(workload?.policy?.percentAboveBase ?? 0);
  const problems = spotProblems({ threshold, percentAboveBase: pctAbove });
  if (!target.namespace || !target.name) problems["workload"] = "namespace and name are required";
  const current = view.workloads.find((w) => keyOf(w.workload) === keyOf(target));
  const action = usePolicyAction(ctx, "spot policies", onDone);
  const { act } = action;
  const candidates = view.workloads.filter((w) => !w.policy);
  return (
    <form
      className="editor"
      aria-label="spot policy"
      onSubmit={(e) => {
        e.preventDefault();
        if (Object.keys(problems).length === 0)
          void act((force) =>
            saveSpotPolicy(
              ctx.base,
              ctx.token,
              {
                workload: target,
                threshold,
                strategy,
                ...(pctAbove ? { percentAboveBase: pctAbove } : {}),
              },
              force,
            ),
          );
      }}
    >
      {workload ? null : (
        <>
          <label>
            workload
            <select
              value={keyOf(target)}
              onChange={(e) => {
                const w = candidates.find((c) => keyOf(c.workload) === e.target.value);
                if (w) setTarget(w.workload);
              }}
            >
              <option value={keyOf(target)}>{target.name ? workloadName(target) : "pick a workload…"}</option>
              {candidates.map((c) => (
                <option key={keyOf(c.workload)} value={keyOf(c.workload)}>
                  {workloadName(c.workload)} ({num(c.pods)} pods)
                </option>
              ))}
            </select>
          </label>
          <label>
            namespace
            <input
              value={target.namespace}
              onChange={(e) => setTarget({ ...target, namespace: e.target.value.trim() })}
            />
          </label>
          <label>
            kind
            <select
              value={target.kind}
              onChange={(e) =>
                setTarget({ ...target, kind: e.target.value as SpotPolicyDto["workload"]["kind"] })
              }
            >
              <option>Deployment</option>
              <option>StatefulSet</option>
              <option>ReplicaSet</option>
            </select>
          </label>
          <label>
            name
            <input
              value={target.name}
              onChange={(e) => setTarget({ ...target, name: e.target.value.trim() })}
              aria-invalid={problems["workload"] ? true : undefined}
            />
          </label>
        </>
      )}
      <label>
        on-demand base (threshold)
        <input
          type="number"
          min={0}
          value={Number.isNaN(threshold) ? "" : threshold}
          onChange={(e) => setThreshold(e.target.valueAsNumber)}
          aria-invalid={problems["threshold"] ? true : undefined}
        />
        {problems["threshold"] ? <small className="bad">{problems["threshold"]}</small> : null}
      </label>
      <label>
        strategy
        <select value={strategy} onChange={(e) => setStrategy(e.target.value as "Prefer" | "Require")}>
          <option value="Prefer">Prefer (fall back to on-demand)</option>
          <option value="Require">Require (spot only)</option>
        </select>
      </label>
      <label>
        % on-demand above base
        <input
          type="number"
          min={0}
          max={100}
          value={Number.isNaN(pctAbove) ? "" : pctAbove}
          onChange={(e) => setPctAbove(e.target.valueAsNumber)}
          aria-invalid={problems["percentAboveBase"] ? true : undefined}
        />
        {problems["percentAboveBase"] ? <small className="bad">{problems["percentAboveBase"]}</small> : null}
      </label>
      {problems["workload"] ? <small className="bad">{problems["workload"]}</small> : null}
      <p className="preview" data-testid="spot-preview">
        Effect:{" "}
        {spotPreview(current, {
          threshold: Number.isNaN(threshold) ? 0 : threshold,
          strategy,
          percentAboveBase: pctAbove || 0,
        })}
      </p>
      <WhatifPanel
        ctx={ctx}
        workload={keyOf(target)}
        disabled={Object.keys(problems).length > 0}
        candidate={{
          spot: [
            {
              workload: target,
              threshold,
              strategy,
              ...(pctAbove ? { percentAboveBase: pctAbove } : {}),
            },
          ],
        }}
      />
      <EditorFooter
        action={action}
        invalid={Object.keys(problems).length > 0}
        onDelete={
          workload?.policy ? () => deleteSpotPolicy(ctx.base, ctx.token, workload.workload) : undefined
        }
        onDone={onDone}
      />
    </form>
  );
}
