// The console's shell: token, clusters, role, the route in the URL, navigation, the cluster
// switcher, the time-range picker and the live stream every page follows.
import { useCallback, useEffect, useMemo, useState } from "react";
import type { AuthInfoDto, ClusterDto, LiveDto, WhoAmIDto } from "../../src/dashboard/dto.ts";
import { Versions } from "./Versions.tsx";
import { ApiError, authInfo, followLive, listClusters, setToken, signOut, takeToken, whoAmI } from "./api.ts";
import { Audit } from "./pages/Audit.tsx";
import type { PageCtx } from "./ctx.ts";
import { Connection, connectionSuffix } from "./Connection.tsx";
import { clusterBase } from "./paths.ts";
import { Disruptions } from "./pages/Disruptions.tsx";
import { NodeDrawer } from "./pages/NodeDrawer.tsx";
import { NodePools } from "./pages/NodePools.tsx";
import { Nodes } from "./pages/Nodes.tsx";
import { Overview } from "./pages/Overview.tsx";
import { Spot } from "./pages/Spot.tsx";
import { Thrashing } from "./pages/Thrashing.tsx";
import { Consolidation } from "./pages/Consolidation.tsx";
import { WhatifPage } from "./pages/WhatifPage.tsx";
import { Warmup } from "./pages/Warmup.tsx";
import { PRESETS, resolveRange, type RangeSpec } from "./range.ts";
import { formatRoute, PAGES, parseRoute, type Route } from "./route.ts";

const CLUSTERS_POLL_MS = 10_000;

function useRoute(): [Route, (patch: Partial<Route>) => void] {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = (): void => setRoute(parseRoute(location.hash));
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  const go = useCallback((patch: Partial<Route>) => {
    const next = { ...parseRoute(location.hash), ...patch };
    // A new page starts without the old page's filters.
    if (patch.page !== undefined && patch.params === undefined) next.params = {};
    location.hash = formatRoute(next);
  }, []);
  return [route, go];
}

