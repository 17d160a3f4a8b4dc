// The HTTP contract, independent of sockets: method + path + body in, status + JSON out. Malformed
// reviews get 400 with a message; nothing a client sends yields a 5xx.
import { timingSafeEqual } from "node:crypto";
import { silentLogger, type Logger } from "../shared/log.ts";
import { CONTENT_TYPE } from "../shared/metrics.ts";
import { BadReviewError, parseAdmissionReview } from "./admission.ts";
import { review, type ReviewDeps } from "./review.ts";

export const MUTATE_PATH = "/mutate";
export const HEALTH_PATH = "/healthz";
export const POLICIES_PATH = "/policies";
export const METRICS_PATH = "/metrics";

/** Core pushes policy sets here (PUT, bearer token); the webhook serves them from memory. */
export interface PolicyPush {
  token: string;
  target: { set(input: unknown): void; readonly revision: string | undefined };
}

export interface HttpResult {
  status: number;
  body: string;
  /** Default application/json. */
  contentType?: string;
}

const json = (status: number, value: unknown): HttpResult => ({ status, body: JSON.stringify(value) });
const error = (status: number, message: string): HttpResult => json(status, { error: message });

export async function handleHttp(
  method: string | undefined,
  url: string | undefined,
  body: Buffer,
  deps: ReviewDeps & {
    logger?: Logger;
    push?: PolicyPush;
    authorization?: string;
    /** Prometheus text of the webhook's metrics (GET /metrics). */
    metricsText?: () => string;
  },
): Promise<HttpResult> {
  const path = (url ?? "/").split("?")[0];
  if (path === METRICS_PATH && deps.metricsText) {
    if (method !== "GET" && method !== "HEAD") return error(405, "use GET");
    return { status: 200, body: deps.metricsText(), contentType: CONTENT_TYPE };
  }
  if (path === POLICIES_PATH) return pushPolicies(method, body, deps.push, deps.authorization);
  if (path === HEALTH_PATH)
    return method === "GET" || method === "HEAD" ? json(200, { ok: true }) : error(405, "use GET");
  if (path !== MUTATE_PATH) return error(404, `no such path; POST AdmissionReviews to ${MUTATE_PATH}`);
  if (method !== "POST") return error(405, `use POST for ${MUTATE_PATH}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch (err) {
    return error(400, `body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    const { request } = parseAdmissionReview(parsed);
    return json(200, await review(request, deps));
  } catch (err) {
    if (err instanceof BadReviewError) return error(400, err.message);
    // review() does not throw; this is a bug, and the apiserver must still not see a 5xx.
    (deps.logger ?? silentLogger).error("unexpected admission failure", { err });
    return error(400, "could not process the AdmissionReview");
  }
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? "");
  if (!m?.[1]) return false;
  const a = Buffer.from(m[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function pushPolicies(
  method: string | undefined,
  body: Buffer,
  push: PolicyPush | undefined,
  authorization: string | undefined,
): HttpResult {
  if (!push) return error(404, "policy push is not enabled on this webhook");
  if (method !== "PUT") return error(405, `use PUT for ${POLICIES_PATH}`);
  if (!bearerMatches(authorization, push.token)) return error(401, "missing or wrong bearer token");
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch (err) {
    return error(400, `body is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    push.target.set(parsed);
  } catch (err) {
    // The previous set stays in force.
    return error(400, err instanceof Error ? err.message : String(err));
  }
  return json(200, { revision: push.target.revision ?? null });
}
