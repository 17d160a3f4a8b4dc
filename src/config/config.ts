// Wave's configuration: defaults < optional file (--config) < environment (WAVE_*) < flags.
// Parsed once at start-up into a frozen, validated object; every error is a ConfigError whose
// message is one line a user can act on (the CLI prints it and exits 2).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";

export class ConfigError extends Error {
  override name = "ConfigError";
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface WaveConfig {
  /** Path of a kubeconfig; undefined → in-cluster or the embedded simulated cluster. */
  kubeconfig: string | undefined;
  context: string | undefined;
  /** Run on the embedded simulated Karpenter cluster instead of a real one. */
  simulate: boolean;
  clusterId: string;
  namespace: string;
  host: string;
  /** HTTP port of the API and web UI (0 = ephemeral). */
  port: number;
  /** gRPC port for agents (0 = ephemeral). */
  grpcPort: number;
  /** HTTPS port of the spot-placement webhook (0 = ephemeral). */
  webhookPort: number;
  dataDir: string;
  /** postgres://… to use PostgreSQL; otherwise SQLite under dataDir. */
  databaseUrl: string | undefined;
  logLevel: LogLevel;
  /** json or pretty (one readable line); unset → pretty in a terminal, JSON otherwise. */
  logFormat: "json" | "pretty" | undefined;
  verbose: boolean;
  /** Bearer tokens for the API. */
  adminToken: string | undefined;
  viewerToken: string | undefined;
  // ---- per-component processes (`wave agent|core|webhook`, the Helm chart's env contract) ----
  /** Leader-election identity (the pod name); unset → the host name. */
  podName: string | undefined;
  /** Bearer token the agent sends and core accepts on the gRPC stream. */
  agentToken: string | undefined;
  /** The agent's leader Lease in `namespace`. */
  agentLease: string;
  /** Core's gRPC endpoint for `wave agent`: https://host:port. */
  coreAddress: string | undefined;
  /** The agent's client certificate directory (tls.crt, tls.key; ca.crt verifies core). */
  agentTlsDir: string | undefined;
  /** Port of the agent's /metrics and /healthz (0 = ephemeral). */
  metricsPort: number;
  /** Core's gRPC serving certificate directory (tls.crt, tls.key; ca.crt verifies agents). */
  grpcTlsDir: string | undefined;
  /** Where `wave webhook` pulls its SpotPolicySet (core's API, read with the viewer token). */
  spotPoliciesUrl: string | undefined;
  /**
   * Where `wave webhook` reads its spot policies: "crd" — the SpotPolicy resources, through its
   * own informer (issue 31); "core" — pulled from `spotPoliciesUrl`. Unset: core when a URL is
   * given, else the CRDs.
   */
  spotPolicySource: "crd" | "core" | undefined;
  /**
   * Where the warmup controller beside `wave agent` takes its policies: "crd" — the WarmupPolicy
   * resources once their informer has listed them (issue 31; until then, or without the CRD,
   * core's set); "core" — core's set over the agent stream only. Unset: crd.
   */
  warmupPolicySource: "crd" | "core" | undefined;
  /** The webhook's serving certificate directory (tls.crt, tls.key). */
  webhookTlsDir: string | undefined;
  /** What the webhook does when no spot decision can be made in time. */
  webhookFallback: "unchanged" | "spot-preferred";
  /**
   * Core's API as the other core replicas reach it (http://<pod IP>:8080): they read a cluster this
   * replica owns through it (ADR 0012). Unset → http://<host name>:<port>.
   */
  advertiseUrl: string | undefined;
  /** The webhook's own deadline per admission, below the apiserver's timeout. */
  webhookDeadlineMs: number;
  /**
   * The apiserver's source CIDRs as the webhook sees them: their connections are never capped per
   * address nor taken by others (issue 42). Empty: an address earns that priority by a valid review.
   */
  webhookControlPlaneCidrs: readonly string[];
  // ---- prices (docs/pricing.md, ADR 0011) ----
  /** auto: live AWS prices when credentials resolve, else the table; aws: always try; static: never. */
  pricingSource: "auto" | "aws" | "static";
  /** Regions priced live; empty: the regions of the cluster's nodes. */
  pricingRegions: readonly string[];
  /** How often live prices are refreshed. */
  pricingRefreshMs: number;
  /** Live prices older than this are not served (the table answers, labelled). */
  pricingMaxAgeMs: number;
  // ---- security (docs/security.md) ----
  /** YAML/JSON file of agent credentials: token and/or certificate identity → cluster ids. */
  agentCredentials: string | undefined;
  /** The client-certificate identity (CN or SAN) the default agent credential requires. */
  agentIdentity: string;
  /** Accept agents without a client certificate (no ca.crt in the gRPC TLS dir); warns. */
  grpcAllowNoClientCert: boolean;
  /** Serve /metrics and /openapi.json without a token. */
  publicMetrics: boolean;
  /** Serve the web UI's JavaScript source maps. */
  serveSourceMaps: boolean;
  /** Namespace of warmup and pre-pull pods (no Secrets there); unset → `namespace`. */
  warmupNamespace: string | undefined;
  /** Spot policy poll interval; with the watch, the retry delay of a failed long poll. */
  spotPolicyIntervalMs: number;
  /** Long-poll core for spot policy changes (core answers within a round trip of a change). */
  spotPolicyWatch: boolean;
  /** Run the spot repair controller beside the webhook (leader-elected; policies can opt out). */
  spotRepair: boolean;
  /**
   * Every policy's repair in dry-run: adoption and the evictions it would make are reported
   * (PlanEvict Events), nothing is labelled or evicted (a policy's own `repair: "dry-run"` does it for one).
   */
  spotRepairDryRun: boolean;
  /** Namespace of the spot slot ledgers and the repair's leader Lease; unset → `namespace`. */
  spotLedgerNamespace: string | undefined;
  /** Prefer: a spot pod unschedulable this long opens the on-demand fallback (ADR 0007). */
  spotPreferFallbackMs: number;
  /** `wave start` on a cluster: register its webhook (a MutatingWebhookConfiguration) while it runs. */
  registerWebhook: boolean;
  // ---- console identity (docs/auth.md): OIDC sign-in, auth proxy, group → role per cluster ----
  /** The OpenID provider's issuer URL; set → "Sign in with <provider>" in the console. */
  oidcIssuerUrl: string | undefined;
  oidcClientId: string | undefined;
  /** The client secret (env or file only in deployments; unset → a public client with PKCE). */
  oidcClientSecret: string | undefined;
  /** A file holding the client secret (the chart mounts its existingSecret there). */
  oidcClientSecretFile: string | undefined;
  /** Where the provider sends the browser back: https://wave.example.com/auth/callback. */
  oidcRedirectUrl: string | undefined;
  oidcScopes: readonly string[];
  /** The ID token / access token claim holding the user's groups. */
  oidcGroupsClaim: string;
  /** The audience a bearer token must carry to be accepted on the API; unset → the client id. */
  oidcAudience: string | undefined;
  /** The provider's name on the sign-in button; unset → the issuer's host. */
  oidcProviderName: string | undefined;
  /** How long a console sign-in lasts. */
  sessionTtlMs: number;
  /** Group → role per cluster (a YAML/JSON file, or the mapping itself in the config file). */
  authRoles: RoleMapping | undefined;
  /** Auth-proxy mode: addresses/CIDRs whose X-Forwarded-User / X-Auth-Request-User headers are trusted. */
  authProxyTrusted: readonly string[];
  /** Auth-proxy mode: a shared secret the proxy sends in X-Wave-Proxy-Secret (any address). */
  authProxySecret: string | undefined;
  authProxySecretFile: string | undefined;
  /**
   * Auth-proxy mode: the one header family the proxy sets — `x-auth-request` (nginx auth_request,
   * oauth2-proxy --set-xauthrequest) or `x-forwarded` (--pass-user-headers). Never both (issue 42).
   */
  authProxyHeaders: "x-auth-request" | "x-forwarded";
}

/** One cluster's group → role rules ("*": every cluster without its own entry). */
export interface ClusterRoles {
  admin: readonly string[];
  viewer: readonly string[];
  namespaceEditors: readonly { group: string; namespaces: readonly string[] }[];
}

/** Read by src/api/roles.ts (roleInCluster), which declares the same shape (config imports nothing). */
export interface RoleMapping {
  clusters: Readonly<Record<string, ClusterRoles>>;
}

/** Where state goes without --data-dir (the simulated cluster's history is fresh each run there). */
export const DEFAULT_DATA_DIR = ".wave";

export const DEFAULTS: WaveConfig = Object.freeze({
  kubeconfig: undefined,
  context: undefined,
  simulate: false,
  clusterId: "default",
  namespace: "wave-system",
  host: "127.0.0.1",
  port: 8080,
  grpcPort: 8081,
  webhookPort: 8443,
  dataDir: DEFAULT_DATA_DIR,
  databaseUrl: undefined,
  logLevel: "info",
  logFormat: undefined,
  verbose: false,
  adminToken: undefined,
  viewerToken: undefined,
  podName: undefined,
  agentToken: undefined,
  agentLease: "wave-agent",
  coreAddress: undefined,
  agentTlsDir: undefined,
  metricsPort: 9090,
  grpcTlsDir: undefined,
  spotPoliciesUrl: undefined,
  spotPolicySource: undefined,
  warmupPolicySource: undefined,
  webhookTlsDir: undefined,
  webhookFallback: "unchanged",
  webhookDeadlineMs: 1000,
  webhookControlPlaneCidrs: Object.freeze([]),
  pricingSource: "auto",
  pricingRegions: Object.freeze([]),
  pricingRefreshMs: 12 * 3_600_000,
  pricingMaxAgeMs: 24 * 3_600_000,
  advertiseUrl: undefined,
  agentCredentials: undefined,
  agentIdentity: "wave-agent",
  grpcAllowNoClientCert: false,
  publicMetrics: false,
  serveSourceMaps: false,
  warmupNamespace: undefined,
  spotPolicyIntervalMs: 10_000,
  spotPolicyWatch: true,
  spotRepair: true,
  spotRepairDryRun: false,
  spotLedgerNamespace: undefined,
  spotPreferFallbackMs: 90_000,
  registerWebhook: false,
  oidcIssuerUrl: undefined,
  oidcClientId: undefined,
  oidcClientSecret: undefined,
  oidcClientSecretFile: undefined,
  oidcRedirectUrl: undefined,
  oidcScopes: Object.freeze(["openid", "profile", "email"]),
  oidcGroupsClaim: "groups",
  oidcAudience: undefined,
  oidcProviderName: undefined,
  sessionTtlMs: 8 * 3_600_000,
  authRoles: undefined,
  authProxyTrusted: Object.freeze([]),
  authProxySecret: undefined,
  authProxySecretFile: undefined,
  authProxyHeaders: "x-auth-request",
});

type Key = keyof WaveConfig;
type Kind =
  | "string"
  | "port"
  | "bool"
  | "level"
  | "logFormat"
  | "fallback"
  | "deadline"
  | "pricingSource"
  | "policySource"
  | "regions"
  | "duration"
  | "ms"
  | "url"
  | "list"
  | "cidrs"
  | "roles"
  | "proxyHeaders";

/** One table drives flags, env names, file keys and validation, so they cannot drift apart. */
const FIELDS: Record<Key, { kind: Kind; flag: string; env: string; help: string }> = {
  kubeconfig: {
    kind: "string",
    flag: "kubeconfig",
    env: "KUBECONFIG",
    help: "kubeconfig of the cluster to watch",
  },
  context: { kind: "string", flag: "context", env: "WAVE_CONTEXT", help: "kubeconfig context" },
  simulate: {
    kind: "bool",
    flag: "simulate",
    env: "WAVE_SIMULATE",
    help: "run on the embedded simulated cluster",
  },
  clusterId: {
    kind: "string",
    flag: "cluster-id",
    env: "WAVE_CLUSTER_ID",
    help: "name of this cluster in core",
  },
  namespace: { kind: "string", flag: "namespace", env: "WAVE_NAMESPACE", help: "Wave's own namespace" },
  host: { kind: "string", flag: "host", env: "WAVE_HOST", help: "address the servers listen on" },
  port: { kind: "port", flag: "port", env: "WAVE_PORT", help: "API and web UI port (0 = any free port)" },
  grpcPort: { kind: "port", flag: "grpc-port", env: "WAVE_GRPC_PORT", help: "agent gRPC port" },
  webhookPort: { kind: "port", flag: "webhook-port", env: "WAVE_WEBHOOK_PORT", help: "webhook HTTPS port" },
  dataDir: { kind: "string", flag: "data-dir", env: "WAVE_DATA_DIR", help: "directory for the SQLite store" },
  databaseUrl: { kind: "string", flag: "database-url", env: "WAVE_DATABASE_URL", help: "PostgreSQL URL" },
  logLevel: { kind: "level", flag: "log-level", env: "WAVE_LOG_LEVEL", help: "debug|info|warn|error" },
  logFormat: {
    kind: "logFormat",
    flag: "log-format",
    env: "WAVE_LOG_FORMAT",
    help: "json|pretty (default: pretty in a terminal, json otherwise)",
  },
  verbose: { kind: "bool", flag: "verbose", env: "WAVE_VERBOSE", help: "stack traces on errors" },
  adminToken: {
    kind: "string",
    flag: "admin-token",
    env: "WAVE_ADMIN_TOKEN",
    help: "API admin bearer token",
  },
  viewerToken: {
    kind: "string",
    flag: "viewer-token",
    env: "WAVE_VIEWER_TOKEN",
    help: "API viewer bearer token",
  },
  podName: { kind: "string", flag: "pod-name", env: "WAVE_POD_NAME", help: "leader-election identity" },
  agentToken: {
    kind: "string",
    flag: "agent-token",
    env: "WAVE_AGENT_TOKEN",
    help: "agent bearer token on the gRPC stream",
  },
  agentLease: { kind: "string", flag: "agent-lease", env: "WAVE_AGENT_LEASE", help: "agent leader Lease" },
  coreAddress: {
    kind: "string",
    flag: "core-address",
    env: "WAVE_CORE_ADDRESS",
    help: "core gRPC URL for the agent (https://host:port)",
  },
  agentTlsDir: {
    kind: "string",
    flag: "agent-tls-dir",
    env: "WAVE_AGENT_TLS_DIR",
    help: "agent client cert dir (tls.crt, tls.key, ca.crt)",
  },
  metricsPort: {
    kind: "port",
    flag: "metrics-port",
    env: "WAVE_METRICS_PORT",
    help: "agent /metrics and /healthz port",
  },
  grpcTlsDir: {
    kind: "string",
    flag: "grpc-tls-dir",
    env: "WAVE_GRPC_TLS_DIR",
    help: "core gRPC cert dir (tls.crt, tls.key, ca.crt)",
  },
  spotPoliciesUrl: {
    kind: "string",
    flag: "spot-policies-url",
    env: "WAVE_SPOT_POLICIES_URL",
    help: "core's spot policy URL (--spot-policy-source core; given alone, implies it)",
  },
  spotPolicySource: {
    kind: "policySource",
    flag: "spot-policy-source",
    env: "WAVE_SPOT_POLICY_SOURCE",
    help: "crd|core: where the webhook reads spot policies",
  },
  warmupPolicySource: {
    kind: "policySource",
    flag: "warmup-policy-source",
    env: "WAVE_WARMUP_POLICY_SOURCE",
    help: "crd|core: where warmup reads its policies",
  },
  webhookTlsDir: {
    kind: "string",
    flag: "webhook-tls-dir",
    env: "WAVE_WEBHOOK_TLS_DIR",
    help: "webhook serving cert dir (tls.crt, tls.key)",
  },
  webhookFallback: {
    kind: "fallback",
    flag: "webhook-fallback",
    env: "WAVE_WEBHOOK_FALLBACK",
    help: "unchanged|spot-preferred when undecided",
  },
  advertiseUrl: {
    kind: "string",
    flag: "advertise-url",
    env: "WAVE_ADVERTISE_URL",
    help: "core's API URL for the other core replicas",
  },
  webhookDeadlineMs: {
    kind: "deadline",
    flag: "webhook-deadline-ms",
    env: "WAVE_WEBHOOK_DEADLINE_MS",
    help: "webhook deadline per admission, 50-2500 ms",
  },
  webhookControlPlaneCidrs: {
    kind: "cidrs",
    flag: "webhook-control-plane-cidrs",
    env: "WAVE_WEBHOOK_CONTROL_PLANE_CIDRS",
    help: "the apiserver's source CIDRs: webhook connections reserved for it",
  },
  pricingSource: {
    kind: "pricingSource",
    flag: "pricing-source",
    env: "WAVE_PRICING_SOURCE",
    help: "auto|aws|static: live AWS prices or the shipped table",
  },
  pricingRegions: {
    kind: "regions",
    flag: "pricing-region",
    env: "WAVE_PRICING_REGION",
    help: "AWS region(s) to price live, comma-separated (default: the nodes')",
  },
  pricingRefreshMs: {
    kind: "duration",
    flag: "pricing-refresh",
    env: "WAVE_PRICING_REFRESH",
    help: "live price refresh interval, e.g. 12h (5m-7d)",
  },
  pricingMaxAgeMs: {
    kind: "duration",
    flag: "pricing-max-age",
    env: "WAVE_PRICING_MAX_AGE",
    help: "live prices older than this fall back to the table, e.g. 24h",
  },
  agentCredentials: {
    kind: "string",
    flag: "agent-credentials",
    env: "WAVE_AGENT_CREDENTIALS",
    help: "file: agent token/cert identity → cluster ids",
  },
  agentIdentity: {
    kind: "string",
    flag: "agent-identity",
    env: "WAVE_AGENT_IDENTITY",
    help: "client cert CN/SAN the agent must present",
  },
  grpcAllowNoClientCert: {
    kind: "bool",
    flag: "grpc-allow-no-client-cert",
    env: "WAVE_GRPC_ALLOW_NO_CLIENT_CERT",
    help: "accept agents without mutual TLS (warns)",
  },
  publicMetrics: {
    kind: "bool",
    flag: "public-metrics",
    env: "WAVE_PUBLIC_METRICS",
    help: "serve /metrics and /openapi.json without a token",
  },
  serveSourceMaps: {
    kind: "bool",
    flag: "serve-source-maps",
    env: "WAVE_SERVE_SOURCE_MAPS",
    help: "serve the web UI's source maps",
  },
  warmupNamespace: {
    kind: "string",
    flag: "warmup-namespace",
    env: "WAVE_WARMUP_NAMESPACE",
    help: "namespace of warmup and pre-pull pods",
  },
  spotPolicyIntervalMs: {
    kind: "ms",
    flag: "spot-policy-interval-ms",
    env: "WAVE_SPOT_POLICY_INTERVAL_MS",
    help: "spot policy poll/retry interval, ms",
  },
  spotPolicyWatch: {
    kind: "bool",
    flag: "spot-policy-watch",
    env: "WAVE_SPOT_POLICY_WATCH",
    help: "long-poll core for spot policy changes",
  },
  spotRepair: { kind: "bool", flag: "spot-repair", env: "WAVE_SPOT_REPAIR", help: "run the spot repair" },
  spotRepairDryRun: {
    kind: "bool",
    flag: "spot-repair-dry-run",
    env: "WAVE_SPOT_REPAIR_DRY_RUN",
    help: "spot repair plans and reports only (no labels, no evictions)",
  },
  spotLedgerNamespace: {
    kind: "string",
    flag: "spot-ledger-namespace",
    env: "WAVE_SPOT_LEDGER_NAMESPACE",
    help: "namespace of the spot slot ledgers and the repair Lease",
  },
  spotPreferFallbackMs: {
    kind: "ms",
    flag: "spot-prefer-fallback-ms",
    env: "WAVE_SPOT_PREFER_FALLBACK_MS",
    help: "Prefer: unschedulable spot pod → fallback, ms",
  },
  registerWebhook: {
    kind: "bool",
    flag: "register-webhook",
    env: "WAVE_REGISTER_WEBHOOK",
    help: "wave start: register the webhook with the cluster",
  },
  oidcIssuerUrl: {
    kind: "url",
    flag: "oidc-issuer-url",
    env: "WAVE_OIDC_ISSUER_URL",
    help: "OpenID provider issuer URL (console sign-in)",
  },
  oidcClientId: {
    kind: "string",
    flag: "oidc-client-id",
    env: "WAVE_OIDC_CLIENT_ID",
    help: "OIDC client id",
  },
  oidcClientSecret: {
    kind: "string",
    flag: "oidc-client-secret",
    env: "WAVE_OIDC_CLIENT_SECRET",
    help: "OIDC client secret (prefer the env or a file)",
  },
  oidcClientSecretFile: {
    kind: "string",
    flag: "oidc-client-secret-file",
    env: "WAVE_OIDC_CLIENT_SECRET_FILE",
    help: "file holding the OIDC client secret",
  },
  oidcRedirectUrl: {
    kind: "url",
    flag: "oidc-redirect-url",
    env: "WAVE_OIDC_REDIRECT_URL",
    help: "OIDC redirect URL (https://HOST/auth/callback)",
  },
  oidcScopes: {
    kind: "list",
    flag: "oidc-scopes",
    env: "WAVE_OIDC_SCOPES",
    help: "OIDC scopes, comma-separated (openid first)",
  },
  oidcGroupsClaim: {
    kind: "string",
    flag: "oidc-groups-claim",
    env: "WAVE_OIDC_GROUPS_CLAIM",
    help: "claim holding the user's groups",
  },
  oidcAudience: {
    kind: "string",
    flag: "oidc-audience",
    env: "WAVE_OIDC_AUDIENCE",
    help: "audience API bearer tokens must carry (default: client id)",
  },
  oidcProviderName: {
    kind: "string",
    flag: "oidc-provider-name",
    env: "WAVE_OIDC_PROVIDER_NAME",
    help: 'name on the "Sign in with" button',
  },
  sessionTtlMs: {
    kind: "duration",
    flag: "session-ttl",
    env: "WAVE_SESSION_TTL",
    help: "console sign-in lifetime (5m-7d, e.g. 8h)",
  },
  authRoles: {
    kind: "roles",
    flag: "auth-roles",
    env: "WAVE_AUTH_ROLES",
    help: "YAML file: group → role per cluster",
  },
  authProxyTrusted: {
    kind: "cidrs",
    flag: "auth-proxy-trusted",
    env: "WAVE_AUTH_PROXY_TRUSTED",
    help: "auth proxy addresses/CIDRs whose user headers are trusted",
  },
  authProxySecret: {
    kind: "string",
    flag: "auth-proxy-secret",
    env: "WAVE_AUTH_PROXY_SECRET",
    help: "shared secret the auth proxy sends (X-Wave-Proxy-Secret)",
  },
  authProxySecretFile: {
    kind: "string",
    flag: "auth-proxy-secret-file",
    env: "WAVE_AUTH_PROXY_SECRET_FILE",
    help: "file holding the auth proxy's shared secret",
  },
  authProxyHeaders: {
    kind: "proxyHeaders",
    flag: "auth-proxy-headers",
    env: "WAVE_AUTH_PROXY_HEADERS",
    help: "x-auth-request|x-forwarded: the one header family the auth proxy sets",
  },
};

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const MIN_REFRESH_MS = 5 * 60_000;
const MAX_REFRESH_MS = 7 * 86_400_000;
/** Region names as AWS spells them (src/pricing/regional.ts checks the same). */
const REGION = /^[a-z]{2}(?:-gov)?-[a-z]+-\d+$/;

const KEYS = Object.keys(FIELDS) as Key[];

/** The shared flags' names (no dashes): all of them, or those of `flags` that exist. */
export function configFlags(flags?: readonly string[]): string[] {
  const all = ["config", ...KEYS.map((k) => FIELDS[k].flag)];
  return flags === undefined ? all : all.filter((f) => f === "config" || flags.includes(f));
}

/** The shared flags' help lines: all of them, or only `flags` (a command's own, by flag name). */
export function configHelp(flags?: readonly string[]): string {
  const keys = flags === undefined ? KEYS : KEYS.filter((k) => flags.includes(FIELDS[k].flag));
  const rows = keys.map((k) => {
    const f = FIELDS[k];
    const arg = f.kind === "bool" ? "" : " <value>";
    return `  --${(f.flag + arg).padEnd(26)} ${f.help} [env ${f.env}]`;
  });
  return ["  --config <file>".padEnd(30) + " YAML or JSON file with the same keys (camelCase)", ...rows].join(
    "\n",
  );
}

function coerce(key: Key, raw: unknown, origin: string): unknown {
  const f = FIELDS[key];
  const where = `${origin} ${origin === "flag" ? "--" + f.flag : origin === "env" ? f.env : key}`;
  switch (f.kind) {
    case "string":
      if (typeof raw !== "string" || raw.trim() === "")
        throw new ConfigError(`${where}: expected a non-empty string`);
      return raw;
    case "bool":
      if (typeof raw === "boolean") return raw;
      if (raw === "true" || raw === "1") return true;
      if (raw === "false" || raw === "0") return false;
      throw new ConfigError(`${where}: expected true or false, got ${JSON.stringify(raw)}`);
    case "level":
      return oneOf(raw, ["debug", "info", "warn", "error"], where);
    case "logFormat":
      return oneOf(raw, ["json", "pretty"], where);
    case "fallback":
      return oneOf(raw, ["unchanged", "spot-preferred"], where);
    case "proxyHeaders":
      return oneOf(raw, ["x-auth-request", "x-forwarded"], where);
    case "deadline":
      // Below the apiserver's 3 s webhook timeout, above what a lease round trip needs.
      return integerIn(raw, 50, 2500, "milliseconds 50-2500", where);
    case "policySource":
      return oneOf(raw, ["crd", "core"], where);
    case "pricingSource":
      return oneOf(raw, ["auto", "aws", "static"], where);
    case "regions": {
      const list = listOf(raw);
      const bad = list?.find((r) => typeof r !== "string" || !REGION.test(r));
      if (!list || list.length === 0 || bad !== undefined)
        throw new ConfigError(
          `${where}: expected AWS region names like us-east-1 (comma-separated), got ${JSON.stringify(bad ?? raw)}`,
        );
      return Object.freeze([...new Set(list)]);
    }
    case "duration": {
      const m = typeof raw === "string" ? DURATION.exec(raw.trim()) : null;
      const ms = m ? Number(m[1]) * (UNIT_MS[m[2] ?? ""] ?? NaN) : NaN;
      if (!Number.isFinite(ms) || ms < MIN_REFRESH_MS || ms > MAX_REFRESH_MS)
        throw new ConfigError(
          `${where}: expected a duration 5m-7d like 30m, 12h or 2d, got ${JSON.stringify(raw)}`,
        );
      return ms;
    }
    case "ms":
      return integerIn(raw, 100, 86_400_000, "milliseconds 100-86400000", where);
    case "url": {
      let u: URL | undefined;
      try {
        u = typeof raw === "string" ? new URL(raw) : undefined;
      } catch {
        u = undefined;
      }
      if (!u || (u.protocol !== "https:" && u.protocol !== "http:"))
        throw new ConfigError(`${where}: expected an http(s) URL, got ${JSON.stringify(raw)}`);
      return u.href;
    }
    case "list":
    case "cidrs": {
      const list = listOf(raw);
      const bad = list?.find((x) => typeof x !== "string" || x === "" || /\s/.test(x));
      if (!list || bad !== undefined)
        throw new ConfigError(`${where}: expected a comma-separated list, got ${JSON.stringify(bad ?? raw)}`);
      if (f.kind === "cidrs")
        for (const c of list as string[])
          if (!isCidr(c))
            throw new ConfigError(
              `${where}: expected IP addresses or CIDRs like 10.0.0.0/8, got ${JSON.stringify(c)}`,
            );
      return Object.freeze([...new Set(list as string[])]);
    }
    case "roles":
      return parseRoleMapping(typeof raw === "string" ? readYaml(raw, "auth roles file") : raw, where);
    case "port":
      return integerIn(raw, 0, 65535, "a port number 0-65535", where);
  }
}

/** A list given as an array, or as one comma-separated string (blanks dropped); else undefined. */
function listOf(raw: unknown): unknown[] | undefined {
  if (Array.isArray(raw)) return raw as unknown[];
  if (typeof raw !== "string") return undefined;
  return raw
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");
}

/** `raw` if it is one of `allowed`; else a ConfigError that names them ("expected a, b or c"). */
function oneOf(raw: unknown, allowed: readonly string[], where: string): string {
  if (typeof raw === "string" && allowed.includes(raw)) return raw;
  const names = `${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1) ?? ""}`;
  throw new ConfigError(`${where}: expected ${names}, got ${JSON.stringify(raw)}`);
}

/** An integer in [min, max], given as a number or a string of digits; else a ConfigError saying `expected`. */
function integerIn(raw: unknown, min: number, max: number, expected: string, where: string): number {
  const n = typeof raw === "number" ? raw : typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ConfigError(`${where}: expected ${expected}, got ${JSON.stringify(raw)}`);
  return n;
}

function isCidr(c: string): boolean {
  const [addr, bits, extra] = c.split("/");
  if (extra !== undefined || addr === undefined) return false;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(addr);
  const max = v4 ? 32 : /^[0-9a-f:]+$/i.test(addr) && addr.includes(":") ? 128 : -1;
  if (max < 0 || (v4 && v4.slice(1).some((o) => Number(o) > 255))) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= max);
}

