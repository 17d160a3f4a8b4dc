// Issue 31's OIDC Must-show, against a real OpenID provider started here (the oidc-provider
// package, in-process, with its dev login and consent pages) and Wave's real core app (coreApi,
// listening on a port, configured through parseConfig like `wave core`): the authorization code
// + PKCE flow driven with fetch, following every redirect and submitting the provider's forms.
// An admin-group user edits a spot policy and the audit lists them; a viewer-group user is
// refused (403); a token for another audience is refused (401); sign-out ends the session.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import Provider from "oidc-provider";
import { parseConfig } from "../../src/config/config.ts";
import { coreApi } from "../../src/cli/parts.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { openStore } from "../../src/core/store/open.ts";
import type { Store } from "../../src/core/store/store.ts";
import { KwokPriceProvider } from "../../src/pricing/kwok.ts";
import { realClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { Registry } from "../../src/shared/metrics.ts";

const GROUPS: Record<string, string[]> = {
  alice: ["wave-admins"],
  victor: ["wave-viewers"],
  nina: ["team-a"],
};
const CLIENT_SECRET = "wave-client-secret-0123456789abcdef";

const listen = (server: Server, host: string): Promise<number> =>
  new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));

async function freePort(): Promise<number> {
  const s = createServer();
  const port = await listen(s, "127.0.0.1");
  await new Promise((r) => s.close(r));
  return port;
}

/** A browser's cookies, per host (a browser ignores ports; the provider and Wave differ by host here). */
class Jar {
  readonly #byHost = new Map<string, Map<string, string>>();
  store(url: string, res: Response): void {
    const host = new URL(url).hostname;
    const jar = this.#byHost.get(host) ?? new Map<string, string>();
    this.#byHost.set(host, jar);
    for (const c of res.headers.getSetCookie()) {
      const [pair = ""] = c.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0/i.test(c) || value === "") jar.delete(name);
      else jar.set(name, value);
    }
  }
  header(url: string): string {
    return [...(this.#byHost.get(new URL(url).hostname) ?? new Map<string, string>())]
      .map(([k, v]) => `${k}=${v}`)
      .join("; ");
  }
  get(url: string, name: string): string | undefined {
    return this.#byHost.get(new URL(url).hostname)?.get(name);
  }
}

let provider: Provider;
let providerServer: Server;
let issuer: string;
let wave: FastifyInstance;
let waveUrl: string;
/** A second core replica: same store, same tokens, same configuration. */
let replica: FastifyInstance;
let replicaUrl: string;
let store: Store;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-oidc-"));
  const wavePort = await freePort();
  waveUrl = `http://127.0.0.1:${wavePort}`;

  providerServer = createServer();
  const providerPort = await listen(providerServer, "127.0.0.1");
  issuer = `http://localhost:${providerPort}`;
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: "wave",
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${waveUrl}/auth/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
      {
        // Another application of the same provider: its tokens are not for Wave.
        client_id: "other-app",
        client_secret: "other-app-secret-0123456789abcdef",
        redirect_uris: ["http://127.0.0.1:1/cb"],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, email: `${id}@example.com`, groups: GROUPS[id] ?? [] }),
    }),
    claims: { openid: ["sub"], email: ["email"], groups: ["groups"] },
    scopes: ["openid", "email", "groups"],
    // Groups in the ID token too (it is also the bearer token used on the API below).
    conformIdTokenClaims: false,
    cookies: { keys: ["oidc-provider-test-cookie-key-0123456789"] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
  });
  providerServer.on("request", provider.callback());

  const rolesFile = join(dir, "roles.yaml");
  await writeFile(
    rolesFile,
    [
      "clusters:",
      '  "*":',
      "    admin: [wave-admins]",
      "    viewer: [wave-viewers]",
      "    namespaceEditors:",
      "      - group: team-a",
      "        namespaces: [team-a]",
    ].join("\n"),
  );
  const secretFile = join(dir, "client-secret");
  await writeFile(secretFile, `${CLIENT_SECRET}\n`);
  // Parsed the way `wave core` parses its environment (the chart's env contract).
  const { config } = parseConfig([], {
    WAVE_CLUSTER_ID: "prod",
    WAVE_OIDC_ISSUER_URL: issuer,
    WAVE_OIDC_CLIENT_ID: "wave",
    WAVE_OIDC_CLIENT_SECRET_FILE: secretFile,
    WAVE_OIDC_REDIRECT_URL: `${waveUrl}/auth/callback`,
    WAVE_OIDC_SCOPES: "openid,email,groups",
    WAVE_AUTH_ROLES: rolesFile,
  });
  store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  const hub = new ClusterHub(store, realClock);
  hub.ensure("prod", false);
  wave = await coreApi({
    config,
    tokens: { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" },
    hub,
    store,
    prices: new KwokPriceProvider(),
    clock: realClock,
    metrics: new Registry(),
    warmupTotals: () => ({ hits: 0, misses: 0, timeSavedSeconds: 0 }),
    onPolicyChange: () => Promise.resolve(),
  });
  await wave.listen({ host: "127.0.0.1", port: wavePort });
  replica = await coreApi({
    config,
    tokens: { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" },
    hub,
    store,
    prices: new KwokPriceProvider(),
    clock: realClock,
    metrics: new Registry(),
    warmupTotals: () => ({ hits: 0, misses: 0, timeSavedSeconds: 0 }),
    onPolicyChange: () => Promise.resolve(),
  });
  replicaUrl = await replica.listen({ host: "127.0.0.1", port: 0 });
});

