// Bearer-token authentication with two roles. Viewers read; admins also change policies.
// Tokens are compared in constant time and never logged.
import { timingSafeEqual, createHash } from "node:crypto";

export type Role = "viewer" | "admin";

export interface Tokens {
  admin?: string | undefined;
  viewer?: string | undefined;
}

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

function same(a: string, b: string): boolean {
  // Hash first so lengths match and timing does not leak the token's length.
  return timingSafeEqual(digest(a), digest(b));
}

/** The role a request's Authorization header grants, or undefined when it grants none. */
export function roleFor(header: string | undefined, tokens: Tokens): Role | undefined {
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m?.[1]) return undefined;
  const token = m[1];
  if (tokens.admin !== undefined && same(token, tokens.admin)) return "admin";
  if (tokens.viewer !== undefined && same(token, tokens.viewer)) return "viewer";
  return undefined;
}

export const satisfies = (have: Role, need: Role): boolean => need === "viewer" || have === "admin";
