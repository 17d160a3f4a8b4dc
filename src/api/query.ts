// Strict query-string conversion. Query values arrive as strings; the routes' schemas say which
// are numbers or booleans. Only plain decimals convert ("0x10", "1e20", " 5", "" stay strings
// and fail validation with a 400), so a value means exactly what it says.
import type { FastifyRequest } from "fastify";

interface PropSchema {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
}

const INTEGER = /^-?(0|[1-9]\d{0,15})$/;
const NUMBER = /^-?(0|[1-9]\d{0,15})(\.\d{1,15})?$/;

/** The converted value, or the input unchanged when it is not a strict literal of `type`. */
export function strictValue(type: string, raw: string): unknown {
  if (type === "integer" && INTEGER.test(raw)) return Number(raw);
  if (type === "number" && NUMBER.test(raw)) return Number(raw);
  if (type === "boolean" && (raw === "true" || raw === "false")) return raw === "true";
  return raw;
}

/** Converts `req.query` in place from the route's querystring schema (a preValidation step). */
export function coerceQuery(req: FastifyRequest): void {
  const schema = req.routeOptions.schema?.querystring as
    { properties?: Record<string, PropSchema> } | undefined;
  const props = schema?.properties;
  const q = req.query as Record<string, unknown> | null;
  if (!props || !q || typeof q !== "object") return;
  for (const [k, v] of Object.entries(q)) {
    const t = props[k]?.type;
    if (typeof t !== "string" || typeof v !== "string") continue;
    q[k] = strictValue(t, v);
  }
}

/** The numeric properties of a querystring schema without both a minimum and a maximum. */
export function unboundedNumbers(schema: unknown): string[] {
  const props = (schema as { properties?: Record<string, PropSchema> } | undefined)?.properties;
  if (!props) return [];
  return Object.entries(props)
    .filter(([, p]) => {
      const types = [p.type].flat();
      return (
        (types.includes("integer") || types.includes("number")) &&
        (typeof p.minimum !== "number" || typeof p.maximum !== "number")
      );
    })
    .map(([k]) => k);
}