after(async () => {
  await wave.close();
  await replica.close();
  providerServer.closeAllConnections();
  await new Promise((r) => providerServer.close(r));
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** A form of the provider's dev pages: its action and fields (hidden ones, and the login). */
function formOf(html: string, login: string): { action: string; body: URLSearchParams } | undefined {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  if (!action) return undefined;
  const body = new URLSearchParams();
  for (const [tag] of html.matchAll(/<input[^>]*>/g)) {
    const name = /name="([^"]+)"/.exec(tag)?.[1];
    if (!name) continue;
    const value = /value="([^"]*)"/.exec(tag)?.[1] ?? "";
    body.set(name, name === "login" ? login : name === "password" ? "any" : value);
  }
  return { action: action.replace(/&amp;/g, "&"), body };
}

/**
 * A browser signing in as `user`: Wave's /auth/login, the provider's login and consent forms,
 * back to Wave's callback, until Wave sends the console. Returns the jar and the hops taken.
 */
async function signIn(user: string, callbackAt = waveUrl): Promise<{ jar: Jar; hops: string[] }> {
  const jar = new Jar();
  const hops: string[] = [];
  let url = `${waveUrl}/auth/login`;
  let init: RequestInit = {};
  for (let i = 0; i < 20; i++) {
    hops.push(`${init.method ?? "GET"} ${url.split("?")[0] ?? ""}`);
    const res = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string> | undefined), cookie: jar.header(url) },
    });
    jar.store(url, res);
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location) {
      await res.arrayBuffer();
      const next = new URL(location, url).href;
      if (next === `${waveUrl}/` || next === `${callbackAt}/`) return { jar, hops };
      // The provider sends the browser to the redirect URL; behind a Service it may reach any replica.
      url = next.startsWith(`${waveUrl}/auth/callback`) ? next.replace(waveUrl, callbackAt) : next;
      init = {};
      continue;
    }
    const html = await res.text();
    assert.equal(res.status, 200, `${url}: ${res.status} ${html.slice(0, 300)}`);
    const form = formOf(html, user);
    assert.ok(form, `no form at ${url}: ${html.slice(0, 300)}`);
    url = new URL(form.action, url).href;
    init = {
      method: "POST",
      body: form.body.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    };
  }
  throw new Error(`sign-in did not finish: ${hops.join(" → ")}`);
}

