// Whether a policy put changes anything (issue 42: repeated identical PUTs grew the audit).

/** JSON with its objects' keys sorted: two values equal whatever order their keys came in. */
const canonical = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(canonical)
    : typeof v === "object" && v !== null
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
        )
      : v;

/** Whether a put leaves a policy as it was (nothing to audit). */
export const sameJson = (a: unknown, b: unknown): boolean =>
  a !== null && a !== undefined && JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