function readYaml(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      `${what} ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  try {
    return parseYaml(text);
  } catch (err) {
    throw new ConfigError(
      `${what} ${path}: not valid YAML/JSON (${(err as Error).message.split("\n")[0] ?? ""})`,
    );
  }
}

const GROUP_LIST = (v: unknown, where: string): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((g) => typeof g !== "string" || g === ""))
    throw new ConfigError(`${where}: expected a list of group names`);
  return v as string[];
};
const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * The group → role mapping (docs/auth.md):
 * `clusters: { "*": { admin: [g], viewer: [g], namespaceEditors: [{ group, namespaces: [ns] }] }, prod: {…} }`.
 * A cluster with its own entry uses only that entry; the others use "*".
 */
export function parseRoleMapping(doc: unknown, where = "auth roles"): RoleMapping {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc))
    throw new ConfigError(`${where}: expected a mapping with "clusters"`);
  const extra = Object.keys(doc).filter((k) => k !== "clusters");
  if (extra.length > 0) throw new ConfigError(`${where}: unknown key "${extra[0]}"`);
  const clusters = (doc as { clusters?: unknown }).clusters;
  if (typeof clusters !== "object" || clusters === null || Array.isArray(clusters))
    throw new ConfigError(`${where}: "clusters" must map cluster ids (or "*") to roles`);
  const out: Record<string, ClusterRoles> = {};
  for (const [id, rules] of Object.entries(clusters)) {
    const at = `${where}: clusters.${id}`;
    if (typeof rules !== "object" || rules === null || Array.isArray(rules))
      throw new ConfigError(`${at}: expected admin, viewer and/or namespaceEditors`);
    const r = rules as Record<string, unknown>;
    const unknown = Object.keys(r).find((k) => !["admin", "viewer", "namespaceEditors"].includes(k));
    if (unknown !== undefined) throw new ConfigError(`${at}: unknown key "${unknown}"`);
    const editors = r.namespaceEditors ?? [];
    if (!Array.isArray(editors)) throw new ConfigError(`${at}.namespaceEditors: expected a list`);
    out[id] = Object.freeze({
      admin: Object.freeze(GROUP_LIST(r.admin, `${at}.admin`)),
      viewer: Object.freeze(GROUP_LIST(r.viewer, `${at}.viewer`)),
      namespaceEditors: Object.freeze(
        editors.map((e: unknown, i) => {
          const ea = `${at}.namespaceEditors[${i}]`;
          const g = (e as { group?: unknown } | null)?.group;
          const ns = (e as { namespaces?: unknown } | null)?.namespaces;
          if (typeof g !== "string" || g === "") throw new ConfigError(`${ea}.group: expected a group name`);
          if (
            !Array.isArray(ns) ||
            ns.length === 0 ||
            ns.some((n) => typeof n !== "string" || !NAMESPACE.test(n))
          )
            throw new ConfigError(`${ea}.namespaces: expected a non-empty list of namespace names`);
          return Object.freeze({ group: g, namespaces: Object.freeze([...(ns as string[])]) });
        }),
      ),
    });
  }
  return Object.freeze({ clusters: Object.freeze(out) });
}

function readFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(
      `config file ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError(
      `config file ${path}: not valid YAML/JSON (${(err as Error).message.split("\n")[0] ?? ""})`,
    );
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc))
    throw new ConfigError(`config file ${path}: expected a mapping`);
  for (const k of Object.keys(doc)) {
    if (!(k in FIELDS)) throw new ConfigError(`config file ${path}: unknown key "${k}"`);
  }
  return doc as Record<string, unknown>;
}