const asUi = (jar: Jar, method = "GET", body?: unknown): RequestInit => ({
  method,
  headers: {
    cookie: jar.header(waveUrl),
    "x-wave-client": "ui",
    ...(body === undefined ? {} : { "content-type": "application/json" }),
  },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

/** An ID token straight from the provider's token endpoint, for `clientId` (code + PKCE, no browser). */
async function idTokenFor(user: string, clientId: string, secret: string, redirect: string): Promise<string> {
  const { createHash, randomBytes } = await import("node:crypto");
  const verifier = randomBytes(32).toString("base64url");
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const jar = new Jar();
  const auth = new URL(`${issuer}/auth`);
  for (const [k, v] of Object.entries({
    client_id: clientId,
    response_type: "code",
    scope: "openid email groups",
    redirect_uri: redirect,
    code_challenge: challenge,
    code_challenge_method: "S256",
    nonce: "n-0123456789",
    state: "s-0123456789",
  }))
    auth.searchParams.set(k, v);
  let url = auth.href;
  let init: RequestInit = {};
  for (let i = 0; i < 20; i++) {
    const res = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string> | undefined), cookie: jar.header(url) },
    });
    jar.store(url, res);
    const location = res.headers.get("location");
    if (location) {
      await res.arrayBuffer();
      const next = new URL(location, url);
      if (next.href.startsWith(redirect)) {
        const code = next.searchParams.get("code");
        assert.ok(code, `no code: ${next.href}`);
        const tok = await fetch(`${issuer}/token`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString("base64")}`,
          },
          body: new URLSearchParams({
            grant_type: "authorization_code",
            code,
            redirect_uri: redirect,
            code_verifier: verifier,
          }).toString(),
        });
        const json = (await tok.json()) as { id_token?: string };
        assert.ok(json.id_token, JSON.stringify(json));
        return json.id_token;
      }
      url = next.href;
      init = {};
      continue;
    }
    const form = formOf(await res.text(), user);
    assert.ok(form);
    url = new URL(form.action, url).href;
    init = {
      method: "POST",
      body: form.body.toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    };
  }
  throw new Error("no code");
}

const POLICY = `/api/v1/clusters/prod/policies/spot/Deployment/team-a/web`;

describe("OIDC sign-in against a real OpenID provider (issue 31)", () => {
  it("tells the console a provider is configured", async () => {
    const info = (await (await fetch(`${waveUrl}/auth/info`)).json()) as {
      oidc: { provider: string } | null;
    };
    assert.equal(info.oidc?.provider, new URL(issuer).host);
  });

  it("an admin-group user signs in (code + PKCE), edits a spot policy, and the audit names them", async () => {
    const { jar, hops } = await signIn("alice");
    // Through the provider's login and consent pages and back to Wave's callback.
    assert.ok(
      hops.some((h) => h.startsWith(`POST ${issuer}/interaction/`)),
      hops.join(" → "),
    );
    assert.ok(hops.includes(`GET ${waveUrl}/auth/callback`), hops.join(" → "));
    const session = jar.get(waveUrl, "wave_session");
    assert.ok(session, "a session cookie");

    const who = await fetch(`${waveUrl}/api/v1/whoami`, asUi(jar));
    assert.deepEqual(await who.json(), {
      role: "admin",
      subject: "alice@example.com",
      groups: ["wave-admins"],
      source: "oidc",
    });

    const put = await fetch(`${waveUrl}${POLICY}`, asUi(jar, "PUT", { threshold: 2, strategy: "Prefer" }));
    assert.equal(put.status, 200, await put.clone().text());
    const audit = await fetch(`${waveUrl}/api/v1/clusters/prod/audit`, asUi(jar));
    assert.equal(audit.status, 200);
    const [entry] = ((await audit.json()) as { entries: Record<string, unknown>[] }).entries;
    assert.deepEqual(
      {
        subject: entry?.subject,
        groups: entry?.groups,
        source: entry?.source,
        via: entry?.via,
        address: entry?.address,
        action: entry?.action,
        object: entry?.object,
        before: entry?.before,
      },
      {
        subject: "alice@example.com",
        groups: ["wave-admins"],
        source: "oidc",
        via: "ui",
        address: "127.0.0.1",
        action: "spot-policy.put",
        object: "SpotPolicy deployment/team-a/web",
        before: null,
      },
    );
    assert.deepEqual(JSON.parse(String(entry?.after)), {
      workload: { kind: "Deployment", namespace: "team-a", name: "web" },
      threshold: 2,
      strategy: "Prefer",
    });
    assert.ok(typeof entry?.at === "number" && Math.abs(entry.at - Date.now()) < 60_000);

    // A change with the session cookie but not from the console (a cross-site form) is refused.
    const csrf = await fetch(`${waveUrl}${POLICY}`, {
      method: "DELETE",
      headers: { cookie: jar.header(waveUrl) },
    });
    assert.equal(csrf.status, 403);

    // Sign-out ends the session on the server: the old cookie no longer works.
    const out = await fetch(`${waveUrl}/auth/logout`, asUi(jar, "POST"));
    assert.equal(out.status, 200);
    assert.match(
      ((await out.json()) as { endSessionUrl: string }).endSessionUrl,
      /^http:\/\/localhost:\d+\/session\/end/,
    );
    const again = await fetch(`${waveUrl}/api/v1/whoami`, { headers: { cookie: `wave_session=${session}` } });
    assert.equal(again.status, 401);
  });

  it("sessions keep no bearer-capable token: none stored, none handed to page script (issue 42)", async () => {
    const { jar } = await signIn("alice");
    const jwtShaped = /eyJ[\w-]*\.[\w-]+\.[\w-]*/;
    // What the store keeps of the sign-in: subject, groups, expiry — no provider token.
    const db = new DatabaseSync(join(dir, "wave.db"), { readOnly: true });
    try {
      const rows = db.prepare("SELECT * FROM console_sessions").all();
      assert.ok(rows.length > 0);
      for (const row of rows) assert.doesNotMatch(JSON.stringify(row), jwtShaped);
    } finally {
      db.close();
    }
    // Every answer page script reads on the way: whoami, auth info, the sign-out.
    for (const path of ["/api/v1/whoami", "/auth/info"]) {
      const r = await fetch(`${waveUrl}${path}`, asUi(jar));
      assert.doesNotMatch(await r.text(), jwtShaped, path);
    }
    const out = await fetch(`${waveUrl}/auth/logout`, asUi(jar, "POST"));
    const body = await out.text();
    assert.doesNotMatch(body, jwtShaped);
    assert.doesNotMatch(body, /id_token_hint/);
    const { endSessionUrl } = JSON.parse(body) as { endSessionUrl: string };
    assert.equal(new URL(endSessionUrl).searchParams.get("client_id"), "wave");
    // Sign-out deleted the session's row on the server.
    const after = new DatabaseSync(join(dir, "wave.db"), { readOnly: true });
    try {
      const left = after
        .prepare("SELECT count(*) AS n FROM console_sessions WHERE subject = ?")
        .get("alice@example.com");
      assert.equal(left?.n, 0);
    } finally {
      after.close();
    }
  });

  it("a viewer-group user reads but cannot edit (403)", async () => {
    const { jar } = await signIn("victor");
    const who = (await (await fetch(`${waveUrl}/api/v1/whoami`, asUi(jar))).json()) as { role: string };
    assert.equal(who.role, "viewer");
    const read = await fetch(`${waveUrl}/api/v1/clusters/prod/policies/spot`, asUi(jar));
    assert.equal(read.status, 200);
    const put = await fetch(`${waveUrl}${POLICY}`, asUi(jar, "PUT", { threshold: 5, strategy: "Require" }));
    assert.equal(put.status, 403);
    assert.match(
      ((await put.json()) as { message: string }).message,
      /victor@example\.com has the viewer role/,
    );
    const audit = (await (await fetch(`${waveUrl}/api/v1/clusters/prod/audit`, asUi(jar))).json()) as {
      entries: { subject: string }[];
    };
    assert.ok(
      !audit.entries.some((e) => e.subject === "victor@example.com"),
      "a refused change is not recorded",
    );
  });

  it("a namespace editor changes spot policies of their namespace only", async () => {
    const { jar } = await signIn("nina");
    const mine = await fetch(`${waveUrl}${POLICY}`, asUi(jar, "PUT", { threshold: 1, strategy: "Prefer" }));
    assert.equal(mine.status, 200);
    const theirs = await fetch(
      `${waveUrl}/api/v1/clusters/prod/policies/spot/Deployment/team-b/web`,
      asUi(jar, "PUT", { threshold: 1, strategy: "Prefer" }),
    );
    assert.equal(theirs.status, 403);
  });

  it("accepts a bearer ID token for Wave's audience, refuses one for another audience (401)", async () => {
    const mine = await idTokenFor("alice", "wave", CLIENT_SECRET, `${waveUrl}/auth/callback`);
    const ok = await fetch(`${waveUrl}/api/v1/whoami`, { headers: { authorization: `Bearer ${mine}` } });
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { subject: string }).subject, "alice@example.com");
    const edit = await fetch(`${waveUrl}${POLICY}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${mine}`, "content-type": "application/json" },
      body: JSON.stringify({ threshold: 3, strategy: "Prefer" }),
    });
    assert.equal(edit.status, 200);

    // The same user, the same provider, a valid signature — but issued to another application.
    const other = await idTokenFor(
      "alice",
      "other-app",
      "other-app-secret-0123456789abcdef",
      "http://127.0.0.1:1/cb",
    );
    const refused = await fetch(`${waveUrl}/api/v1/whoami`, {
      headers: { authorization: `Bearer ${other}` },
    });
    assert.equal(refused.status, 401);
    const put = await fetch(`${waveUrl}${POLICY}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${other}`, "content-type": "application/json" },
      body: JSON.stringify({ threshold: 9, strategy: "Prefer" }),
    });
    assert.equal(put.status, 401);
    // A tampered token (alice's, re-signed by nobody) is refused too.
    const [h, p] = mine.split(".");
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p ?? "", "base64url").toString()), groups: ["wave-admins"], sub: "mallory" })).toString("base64url")}.${mine.split(".")[2]}`;
    assert.equal(
      (await fetch(`${waveUrl}/api/v1/whoami`, { headers: { authorization: `Bearer ${forged}` } })).status,
      401,
    );
  });

  it("works across core replicas: login on one, callback on another, the session on both", async () => {
    const { jar, hops } = await signIn("alice", replicaUrl);
    assert.ok(hops.includes(`GET ${replicaUrl}/auth/callback`), hops.join(" → "));
    for (const base of [waveUrl, replicaUrl]) {
      const r = await fetch(`${base}/api/v1/whoami`, asUi(jar));
      assert.equal(r.status, 200, base);
      assert.equal(((await r.json()) as { subject: string }).subject, "alice@example.com");
    }
    // Signed out on one replica: gone on the other too.
    const cookie = jar.header(waveUrl);
    assert.equal((await fetch(`${replicaUrl}/auth/logout`, asUi(jar, "POST"))).status, 200);
    assert.equal((await fetch(`${waveUrl}/api/v1/whoami`, { headers: { cookie } })).status, 401);
  });

  it("lists changes made outside Wave with their field manager beside the audit", async () => {
    // A SpotPolicy version Argo CD wrote, as the agent streams it to core (crdsync records it).
    await store.recordPolicyRevision({
      clusterId: "prod",
      kind: "SpotPolicy",
      name: "team-a/api",
      resourceVersion: "42",
      at: Date.now(),
      deleted: false,
      manager: "argocd-controller",
      changedBy: "",
      spec: { targetRef: { kind: "Deployment", name: "api" }, threshold: 1, strategy: "Prefer" },
    });
    const r = await fetch(`${waveUrl}/api/v1/clusters/prod/audit`, {
      headers: { authorization: "Bearer viewer-token-0123456789" },
    });
    const body = (await r.json()) as { elsewhere: { name: string; manager: string }[] };
    assert.deepEqual(
      body.elsewhere.map((e) => [e.name, e.manager]),
      [["team-a/api", "argocd-controller"]],
    );
  });

  it("keeps the static tokens working beside OIDC", async () => {
    const r = await fetch(`${waveUrl}/api/v1/whoami`, {
      headers: { authorization: "Bearer admin-token-0123456789" },
    });
    assert.deepEqual(await r.json(), { role: "admin", subject: "token:admin", groups: [], source: "token" });
  });
});
