// Who an agent stream is, and which clusters it may feed. A credential is a bearer token, a
// client-certificate identity, or both; each names the cluster ids it may stream. Core checks the
// credential when the stream opens and the cluster id at hello (core.ts), so a token of one
// cluster can never write — or take over — another.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { PeerCertificate } from "node:tls";
import { parse as parseYaml } from "yaml";

export interface AgentCredential {
  /** Names the credential in logs and as a cluster's owner; never secret. */
  name: string;
  /** The bearer token the agent sends. */
  token?: string;
  /** Or only its SHA-256 (hex), so the file need not hold the token itself. */
  tokenSha256?: string;
  /**
   * The agent's client-certificate identity: its subject CN or one of its DNS/URI SANs. With
   * one, the stream must come over mutual TLS with that certificate.
   */
  identity?: string;
  /** Cluster ids this credential may stream; "*" allows any (single-tenant or dev setups). */
  clusters: readonly string[];
}

/** The authenticated side of a stream. */
export interface AgentPrincipal {
  name: string;
  allows(clusterId: string): boolean;
}

export class CredentialError extends Error {
  override name = "CredentialError";
}

const sha256 = (s: string): Buffer => createHash("sha256").update(s).digest();
const HEX64 = /^[0-9a-f]{64}$/;

/** Identities a client certificate carries: CN, DNS and URI SANs. */
export function certificateIdentities(cert: PeerCertificate | undefined): string[] {
  if (!cert || Object.keys(cert).length === 0) return [];
  const out: string[] = [];
  const cn: unknown = (cert.subject as PeerCertificate["subject"] | undefined)?.CN;
  if (typeof cn === "string") out.push(cn);
  else if (Array.isArray(cn)) out.push(...cn.filter((x): x is string => typeof x === "string"));
  for (const part of (cert.subjectaltname ?? "").split(/,\s*/)) {
    const m = /^(DNS|URI):(.+)$/.exec(part);
    if (m?.[2]) out.push(m[2]);
  }
  return out;
}

export type Authentication = { ok: true; principal: AgentPrincipal } | { ok: false; reason: string };

interface Entry {
  cred: AgentCredential;
  digest: Buffer | undefined;
  all: boolean;
  set: Set<string>;
}

/** Checks a stream's credentials (constant time over tokens). */
export class AgentAuthenticator {
  readonly #entries: Entry[];

  constructor(credentials: readonly AgentCredential[]) {
    if (credentials.length === 0)
      throw new CredentialError("agent credentials: none given (no agent could connect)");
    const names = new Set<string>();
    this.#entries = credentials.map((c, i) => {
      const where = `agent credential ${i + 1}${c.name ? ` (${c.name})` : ""}`;
      if (!c.name) throw new CredentialError(`${where}: name is required`);
      if (names.has(c.name)) throw new CredentialError(`${where}: name is used twice`);
      names.add(c.name);
      if (c.token === undefined && c.tokenSha256 === undefined && c.identity === undefined)
        throw new CredentialError(`${where}: needs a token, a tokenSha256 or a certificate identity`);
      if (c.token !== undefined && c.token.length < 16)
        throw new CredentialError(`${where}: token must be at least 16 characters`);
      if (c.tokenSha256 !== undefined && !HEX64.test(c.tokenSha256))
        throw new CredentialError(`${where}: tokenSha256 must be 64 lowercase hex digits`);
      if (c.clusters.length === 0) throw new CredentialError(`${where}: clusters is empty`);
      const digest =
        c.token !== undefined
          ? sha256(c.token)
          : c.tokenSha256
            ? Buffer.from(c.tokenSha256, "hex")
            : undefined;
      return { cred: c, digest, all: c.clusters.includes("*"), set: new Set(c.clusters) };
    });
  }

  /** Whether any credential is bound to a certificate identity (then mTLS must be on). */
  get needsClientCertificates(): boolean {
    return this.#entries.some((e) => e.cred.identity !== undefined);
  }

  authenticate(authorization: string | null, identities: readonly string[]): Authentication {
    const m = /^Bearer (\S+)$/.exec(authorization ?? "");
    const presented = m?.[1] ? sha256(m[1]) : undefined;
    let tokenMatched = false;
    let found: Entry | undefined;
    for (const e of this.#entries) {
      // Every digest is compared, so timing does not tell which (or whether one) matched.
      const tokenOk =
        e.digest !== undefined && presented !== undefined && timingSafeEqual(e.digest, presented);
      if (e.digest !== undefined && !tokenOk) continue;
      if (e.digest === undefined && presented !== undefined) continue;
      tokenMatched ||= tokenOk;
      const idOk = e.cred.identity === undefined || identities.includes(e.cred.identity);
      if (idOk && !found) found = e;
    }
    if (!found) {
      if (tokenMatched)
        return { ok: false, reason: "the client certificate does not belong to this token's agent" };
      return { ok: false, reason: presented ? "invalid bearer token" : "missing bearer token" };
    }
    const { cred, all, set } = found;
    return { ok: true, principal: { name: cred.name, allows: (id) => all || set.has(id) } };
  }
}

/**
 * Reads a credentials file (YAML or JSON): a list of { name, token | tokenSha256 | tokenFile,
 * identity, clusters }. tokenFile is read relative to nothing (an absolute path, e.g. a mounted
 * Secret), so the file itself can be a ConfigMap.
 */
export function loadCredentials(path: string): AgentCredential[] {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, "utf8"));
  } catch (err) {
    throw new CredentialError(`agent credentials ${path}: ${(err as Error).message.split("\n")[0] ?? ""}`);
  }
  const list = Array.isArray(doc) ? doc : (doc as { agents?: unknown } | null)?.agents;
  if (!Array.isArray(list))
    throw new CredentialError(`agent credentials ${path}: expected a list (or agents: [...])`);
  return list.map((raw: unknown, i) => {
    const where = `agent credentials ${path}, entry ${i + 1}`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      throw new CredentialError(`${where}: expected a mapping`);
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(r)) {
      if (!["name", "token", "tokenSha256", "tokenFile", "identity", "clusters"].includes(k))
        throw new CredentialError(`${where}: unknown key "${k}"`);
    }
    const str = (k: string): string | undefined => {
      const v = r[k];
      if (v === undefined) return undefined;
      if (typeof v !== "string" || v === "")
        throw new CredentialError(`${where}: ${k} must be a non-empty string`);
      return v;
    };
    const clusters = r.clusters;
    if (!Array.isArray(clusters) || clusters.some((c) => typeof c !== "string" || c === ""))
      throw new CredentialError(`${where}: clusters must be a list of cluster ids`);
    let token = str("token");
    const tokenFile = str("tokenFile");
    if (tokenFile !== undefined) {
      try {
        token = readFileSync(tokenFile, "utf8").trim();
      } catch (err) {
        throw new CredentialError(
          `${where}: tokenFile ${tokenFile}: ${(err as NodeJS.ErrnoException).code ?? "unreadable"}`,
        );
      }
    }
    const out: AgentCredential = { name: str("name") ?? "", clusters: clusters as string[] };
    if (token !== undefined) out.token = token;
    const digest = str("tokenSha256");
    if (digest !== undefined) out.tokenSha256 = digest;
    const identity = str("identity");
    if (identity !== undefined) out.identity = identity;
    return out;
  });
}
