import { useEffect, useState } from "react";
import type {
  ClusterDto,
  DisruptionDto,
  LifecycleEventDto,
  LiveDto,
  NodeListDto,
  SeriesDto,
  ThrashingDto,
} from "../../src/dashboard/dto.ts";
import { ApiError, followLive, listClusters, setToken, takeToken } from "./api.ts";
import { HistoryChart } from "./Chart.tsx";
import { NodeTable } from "./NodeTable.tsx";
import { useJson } from "./hooks.ts";
import { ago, bytes, cores, duration, pct, time, usd } from "./format.ts";

const CLUSTERS_POLL_MS = 10_000;

export function App() {
  const [token, setTok] = useState<string | null>(() => takeToken());
  const [clusters, setClusters] = useState<ClusterDto[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [clusterId, setClusterId] = useState<string | undefined>();

  useEffect(() => {
    // Polled: clusters that connect later appear, and an agent's connection state stays current.
    let loaded = false;
    const load = (): void => {
      listClusters(token).then(
        (cs) => {
          loaded = true;
          setClusters(cs);
          setError(undefined);
          setClusterId((id) => id ?? cs[0]?.id);
        },
        (err: unknown) => {
          const unauthorized = err instanceof ApiError && err.status === 401;
          // A failed poll once the dashboard is up is left to the live link's "reconnecting".
          if (unauthorized || !loaded) setError(unauthorized ? "token" : (err as Error).message);
        },
      );
    };
    load();
    const t = setInterval(load, CLUSTERS_POLL_MS);
    return () => clearInterval(t);
  }, [token]);

  if (error === "token")
    return (
      <TokenForm
        onToken={(t) => {
          setToken(t);
          setTok(t);
        }}
      />
    );
  if (error) return <p className="error">Cannot reach Wave's API: {error}</p>;
  if (!clusters) return <p className="loading">Loading…</p>;
  if (clusters.length === 0)
    return <p className="empty">No cluster has connected yet. Start a Wave agent pointed at this core.</p>;
  const cluster = clusters.find((c) => c.id === clusterId) ?? clusters[0];
  if (!cluster) return null;
  return (
    <Dashboard
      key={cluster.id}
      cluster={cluster}
      clusters={clusters}
      token={token}
      onCluster={setClusterId}
    />
  );
}

function TokenForm({ onToken }: { onToken: (t: string) => void }) {
  const [value, setValue] = useState("");
  return (
    <form
      className="token"
      onSubmit={(e) => {
        e.preventDefault();
        onToken(value.trim());
      }}
    >
      <h1>Wave</h1>
      <p>
        Paste a viewer or admin token (printed by <code>wave start</code>).
      </p>
      <input type="password" value={value} onChange={(e) => setValue(e.target.value)} aria-label="token" />
      <button type="submit">Open dashboard</button>
    </form>
  );
}

function Dashboard(props: {
  cluster: ClusterDto;
  clusters: ClusterDto[];
  token: string | null;
  onCluster: (id: string) => void;
}) {
  const { cluster, token } = props;
  const [live, setLive] = useState<LiveDto | undefined>();
  const [link, setLink] = useState<"live" | "reconnecting">("reconnecting");
  const [version, setVersion] = useState(0);
  const [now, setNow] = useState(() => Date.now());
  const base = `api/v1/clusters/${encodeURIComponent(cluster.id)}`;

  useEffect(() => {
    const ac = new AbortController();
    void followLive(
      cluster.id,
      token,
      (d) => {
        setLive(d);
        setVersion((v) => v + 1);
      },
      setLink,
      ac.signal,
    );
    const t = setInterval(() => setNow(Date.now()), 5000);
    return () => {
      ac.abort();
      clearInterval(t);
    };
  }, [cluster.id, token]);

  const nodes = useJson<NodeListDto>(`${base}/nodes`, token, version);
  const thrashing = useJson<ThrashingDto[]>(`${base}/thrashing`, token, version, 5000);
  const disruptions = useJson<DisruptionDto[]>(`${base}/disruptions?limit=50`, token, version, 2000);
  const lifecycle = useJson<LifecycleEventDto[]>(`${base}/events?limit=50`, token, version, 2000);
  const series = useJson<SeriesDto>(`${base}/series?window=21600`, token, version, 15000);

  const o = live?.overview;
  return (
    <main>
      <header>
        <h1>Wave</h1>
        <select value={cluster.id} onChange={(e) => props.onCluster(e.target.value)} aria-label="cluster">
          {props.clusters.map((c) => (
            <option key={c.id} value={c.id}>
              {c.id}
            </option>
          ))}
        </select>
        {cluster.simulated ? <span className="tag sim">simulated cluster</span> : null}
        {cluster.connected ? null : (
          <span
            className="tag bad"
            data-testid="agent-disconnected"
            title="Figures are frozen at the agent's last message; history marks the gap."
          >
            agent disconnected · last data {ago(cluster.lastSeen, now)} ago
          </span>
        )}
        <span className="muted">
          Kubernetes {cluster.kubernetesVersion ?? "?"} · Karpenter {cluster.karpenterVersion ?? "?"}
        </span>
        <span className={`link ${link}`} data-testid="link-state">
          {link === "live" ? "● live" : "○ reconnecting"}
        </span>
      </header>

      {!o ? (
        <p className="loading">Waiting for the first snapshot…</p>
      ) : (
        <>
          <section className="cards">
            <Card
              label="nodes"
              value={String(o.nodes)}
              testid="overview-nodes"
              sub={`${o.nodePools} NodePools · ${o.pendingPods} pending pods`}
            />
            <Card
              label="cost per hour"
              value={usd(o.costPerHour)}
              testid="overview-cost"
              sub={`${usd(o.costPerMonth)} / month · priced ${Object.entries(o.priceSources)
                .map(([k, v]) => `${v} ${k}`)
                .join(", ")}`}
            />
            <Card
              label="spot ratio"
              value={pct(o.spotRatio.nodes)}
              testid="overview-spot"
              sub={`vCPU ${pct(o.spotRatio.vcpu)} · cost ${pct(o.spotRatio.cost)} · saves ${usd(o.spotSavingsPerHour)}/h`}
            />
            <Card
              label="requested / allocatable"
              value={`${pct(o.allocatable.cpu ? o.requested.cpu / o.allocatable.cpu : null)} cpu`}
              sub={`${cores(o.requested.cpu)}/${cores(o.allocatable.cpu)} cores · ${bytes(o.requested.memoryBytes)}/${bytes(o.allocatable.memoryBytes)}`}
            />
            <Card
              label="disruptions (1 h)"
              value={String(o.disruptionsLastHour)}
              sub={o.thrashingPools.length ? `thrashing: ${o.thrashingPools.join(", ")}` : "no thrashing"}
            />
            <Card
              label="warm nodes"
              value={String(o.warmup.warmNodes)}
              sub={`${usd(o.warmup.costPerHour)}/h · ${o.warmup.hits} hits / ${o.warmup.misses} misses · saved ${Math.round(o.warmup.timeSavedSeconds)} s`}
            />
          </section>

          {thrashing.data && thrashing.data.some((t) => t.severity !== "none") ? (
            <section className="alerts">
              <h2>Thrashing</h2>
              {thrashing.data
                .filter((t) => t.severity !== "none")
                .map((t) => (
                  <details key={t.nodePool} className={`alert ${t.severity}`} data-testid="thrashing-alert">
                    <summary>
                      <b>{t.nodePool}</b> — {withoutPrefix(t.summary, `${t.nodePool}: `)}
                    </summary>
                    <ul>
                      {t.advice.map((a) => (
                        <li key={a}>{a}</li>
                      ))}
                    </ul>
                    <table>
                      <thead>
                        <tr>
                          <th>nodeclaim</th>
                          <th>type</th>
                          <th>created</th>
                          <th>lived</th>
                          <th>reason</th>
                        </tr>
                      </thead>
                      <tbody>
                        {t.evidence.map((e) => (
                          <tr key={e.nodeClaim}>
                            <td>{e.nodeClaim}</td>
                            <td>{e.instanceType ?? "—"}</td>
                            <td>{time(e.createdAt)}</td>
                            <td>{e.lifetimeSeconds === null ? "alive" : duration(e.lifetimeSeconds)}</td>
                            <td>{e.reason ?? "—"}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </details>
                ))}
            </section>
          ) : null}

          <section>
            <h2>NodePools</h2>
            {live.nodePools.length === 0 ? (
              <p className="empty">No NodePools.</p>
            ) : (
              <table data-testid="pool-table">
                <thead>
                  <tr>
                    <th>pool</th>
                    <th>nodes</th>
                    <th>spot / on-demand</th>
                    <th>vCPU</th>
                    <th>memory</th>
                    <th>$/h</th>
                    <th>spot $/h</th>
                    <th>on-demand $/h</th>
                    <th>$/month</th>
                    <th>cpu limit</th>
                    <th>memory limit</th>
                    <th>consolidation</th>
                  </tr>
                </thead>
                <tbody>
                  {live.nodePools.map((p) => (
                    <tr key={p.name} data-testid="pool-row">
                      <td>
                        {p.name}
                        {p.thrashing !== "none" ? (
                          <span className={`tag ${p.thrashing}`}>thrashing</span>
                        ) : null}
                        {p.warmNodes ? <span className="tag warm">{p.warmNodes} warm</span> : null}
                      </td>
                      <td data-testid="pool-nodes">{p.nodes}</td>
                      <td>
                        {p.nodesByCapacityType.spot ?? 0} / {p.nodesByCapacityType["on-demand"] ?? 0}
                      </td>
                      <td>{cores(p.vcpu)}</td>
                      <td>{bytes(p.memoryBytes)}</td>
                      <td>{usd(p.costPerHour)}</td>
                      <td>{usd(p.costByCapacityType.spot ?? 0)}</td>
                      <td>{usd(p.costByCapacityType["on-demand"] ?? 0)}</td>
                      <td>{usd(p.costPerMonth)}</td>
                      <td>
                        <Bar fraction={p.limitUsage.cpu} />
                      </td>
                      <td>
                        <Bar fraction={p.limitUsage.memory} />
                      </td>
                      <td>
                        {p.consolidationPolicy ?? "—"} after {p.consolidateAfter ?? "—"}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>

          <section>
            <h2>History (6 h)</h2>
            {series.data ? (
              series.data.points.length ? (
                <HistoryChart series={series.data} />
              ) : (
                <p className="empty">No history yet.</p>
              )
            ) : (
              <p className="loading">{series.error ?? "Loading…"}</p>
            )}
          </section>

          {nodes.data ? (
            <NodeTable nodes={nodes.data.items} now={now} />
          ) : (
            <p className="loading">{nodes.error ?? "Loading nodes…"}</p>
          )}

          <div className="two">
            <section>
              <h2>Disruptions</h2>
              {disruptions.data?.length ? (
                <ul className="feed" data-testid="disruptions">
                  {disruptions.data.map((d) => (
                    <li key={`${d.nodeClaim}-${d.at}`}>
                      <span className="muted">{time(d.at)}</span> <b>{d.reason}</b> {d.nodeClaim}{" "}
                      <span className="muted">{d.nodePool}</span>
                    </li>
                  ))}
                </ul>
              ) : (
                <p className="empty">No disruptions recorded.</p>
              )}
            </section>
            <section>
              <h2>Node lifecycle</h2>
              {lifecycle.data?.length ? (
                <ul className="feed" data-testid="lifecycle">
                  {lifecycle.data.map((e) => (
                    <li key={`${e.nodeClaim}-${e.phase}-${e.at}`}>
                      <span className="muted">{ago(e.at, now)} ago</span> <b>{e.phase}</b> {e.nodeClaim}
                      {e.reason ? ` (${e.reason})` : ""} <span className="muted">{e.instanceType}</span>
                    </li>
                  ))}
                </ul>
              ) : (
                <p className="empty">No lifecycle events yet.</p>
              )}
            </section>
          </div>
        </>
      )}
    </main>
  );
}

function Card(props: { label: string; value: string; sub?: string; testid?: string }) {
  return (
    <div className="card">
      <div className="label">{props.label}</div>
      <div className="value" data-testid={props.testid}>
        {props.value}
      </div>
      {props.sub ? <div className="sub">{props.sub}</div> : null}
    </div>
  );
}

function Bar({ fraction }: { fraction: number | null }) {
  if (fraction === null) return <span className="muted">no limit</span>;
  const w = Math.min(1, Math.max(0, fraction));
  return (
    <span className="bar" title={pct(fraction)}>
      <span style={{ width: `${w * 100}%` }} className={w > 0.9 ? "hot" : ""} />
      <em>{pct(fraction)}</em>
    </span>
  );
}

/** The detector's summary starts with the pool's name, which the alert already shows in bold. */
function withoutPrefix(s: string, prefix: string): string {
  return s.startsWith(prefix) ? s.slice(prefix.length) : s;
}