export function App() {
  const [token, setTok] = useState<string | null>(() => takeToken());
  const [clusters, setClusters] = useState<ClusterDto[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const [role, setRole] = useState<"viewer" | "namespace-editor" | "admin" | undefined>();
  const [who, setWho] = useState<WhoAmIDto | undefined>();
  const [info, setInfo] = useState<AuthInfoDto | undefined>();

  const [signIn, setSignIn] = useState<{ why: string; then: (() => void) | undefined } | undefined>();
  const askAdmin = useCallback((why: string, then?: () => void) => setSignIn({ why, then }), []);
  const [route, go] = useRoute();
  // Asked only once the API wants a sign-in: how (a provider's button, or tokens only).
  const needsSignIn = error === "token";
  useEffect(() => {
    if (needsSignIn) authInfo().then(setInfo, () => setInfo(undefined));
  }, [needsSignIn]);

  useEffect(() => {
    // Polled: clusters that connect later appear, and an agent's connection state stays current.
    let loaded = false;
    const load = (): void => {
      listClusters(token).then(
        (cs) => {
          loaded = true;
          setClusters(cs);
          setError(undefined);
        },
        (err: unknown) => {
          const unauthorized = err instanceof ApiError && err.status === 401;
          // A failed poll once the console is up is left to the live link's "reconnecting".
          if (unauthorized || !loaded) setError(unauthorized ? "token" : (err as Error).message);
        },
      );
    };
    load();
    whoAmI(token).then(
      (w) => {
        setRole(w.role);
        setWho(w);
      },
      () => {
        setRole(undefined);
        setWho(undefined);
      },
    );
    const t = setInterval(load, CLUSTERS_POLL_MS);
    return () => clearInterval(t);
  }, [token]);

  const acceptToken = (t: string): undefined => {
    setToken(t);
    setTok(t);
    setSignIn(undefined);
    return undefined;
  };
  // The admin prompt checks the token before it replaces the one in use: a mistyped token must
  // not sign the user out of the console, and a viewer's token grants nothing to continue with.
  const acceptAdmin = async (t: string): Promise<string | undefined> => {
    let who: "viewer" | "namespace-editor" | "admin";
    try {
      who = (await whoAmI(t)).role;
    } catch (err) {
      return err instanceof ApiError && err.status === 401
        ? "That token was not accepted. Check it and try again; you are still signed in as before."
        : `Could not check the token: ${(err as Error).message}`;
    }
    if (who !== "admin") return "That is a viewer token: this needs the admin token.";
    const then = signIn?.then;
    acceptToken(t);
    setRole("admin");
    then?.();
    return undefined;
  };

  if (error === "token")
    return (
      <>
        {info?.oidc ? (
          <div className="token" data-testid="oidc-sign-in">
            <h1>Wave</h1>
            <a className="button signin" href={info.oidc.loginPath}>
              Sign in with {info.oidc.provider}
            </a>
          </div>
        ) : null}
        {token !== null ? <RejectedToken /> : null}
        <TokenForm
          onToken={acceptToken}
          why={
            info?.oidc
              ? "Or sign in with a Wave API token."
              : "Wave's API needs a token to show this cluster."
          }
        />
      </>
    );
  if (error)
    return (
      <p className="error" role="alert">
        Cannot reach Wave's API: {error}
      </p>
    );
  // A cluster named in the URL starts at once: its pages load beside the cluster list instead of
  // after it. Once the list is in, an id it does not hold falls back to the first cluster.
  const cluster = clusters?.find((c) => c.id === route.cluster) ?? clusters?.[0];
  const clusterId = clusters ? cluster?.id : route.cluster;
  if (clusters?.length === 0)
    return <p className="empty">No cluster has connected yet. Start a Wave agent pointed at this core.</p>;
  if (clusterId === undefined) return <p className="loading">Loading…</p>;
  return (
    <>
      <Console
        key={clusterId}
        clusterId={clusterId}
        cluster={cluster}
        clusters={clusters}
        token={token}
        role={role}
        who={who}
        route={route}
        go={go}
        askAdmin={askAdmin}
      />
      {signIn !== undefined ? (
        <div className="modal" role="dialog" aria-modal="true" aria-label="sign in as admin">
          <TokenForm
            onToken={acceptAdmin}
            why={`To ${signIn.why}, sign in with the admin token.`}
            onCancel={() => setSignIn(undefined)}
          />
        </div>
      ) : null}
    </>
  );
}

/**
 * The token this console was opened with (the link's, or the session's) was refused: say so, and
 * where the current one is — not a bare sign-in form that looks like nothing was tried.
 */
function RejectedToken() {
  return (
    <div className="token rejected" role="alert" data-testid="token-rejected">
      <p>
        <strong>The token in this link was rejected.</strong> It is not one of this Wave's tokens any more:
        they were rotated (<code>wave start --rotate-tokens</code>, a new <code>--data-dir</code>, or new
        tokens in the chart's Secret).
      </p>
      <p>
        Open the Dashboard link <code>wave start</code> printed when it last started (its generated tokens are
        kept in <code>&lt;data-dir&gt;/tokens.json</code>), or sign in below with the current token.
      </p>
    </div>
  );
}

export function TokenForm({
  onToken,
  why,
  onCancel,
}: {
  /** Accepts the token, or answers why not (the form stays, with the message). */
  onToken: (t: string) => Promise<string | undefined> | undefined;
  why: string;
  onCancel?: () => void;
}) {
  const [value, setValue] = useState("");
  const [problem, setProblem] = useState<string | undefined>();
  return (
    <form
      className="token"
      onSubmit={(e) => {
        e.preventDefault();
        if (!value.trim()) return;
        setProblem(undefined);
        void Promise.resolve(onToken(value.trim())).then((why: string | undefined) => {
          if (why !== undefined) setProblem(why);
        });
      }}
    >
      <h1>Wave</h1>
      <p>{why}</p>
      <p className="muted">
        Tokens are printed by <code>wave start</code> (or in the chart's Secret). A viewer token shows
        everything; an admin token also edits policies.
      </p>
      <input
        type="password"
        value={value}
        onChange={(e) => setValue(e.target.value)}
        aria-label="token"
        autoFocus
      />
      {problem ? (
        <p className="error" role="alert" data-testid="token-problem">
          {problem}
        </p>
      ) : null}
      <div className="buttons">
        <button type="submit">Sign in</button>
        {onCancel ? (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

function RangePicker({
  range,
  onRange,
  now,
}: {
  range: RangeSpec;
  onRange: (r: RangeSpec) => void;
  now: number;
}) {
  const value = range.kind === "preset" ? range.id : "custom";
  const { from, to } = resolveRange(range, now);
  const local = (t: number): string => {
    const d = new Date(t - new Date(t).getTimezoneOffset() * 60_000);
    return d.toISOString().slice(0, 16);
  };
  const parse = (s: string): number => Date.parse(s);
  return (
    <span className="range">
      <select
        aria-label="time range"
        value={value}
        onChange={(e) => {
          const v = e.target.value;
          if (v === "custom") onRange({ kind: "custom", from, to });
          else onRange({ kind: "preset", id: v as keyof typeof PRESETS });
        }}
      >
        {Object.keys(PRESETS).map((k) => (
          <option key={k} value={k}>
            last {k}
          </option>
        ))}
        <option value="custom">custom…</option>
      </select>
      {range.kind === "custom" ? (
        <>
          <input
            type="datetime-local"
            aria-label="from"
            value={local(from)}
            onChange={(e) => {
              const f = parse(e.target.value);
              if (f < to) onRange({ kind: "custom", from: f, to });
            }}
          />
          <input
            type="datetime-local"
            aria-label="to"
            value={local(to)}
            onChange={(e) => {
              const t = parse(e.target.value);
              if (t > from) onRange({ kind: "custom", from, to: t });
            }}
          />
        </>
      ) : null}
    </span>
  );
}

function Console(props: {
  clusterId: string;
  /** Undefined until the cluster list answers. */
  cluster: ClusterDto | undefined;
  clusters: ClusterDto[] | undefined;
  token: string | null;
  role: "viewer" | "namespace-editor" | "admin" | undefined;
  /** Who is signed in (subject, groups, role, how). */
  who?: WhoAmIDto | undefined;
  route: Route;
  go: (patch: Partial<Route>) => void;
  askAdmin: (why: string) => void;
}) {
  const { clusterId, cluster, token, route, go } = props;
  const [live, setLive] = useState<LiveDto | undefined>();
  const [link, setLink] = useState<"live" | "reconnecting">("reconnecting");
  const [version, setVersion] = useState(0);
  const [now, setNow] = useState(() => Date.now());
  const base = clusterBase(clusterId);

  useEffect(() => {
    const ac = new AbortController();
    void followLive(
      clusterId,
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
  }, [clusterId, token]);

  const refresh = useCallback(() => setVersion((v) => v + 1), []);
  const ctx: PageCtx = useMemo(
    () => ({
      clusterId,
      cluster,
      base,
      token,
      role: props.role,
      version,
      live,
      now,
      route,
      go,
      askAdmin: props.askAdmin,
      refresh,
    }),
    [clusterId, cluster, base, token, props.role, version, live, now, route, go, props.askAdmin, refresh],
  );
  const link_ = (page: Route["page"]): string =>
    formatRoute({ ...route, page, params: {}, node: undefined, cluster: clusterId });
  const Page = {
    overview: Overview,
    nodepools: NodePools,
    nodes: Nodes,
    warmup: Warmup,
    spot: Spot,
    disruptions: Disruptions,
    thrashing: Thrashing,
    consolidation: Consolidation,
    whatif: WhatifPage,
    audit: Audit,
  }[route.page];
  return (
    <div className="app">
      <header className="top">
        <h1>Wave</h1>
        <select
          value={clusterId}
          onChange={(e) => go({ cluster: e.target.value, node: undefined })}
          aria-label="cluster"
        >
          {(props.clusters ?? [{ id: clusterId, connected: true, catchingUp: null }]).map((c) => (
            <option key={c.id} value={c.id}>
              {c.id}
              {connectionSuffix(c)}
            </option>
          ))}
        </select>
        <RangePicker range={route.range} onRange={(r) => go({ range: r })} now={now} />
        {cluster?.simulated ? <span className="tag sim">simulated cluster</span> : null}
        {cluster ? <Connection cluster={cluster} now={now} /> : null}
        {cluster ? <Versions cluster={cluster} /> : null}
        <span className={`link ${link}`} data-testid="link-state">
          {link === "live" ? "● live" : "○ reconnecting"}
        </span>
        {props.who && props.who.source !== "token" ? (
          <span className="who" data-testid="who" title={props.who.groups.join(", ")}>
            {props.who.subject}
          </span>
        ) : null}
        {props.role === "admin" ? (
          <span className="tag admin" data-testid="role">
            admin
          </span>
        ) : props.role === "namespace-editor" ? (
          <span className="tag editor" data-testid="role">
            namespace editor: {(props.who?.namespaces ?? []).join(", ")}
          </span>
        ) : props.who && props.who.source !== "token" ? (
          <span className="tag" data-testid="role">
            viewer
          </span>
        ) : (
          <button
            type="button"
            className="signin"
            data-testid="role"
            onClick={() => props.askAdmin("edit policies")}
          >
            viewer · sign in as admin
          </button>
        )}
        {props.who?.source === "oidc" ? (
          <button type="button" className="signout" data-testid="sign-out" onClick={() => void signOut()}>
            Sign out
          </button>
        ) : null}
      </header>
      <nav aria-label="pages">
        {PAGES.map((p) => (
          <a key={p.id} href={link_(p.id)} aria-current={route.page === p.id ? "page" : undefined}>
            {p.label}
          </a>
        ))}
      </nav>
      <main>
        <Page ctx={ctx} />
      </main>
      {route.node ? <NodeDrawer ctx={ctx} name={route.node} /> : null}
    </div>
  );
}
