// The HTTP contract, independent of sockets: method + path + body in, status + JSON out. Malformed
// reviews get 400 with a message; nothing a client sends yields a 5xx.
import { createHash, timingSafeEqual } from "node:crypto";
import { silentLogger, type Logger } from "../shared/log.ts";
import { CONTENT_TYPE } from "../shared/metrics.ts";
import { BadReviewError, parseAdmissionReview } from "./admission.ts";
import { review, type ReviewDeps } from "./review.ts";

export const MUTATE_PATH = "/mutate";
export const HEALTH_PATH = "/healthz";
export const METRICS_PATH = "/metrics";

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
    /** Prometheus text of the webhook's metrics (GET /metrics). */
    metricsText?: () => string | Promise<string>;
    /**
     * When set, GET /metrics needs `Authorization: Bearer <this>` (the viewer token): the series
     * name every workload with a policy (issue 32). Unset = public (`--public-metrics`).
     */
    metricsToken?: string;
    /** The request's Authorization header. */
    authorization?: string;
  },
): Promise<HttpResult> {
  const path = (url ?? "/").split("?")[0];
  if (path === METRICS_PATH && deps.metricsText) {
    if (method !== "GET" && method !== "HEAD") return error(405, "use GET");
    if (deps.metricsToken !== undefined && !bearerMatches(deps.authorization, deps.metricsToken))
      return error(401, "GET /metrics needs the viewer token (Authorization: Bearer …)");
    return { status: 200, body: await deps.metricsText(), contentType: CONTENT_TYPE };
  }
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

/** Whether `header` is `Bearer <token>`, compared in constant time (digests of equal length). */
function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (.+)$/i.exec(header ?? "")?.[1];
  if (given === undefined) return false;
  const digest = (s: string): Buffer => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(given), digest(token));
}
