// Audit: every change made through Wave in this cluster, newest first — who (subject, groups, how
// they signed in), what (action, object, before → after), when and from where (address; ui, api
// or cli) — and beside it the policy resources' versions other field managers wrote (kubectl,
// Argo CD, Flux: changes made outside Wave), with their manager.
import type { AuditEntryDto, AuditListDto, ForeignChangeDto } from "../../../src/dashboard/dto.ts";
import type { PageCtx } from "../ctx.ts";
import { useJson } from "../hooks.ts";
import { Loadable } from "../Status.tsx";
import { Table, type Column } from "../Table.tsx";

const when = (at: number): string => new Date(at).toISOString().replace("T", " ").slice(0, 19) + " UTC";

const columns: Column<AuditEntryDto>[] = [
  { key: "at", label: "when", value: (e) => e.at, render: (e) => when(e.at) },
  {
    key: "who",
    label: "who",
    value: (e) => e.subject,
    render: (e) => (
      <span
        title={e.groups.length > 0 ? `groups: ${e.groups.join(", ")}` : "no groups"}
        data-testid="audit-who"
      >
        {e.subject}
        {e.groups.length > 0 ? <span className="muted"> ({e.groups.join(", ")})</span> : null}
      </span>
    ),
  },
  { key: "source", label: "signed in by", value: (e) => e.source, wide: true },
  { key: "action", label: "action", value: (e) => e.action },
  { key: "object", label: "object", value: (e) => e.object },
  {
    key: "change",
    label: "before → after",
    render: (e) => (
      <code className="audit-change">
        {e.before ?? "—"} → {e.after ?? "(deleted)"}
      </code>
    ),
  },
  {
    key: "from",
    label: "from",
    value: (e) => `${e.via} ${e.address}`,
    render: (e) => `${e.via} · ${e.address}`,
    wide: true,
  },
];

const foreignColumns: Column<ForeignChangeDto>[] = [
  { key: "at", label: "when", value: (e) => e.at, render: (e) => when(e.at) },
  {
    key: "manager",
    label: "field manager",
    value: (e) => e.manager,
    render: (e) => <span data-testid="foreign-manager">{e.manager}</span>,
  },
  {
    key: "object",
    label: "object",
    value: (e) => `${e.kind} ${e.name}`,
    render: (e) => `${e.kind} ${e.name}`,
  },
  {
    key: "spec",
    label: "spec",
    render: (e) => <code className="audit-change">{e.deleted ? "(deleted)" : (e.spec ?? "—")}</code>,
  },
];

export function Audit({ ctx }: { ctx: PageCtx }) {
  const list = useJson<AuditListDto>(`${ctx.base}/audit?limit=200`, ctx.token, ctx.version, 5000);
  return (
    <Loadable state={list} what="the audit">
      {(l) => (
        <section className="panel" data-testid="audit">
          <Table
            label="Changes made through Wave"
            columns={columns}
            rows={l.entries}
            rowKey={(e) => String(e.id)}
            empty="No change has been made through Wave in this cluster yet."
            initialSort={{ key: "at", desc: true }}
            rowTestId="audit-row"
          />
          <Table
            label="Changes made elsewhere (kubectl, Argo CD, Flux), by field manager"
            columns={foreignColumns}
            rows={l.elsewhere}
            rowKey={(e) => `${e.kind}/${e.name}/${e.at}/${e.manager}`}
            empty="No policy resource was changed outside Wave."
            initialSort={{ key: "at", desc: true }}
            rowTestId="foreign-row"
          />
        </section>
      )}
    </Loadable>
  );
}