/** Shortest token a server accepts (the chart generates 40 characters). */
export const MIN_TOKEN_LENGTH = 16;

/**
 * A token a server will accept, checked when it starts (clients may pass any token they were
 * given): at least MIN_TOKEN_LENGTH characters, no whitespace.
 */
export function serverToken(token: string, what: string): string {
  if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))
    throw new ConfigError(`${what}: must be at least ${MIN_TOKEN_LENGTH} characters without spaces`);
  return token;
}

function secretFile(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (err) {
    throw new ConfigError(
      `${what} file ${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  if (text === "") throw new ConfigError(`${what} file ${path}: empty`);
  return text;
}

/** The console identity settings hang together (docs/auth.md); secrets read from their files here. */
function checkIdentity(c: Record<string, unknown>): void {
  const cfg = c as unknown as WaveConfig;
  if (cfg.oidcClientSecretFile !== undefined)
    c.oidcClientSecret = secretFile(cfg.oidcClientSecretFile, "OIDC client secret");
  if (cfg.authProxySecretFile !== undefined)
    c.authProxySecret = secretFile(cfg.authProxySecretFile, "auth proxy secret");
  if (cfg.oidcIssuerUrl !== undefined) {
    if (cfg.oidcClientId === undefined)
      throw new ConfigError("OIDC: --oidc-client-id (WAVE_OIDC_CLIENT_ID) is required with an issuer URL");
    if (cfg.oidcRedirectUrl === undefined)
      throw new ConfigError(
        "OIDC: --oidc-redirect-url (WAVE_OIDC_REDIRECT_URL) is required with an issuer URL, e.g. https://wave.example.com/auth/callback",
      );
    if (cfg.oidcScopes[0] !== "openid") throw new ConfigError('OIDC: the scopes must begin with "openid"');
  } else if (cfg.oidcClientId !== undefined || cfg.oidcRedirectUrl !== undefined)
    throw new ConfigError(
      "OIDC: --oidc-issuer-url (WAVE_OIDC_ISSUER_URL) is required with a client id or redirect URL",
    );
  const proxy = cfg.authProxyTrusted.length > 0 || cfg.authProxySecret !== undefined;
  if (proxy && cfg.authProxySecret !== undefined && cfg.authProxySecret.length < MIN_TOKEN_LENGTH)
    throw new ConfigError(`auth proxy secret: must be at least ${MIN_TOKEN_LENGTH} characters`);
  if ((cfg.oidcIssuerUrl !== undefined || proxy) && cfg.authRoles === undefined)
    throw new ConfigError(
      "console sign-in (OIDC or auth proxy) needs --auth-roles (WAVE_AUTH_ROLES): which groups are viewers, namespace editors and admins",
    );
}

export interface ParsedArgs {
  config: WaveConfig;
  positionals: string[];
  /** Values of the command's own flags (`extra` below). */
  flags: Record<string, string | boolean | undefined>;
  /** The settings given by file, environment or flag (the rest are defaults). */
  given: ReadonlySet<string>;
}

/** A command's own flags, parsed alongside the shared ones. */
export type ExtraOptions = Record<string, { type: "string" | "boolean"; short?: string }>;

/** A negative number: the value of the option before it, never an option itself. */
const NEGATIVE = /^-(\d+(\.\d*)?|\.\d+)$/;

/**
 * `--threshold -1` → `--threshold=-1`: node's parseArgs calls a value starting with a dash
 * "ambiguous"; joined, a negative number reaches the flag's own validation and its message.
 */
export function joinNegatives(argv: readonly string[], options: ExtraOptions): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const next = argv[i + 1];
    const name = arg.startsWith("--") && !arg.includes("=") ? arg.slice(2) : undefined;
    if (name !== undefined && options[name]?.type === "string" && next !== undefined && NEGATIVE.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/**
 * Parses flags (after the command name), the environment and an optional --config file.
 * Pure apart from reading the config file and checking the kubeconfig is readable.
 */
export function parseConfig(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  extra: ExtraOptions = {},
): ParsedArgs {
  const options: ExtraOptions = { ...extra, config: { type: "string" } };
  for (const k of KEYS) options[FIELDS[k].flag] = { type: FIELDS[k].kind === "bool" ? "boolean" : "string" };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: joinNegatives(argv, options), options, strict: true, allowPositionals: true });
  } catch (err) {
    // node's messages are already one clear line ("Unknown option '--x'...").
    throw new ConfigError((err as Error).message.split("\n")[0] ?? "bad arguments");
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const out: Record<string, unknown> = { ...DEFAULTS };
  const given = new Set<string>();
  const file = typeof values.config === "string" ? values.config : env.WAVE_CONFIG;
  if (file)
    for (const [k, v] of Object.entries(readFile(file))) {
      out[k] = coerce(k as Key, v, "config file");
      given.add(k);
    }
  for (const k of KEYS) {
    const v = env[FIELDS[k].env];
    if (v !== undefined && v !== "") {
      out[k] = coerce(k, v, "env");
      given.add(k);
    }
  }
  for (const k of KEYS) {
    const v = values[FIELDS[k].flag];
    if (v !== undefined) {
      out[k] = coerce(k, v, "flag");
      given.add(k);
    }
  }
  const config = out as unknown as WaveConfig;
  if (config.kubeconfig !== undefined) {
    try {
      readFileSync(config.kubeconfig);
    } catch (err) {
      throw new ConfigError(
        `kubeconfig ${config.kubeconfig}: cannot read it (${(err as NodeJS.ErrnoException).code ?? "error"})`,
      );
    }
  }
  if (config.databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(config.databaseUrl))
    throw new ConfigError(
      `database URL must start with postgres:// (got a ${config.databaseUrl.split(":")[0] ?? ""} URL)`,
    );
  if (config.pricingMaxAgeMs < config.pricingRefreshMs)
    throw new ConfigError(
      "pricing max age must be at least the refresh interval (--pricing-max-age >= --pricing-refresh)",
    );
  if (config.adminToken !== undefined && config.adminToken === config.viewerToken)
    throw new ConfigError("admin and viewer tokens must differ");
  if (config.agentIdentity.length > 253 || /[\s,]/.test(config.agentIdentity))
    throw new ConfigError("agent identity: expected one certificate CN or SAN (no spaces or commas)");
  checkIdentity(out);
  const flags: ParsedArgs["flags"] = {};
  for (const k of Object.keys(extra)) flags[k] = values[k];
  return { config: Object.freeze(config), positionals: parsed.positionals, flags, given };
}
