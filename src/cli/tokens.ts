// The API tokens `wave start` generates live with its data dir (issue 43): the dashboard link it
// printed keeps working after a restart, as the history and the cluster's objects do. They are
// kept in <dataDir>/tokens.json (mode 0600, as instance.json); `--rotate-tokens` draws new ones,
// and a token given by flag, environment or file (--admin-token, --viewer-token) wins over both.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newToken } from "../api/auth.ts";
import { serverToken, type WaveConfig } from "../config/config.ts";

export interface StartTokens {
  admin: string;
  viewer: string;
}

export const tokensFile = (dataDir: string): string => join(dataDir, "tokens.json");

function readTokens(file: string): Partial<StartTokens> {
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    const ok = (v: unknown): string | undefined =>
      typeof v === "string" && /^[0-9a-f]{48}$/.test(v) ? v : undefined;
    const admin = ok(raw.admin);
    const viewer = ok(raw.viewer);
    return { ...(admin ? { admin } : {}), ...(viewer ? { viewer } : {}) };
  } catch {
    return {};
  }
}

/**
 * The admin and viewer tokens of this start: the configured ones, else the data dir's (drawn and
 * kept there the first time, or again with `rotate`).
 */
export function startTokens(
  config: Pick<WaveConfig, "dataDir" | "adminToken" | "viewerToken">,
  rotate: boolean,
): StartTokens {
  const file = tokensFile(config.dataDir);
  const kept = rotate ? {} : readTokens(file);
  const generated = { admin: kept.admin ?? newToken(), viewer: kept.viewer ?? newToken() };
  if (generated.admin !== kept.admin || generated.viewer !== kept.viewer) {
    writeFileSync(`${file}.tmp`, JSON.stringify(generated, null, 2) + "\n", { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }
  return {
    admin:
      config.adminToken === undefined ? generated.admin : serverToken(config.adminToken, "the admin token"),
    viewer:
      config.viewerToken === undefined
        ? generated.viewer
        : serverToken(config.viewerToken, "the viewer token"),
  };
}
