import { useState } from "react";
import type { WarmNodeDto, WarmupBlocker, WarmupPoolDto, WarmupViewDto } from "../../../src/dashboard/dto.ts";
import { deleteWarmupPolicy, saveWarmupPolicy } from "../api.ts";
import type { PageCtx } from "../ctx.ts";
import { duration, num, usd } from "../format.ts";
import { useJson } from "../hooks.ts";
import { rangeQuery } from "../range.ts";
import { Card, Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";
import { warmupPreview, warmupProblems, type WarmupPolicy } from "./policy.ts";
import { WhatifPanel } from "./Whatif.tsx";
import { EditorFooter, usePolicyAction } from "./editor.tsx";

const BLOCKERS: Record<WarmupBlocker, string> = {
  disabled: "disabled",
  "no-workload": "no workload",
  "fits-existing-node": "fits an existing node",
  "max-warm-nodes": "max warm nodes reached",
  "in-flight": "a warmup is launching",
  cooldown: "cooling down",
  "pool-limit": "pool limit reached",
  "cost-cap": "cost cap reached",
  "price-unknown": "price unknown",
  "pool-missing": "NodePool missing",
  "static-pool": "static NodePool",
};

const warmNodeColumns: Column<WarmNodeDto>[] = [
  { key: "name", label: "node", value: (w) => w.name },
  {
    key: "age",
    label: "age",
    numeric: true,
    value: (w) => w.ageSeconds,
    render: (w) => (w.ageSeconds === null ? "—" : duration(w.ageSeconds)),
  },
  {
    key: "ttl",
    label: "TTL left",
    numeric: true,
    value: (w) => w.ttlLeftSeconds,
    render: (w) =>
      w.ttlLeftSeconds === null ? "—" : w.ttlLeftSeconds < 0 ? "expired" : duration(w.ttlLeftSeconds),
  },
  {
    key: "cost",
    label: "$/h",
    numeric: true,
    value: (w) => w.costPerHour,
    render: (w) => (w.costPerHour === null ? "—" : usd(w.costPerHour)),
  },
  { key: "waiting", label: "held by", value: (w) => (w.waiting ? "warmup pod" : "protection"), wide: true },
  {
    key: "images",
    label: "pre-pull",
    value: (w) => w.images.filter((i) => i.status === "pulled").length,
    render: (w) =>
      w.images.length === 0 ? (
        <span className="muted">no images</span>
      ) : (
        <ul className="images">
          {w.images.map((i) => (
            <li key={i.image} className={`img ${i.status}`} title={i.image}>
              {i.status === "pulled" ? "✓" : i.status === "failed" ? "✗" : i.status === "pulling" ? "↻" : "·"}{" "}
              {i.image}
            </li>
          ))}
        </ul>
      ),
  },
];

export function Warmup({ ctx }: { ctx: PageCtx }) {
  const view = useJson<WarmupViewDto>(
    `${ctx.base}/warmup?${rangeQuery(ctx.route.range, ctx.now)}`,
    ctx.token,
    ctx.version,
    2000,
  );
  const [editing, setEditing] = useState<string | undefined>(ctx.route.params["edit"]);
  return (
    <Loadable state={view} what="warmup">
      {(v) => {
        const t = v.pools.reduce(
          (a, p) => ({
            warm: a.warm + p.warmNodes.length,
            hits: a.hits + p.hits,
            misses: a.misses + p.misses,
            saved: a.saved + p.timeSavedSeconds,
            cost: a.cost + p.warmCostUsd,
          }),
          { warm: 0, hits: 0, misses: 0, saved: 0, cost: 0 },
        );
        return (
          <>
            <section className="cards" aria-label="warmup totals">
              <Card label="warm nodes" value={num(t.warm)} testid="warmup-warm" />
              <Card
                label="hits / misses"
                value={`${num(t.hits)} / ${num(t.misses)}`}
                testid="warmup-hits"
                sub="in range"
              />
              <Card
                label="time saved (measured)"
                value={duration(t.saved)}
                testid="warmup-saved"
                sub="vs the pools' own cold starts"
              />
              <Card label="warm capacity cost" value={usd(t.cost)} testid="warmup-cost" sub="in range" />
            </section>
            {v.pools.length === 0 ? (
              <p className="empty">No NodePools and no warmup policies: nothing to warm.</p>
            ) : (
              v.pools.map((p) => (
                <PoolWarmup
                  key={p.nodePool}
                  ctx={ctx}
                  pool={p}
                  editing={editing === p.nodePool}
                  onEdit={(on) => setEditing(on ? p.nodePool : undefined)}
                />
              ))
            )}
          </>
        );
      }}
    </Loadable>
  );
}

function PoolWarmup({
  ctx,
  pool: p,
  editing,
  onEdit,
}: {
  ctx: PageCtx;
  pool: WarmupPoolDto;
  editing: boolean;
  onEdit: (on: boolean) => void;
}) {
  const pol = p.policy;
  return (
    <section className="panel pool-warmup" data-testid="warmup-pool" data-pool={p.nodePool}>
      <h2>
        {p.nodePool}
        <span className={`state ${p.state}`} data-testid="warmup-state">
          {p.state}
        </span>
        {p.blocker ? (
          <span className="muted" data-testid="warmup-blocker" title={p.blockerDetail ?? ""}>
            {p.state === "idle" ? "not warming" : "no further warmup"}: {BLOCKERS[p.blocker]}
          </span>
        ) : (
          <span className="muted">warming when needed</span>
        )}
        <button
          type="button"
          className="edit"
          onClick={() =>
            ctx.role === "admin"
              ? onEdit(!editing)
              : ctx.askAdmin(`edit the warmup policy of ${p.nodePool}`, () => onEdit(true))
          }
        >
          {ctx.role === "admin"
            ? editing
              ? "Close"
              : p.configured
                ? "Edit policy"
                : "Create policy"
            : "Edit (admin)"}
        </button>
      </h2>
      {p.blockerDetail ? <p className="why">{p.blockerDetail}</p> : null}
      <dl className="facts">
        <dt>policy</dt>
        <dd data-testid="warmup-policy">
          {pol.enabled ? "enabled" : "disabled"}
          {p.configured ? "" : " (defaults)"} · max {num(pol.maxWarmNodes)} warm · TTL{" "}
          {duration(pol.ttlSeconds)} · cooldown {duration(pol.cooldownSeconds)} · cap{" "}
          {pol.maxCostPerHour === null ? "none" : `${usd(pol.maxCostPerHour)}/h`} · pre-pull{" "}
          {pol.prePull ? "on" : "off"}
        </dd>
        <dt>in range</dt>
        <dd>
          <span data-testid="pool-hits">{num(p.hits)}</span> hits ·{" "}
          <span data-testid="pool-misses">{num(p.misses)}</span> misses
          {Object.keys(p.missesByReason).length
            ? ` (${Object.entries(p.missesByReason)
                .map(([k, n]) => `${num(n)} ${k}`)
                .join(", ")})`
            : ""}{" "}
          · {num(p.created)} started · {num(p.imagesPulled)} images pulled
          {p.pullFailures ? `, ${num(p.pullFailures)} failed` : ""} · warm cost{" "}
          <span data-testid="pool-warm-cost">{usd(p.warmCostUsd)}</span>
        </dd>
        <dt>start times</dt>
        <dd data-testid="pool-start-times">
          cold{" "}
          {p.coldStartSeconds === null
            ? "not measured yet"
            : `${duration(p.coldStartSeconds)} (median of ${num(p.coldStartSamples)})`}{" "}
          · warm{" "}
          {p.warmStartSeconds === null
            ? "no hit measured yet"
            : `${duration(p.warmStartSeconds)} (median of ${num(p.warmStartSamples)})`}{" "}
          · saved <span data-testid="pool-time-saved">{duration(p.timeSavedSeconds)}</span>{" "}
          <span className="muted" data-testid="pool-saved-how">
            {p.warmNotFaster
              ? `(warm starts were not faster than cold ones: only ${num(p.hitsCredited)} of ${num(p.hits)} hits started faster than the pool's cold start)`
              : `(${num(p.hitsCredited)} of ${num(p.hits)} hits, each: the pool's cold start in the 24 h before it minus its own start)`}
          </span>
        </dd>
      </dl>
      {editing ? <WarmupEditor ctx={ctx} pool={p} onDone={() => onEdit(false)} /> : null}
      {p.warmNodes.length > 0 ? (
        <Table
          label="Warm nodes"
          columns={warmNodeColumns}
          rows={p.warmNodes}
          rowKey={(w) => w.name}
          empty=""
          onRow={(w) => ctx.go({ node: w.name })}
          rowTestId="warm-node-row"
        />
      ) : p.warmupPods.length > 0 ? (
        <p className="muted">
          {num(p.warmupPods.length)} warmup pod(s) waiting for Karpenter to launch a node:{" "}
          {p.warmupPods.map((w) => w.name).join(", ")}
        </p>
      ) : null}
    </section>
  );
}

function WarmupEditor({ ctx, pool, onDone }: { ctx: PageCtx; pool: WarmupPoolDto; onDone: () => void }) {
  const [draft, setDraft] = useState<WarmupPolicy>({
    ...pool.policy,
    enabled: pool.configured ? pool.policy.enabled : true,
  });
  const problems = warmupProblems(draft);
  const set = (patch: Partial<WarmupPolicy>): void => setDraft((d) => ({ ...d, ...patch }));
  const int = (
    k: "maxWarmNodes" | "ttlSeconds" | "cooldownSeconds" | "prePullDeadlineSeconds",
    label: string,
  ) => (
    <label>
      {label}
      <input
        type="number"
        value={Number.isNaN(draft[k]) ? "" : draft[k]}
        onChange={(e) => set({ [k]: e.target.valueAsNumber })}
        aria-invalid={problems[k] ? true : undefined}
      />
      {problems[k] ? <small className="bad">{problems[k]}</small> : null}
    </label>
  );
  const action = usePolicyAction(ctx, "warmup policies", onDone);
  const { act } = action;
  return (
    <form
      className="editor"
      aria-label={`warmup policy for ${pool.nodePool}`}
      onSubmit={(e) => {
        e.preventDefault();
        if (Object.keys(problems).length === 0)
          void act((force) => saveWarmupPolicy(ctx.base, ctx.token, pool.nodePool, draft, force));
      }}
    >
      <label className="check">
        <input type="checkbox" checked={draft.enabled} onChange={(e) => set({ enabled: e.target.checked })} />{" "}
        enabled
      </label>
      {int("maxWarmNodes", "max warm nodes")}
      {int("ttlSeconds", "TTL (s)")}
      {int("cooldownSeconds", "cooldown (s)")}
      <label>
        cost cap ($/h)
        <input
          type="number"
          step="0.01"
          placeholder="no cap"
          value={draft.maxCostPerHour ?? ""}
          onChange={(e) => set({ maxCostPerHour: e.target.value === "" ? null : e.target.valueAsNumber })}
          aria-invalid={problems["maxCostPerHour"] ? true : undefined}
        />
        {problems["maxCostPerHour"] ? <small className="bad">{problems["maxCostPerHour"]}</small> : null}
      </label>
      <label className="check">
        <input type="checkbox" checked={draft.prePull} onChange={(e) => set({ prePull: e.target.checked })} />{" "}
        pre-pull images
      </label>
      {int("prePullDeadlineSeconds", "pre-pull deadline (s)")}
      <p className="preview" data-testid="warmup-preview">
        {Object.keys(problems).length > 0
          ? `Save is off until the marked field${Object.keys(problems).length === 1 ? " is" : "s are"} fixed: ${Object.entries(
              problems,
            )
              .map(([k, v]) => `${k} ${v}`)
              .join("; ")}`
          : `Effect: ${warmupPreview(pool, draft)}`}
      </p>
      <WhatifPanel
        ctx={ctx}
        disabled={Object.keys(problems).length > 0}
        candidate={{ warmup: { [pool.nodePool]: draft } }}
      />
      <EditorFooter
        action={action}
        invalid={Object.keys(problems).length > 0}
        onDelete={pool.configured ? () => deleteWarmupPolicy(ctx.base, ctx.token, pool.nodePool) : undefined}
        onDone={onDone}
      />
    </form>
  );
}
