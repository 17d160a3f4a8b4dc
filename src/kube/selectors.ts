// Label and field selectors with the apiserver's grammar and semantics, as pure functions: the
// in-memory adapter filters with them and the real adapter passes the same strings to the server.
import type { KindName } from "./kinds.ts";
import type { LabelSelector } from "../objects/kube.ts";

export class SelectorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SelectorError";
  }
}

export type LabelOperator = "=" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

export interface LabelRequirement {
  key: string;
  operator: LabelOperator;
  values: string[];
}

// A qualified name with an optional DNS-subdomain prefix, as Kubernetes validates label keys.
const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function checkKey(key: string): string {
  const slash = key.indexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !PREFIX.test(prefix))) {
    throw new SelectorError(`invalid label key "${key}": bad prefix`);
  }
  if (!NAME.test(name)) throw new SelectorError(`invalid label key "${key}"`);
  return key;
}

function checkValue(value: string): string {
  if (value.length > 63 || !VALUE.test(value)) throw new SelectorError(`invalid label value "${value}"`);
  return value;
}

type Token =
  { t: "id"; v: string } | { t: "op"; v: "=" | "==" | "!=" | "!" | ">" | "<" } | { t: "(" | ")" | "," };

function tokenize(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s.charAt(i);
    if (c === " " || c === "\t") {
      i++;
    } else if (c === "(" || c === ")" || c === ",") {
      out.push({ t: c });
      i++;
    } else if (c === "=" || c === "!" || c === ">" || c === "<") {
      const two = s.slice(i, i + 2);
      if (two === "==" || two === "!=") {
        out.push({ t: "op", v: two });
        i += 2;
      } else {
        out.push({ t: "op", v: c });
        i++;
      }
    } else {
      let j = i;
      while (j < s.length && !" \t(),=!<>".includes(s.charAt(j))) j++;
      out.push({ t: "id", v: s.slice(i, j) });
      i = j;
    }
  }
  return out;
}

/** Parses a label selector string ("app=web,tier in (a,b),!legacy"); "" selects everything. */
export function parseLabelSelector(selector: string): LabelRequirement[] {
  const toks = tokenize(selector);
  const reqs: LabelRequirement[] = [];
  let i = 0;
  const peek = (): Token | undefined => toks[i];
  const fail = (what: string): never => {
    throw new SelectorError(`invalid label selector "${selector}": ${what}`);
  };
  const ident = (): string => {
    const t = toks[i++];
    if (t?.t !== "id") return fail("expected an identifier");
    return t.v;
  };
  while (i < toks.length) {
    const first = peek();
    if (first?.t === "op" && first.v === "!") {
      i++;
      reqs.push({ key: checkKey(ident()), operator: "!", values: [] });
    } else {
      const key = checkKey(ident());
      const next = peek();
      if (next === undefined || next.t === ",") {
        reqs.push({ key, operator: "exists", values: [] });
      } else if (next.t === "op") {
        i++;
        if (next.v === "!") fail(`unexpected "!" after ${key}`);
        const valueTok = peek();
        // "key=" selects an empty value.
        const value = valueTok?.t === "id" ? ident() : "";
        if (next.v === ">" || next.v === "<") {
          if (!/^-?\d+$/.test(value)) fail(`"${key} ${next.v}" needs an integer`);
          reqs.push({ key, operator: next.v === ">" ? "gt" : "lt", values: [value] });
        } else {
          reqs.push({ key, operator: next.v === "!=" ? "!=" : "=", values: [checkValue(value)] });
        }
      } else if (next.t === "id" && (next.v === "in" || next.v === "notin")) {
        i++;
        if (peek()?.t !== "(") fail(`expected "(" after ${next.v}`);
        i++;
        const values: string[] = [];
        for (;;) {
          const t = peek();
          if (t?.t === "id") {
            values.push(checkValue(t.v));
            i++;
          } else if (t?.t === "," || t?.t === ")") {
            // An empty slot ("(a,,b)" or "()") is the empty value, as Kubernetes parses it.
            const prev = toks[i - 1];
            if (prev?.t === "(" || prev?.t === ",") values.push("");
          } else {
            fail("unterminated value set");
          }
          const sep = toks[i++];
          if (sep?.t === ")") break;
          if (sep?.t !== ",") fail('expected "," or ")" in value set');
        }
        reqs.push({ key, operator: next.v, values });
      } else {
        fail(`unexpected token after ${key}`);
      }
    }
    const sep = toks[i];
    if (sep === undefined) break;
    if (sep.t !== ",") fail('expected "," between requirements');
    i++;
    if (i === toks.length) fail('trailing ","');
  }
  return reqs;
}

export function matchesLabelRequirements(
  reqs: readonly LabelRequirement[],
  labels: Record<string, string> | undefined,
): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.operator) {
      case "=":
        if (v !== r.values[0]) return false;
        break;
      case "in":
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case "!=":
        if (has && v === r.values[0]) return false;
        break;
      case "notin":
        if (v !== undefined && r.values.includes(v)) return false;
        break;
      case "exists":
        if (!has) return false;
        break;
      case "!":
        if (has) return false;
        break;
      case "gt":
      case "lt": {
        if (v === undefined || !/^-?\d+$/.test(v)) return false;
        const n = Number(v);
        const bound = Number(r.values[0]);
        if (r.operator === "gt" ? !(n > bound) : !(n < bound)) return false;
        break;
      }
    }
  }
  return true;
}

/** A predicate over an object's labels for a selector string. */
export function labelMatcher(
  selector: string | undefined,
): (labels: Record<string, string> | undefined) => boolean {
  if (selector === undefined || selector.trim() === "") return () => true;
  const reqs = parseLabelSelector(selector);
  return (labels) => matchesLabelRequirements(reqs, labels);
}

function requirementsOf(sel: LabelSelector): LabelRequirement[] {
  const reqs: LabelRequirement[] = [];
  for (const [key, value] of Object.entries(sel.matchLabels ?? {})) {
    reqs.push({ key, operator: "=", values: [value] });
  }
  for (const e of sel.matchExpressions ?? []) {
    const values = e.values ?? [];
    switch (e.operator) {
      case "In":
      case "NotIn":
        if (values.length === 0) throw new SelectorError(`${e.operator} on "${e.key}" needs values`);
        reqs.push({ key: e.key, operator: e.operator === "In" ? "in" : "notin", values });
        break;
      case "Exists":
      case "DoesNotExist":
        if (values.length > 0) throw new SelectorError(`${e.operator} on "${e.key}" takes no values`);
        reqs.push({ key: e.key, operator: e.operator === "Exists" ? "exists" : "!", values: [] });
        break;
      default:
        throw new SelectorError(`unknown operator "${String(e.operator)}" on "${e.key}"`);
    }
  }
  return reqs;
}

/**
 * A predicate for a LabelSelector object (Deployment.spec.selector, …). Like metav1's
 * LabelSelectorAsSelector, an empty selector matches everything and a null one nothing.
 */
export function labelSelectorMatcher(
  sel: LabelSelector | null | undefined,
): (labels: Record<string, string> | undefined) => boolean {
  if (sel === null || sel === undefined) return () => false;
  const reqs = requirementsOf(sel);
  return (labels) => matchesLabelRequirements(reqs, labels);
}

/** Renders a LabelSelector object as a selector string for list/watch calls. */
export function labelSelectorToString(sel: LabelSelector): string {
  return requirementsOf(sel)
    .map((r) => {
      switch (r.operator) {
        case "=":
          return `${r.key}=${r.values[0] ?? ""}`;
        case "in":
        case "notin":
          return `${r.key} ${r.operator} (${[...r.values].sort().join(",")})`;
        case "exists":
          return r.key;
        case "!":
          return `!${r.key}`;
        default:
          throw new SelectorError(`operator ${r.operator} cannot come from a LabelSelector`);
      }
    })
    .join(",");
}

// ---- field selectors ----

export interface FieldRequirement {
  field: string;
  operator: "=" | "!=";
  value: string;
}

const COMMON_FIELDS = ["metadata.name", "metadata.namespace"];

/** The fields the apiserver can select on, per kind (a subset of its field label conversions). */
export const SELECTABLE_FIELDS: Partial<Record<KindName, readonly string[]>> = {
  Pod: [
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
  ],
  Event: [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
  ],
  Node: ["spec.unschedulable"],
  Namespace: ["status.phase"],
};

export function isSelectableField(kind: KindName, field: string): boolean {
  return COMMON_FIELDS.includes(field) || (SELECTABLE_FIELDS[kind]?.includes(field) ?? false);
}

// Splits on an unescaped separator; "\" escapes ",", "=", "!" and "\" as in fields.ParseSelector.
function splitUnescaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charAt(i);
    if (c === "\\" && i + 1 < s.length) {
      cur += c + s.charAt(i + 1);
      i++;
    } else if (c === sep) {
      parts.push(cur);
      cur = "";
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  return parts;
}

function unescapeValue(v: string, selector: string): string {
  let out = "";
  for (let i = 0; i < v.length; i++) {
    const c = v.charAt(i);
    if (c === "\\") {
      const n = v.charAt(i + 1);
      if (!"\\,=!".includes(n) || n === "") {
        throw new SelectorError(`invalid field selector "${selector}": bad escape in "${v}"`);
      }
      out += n;
      i++;
    } else if (c === "," || c === "=") {
      throw new SelectorError(`invalid field selector "${selector}": unescaped "${c}" in "${v}"`);
    } else {
      out += c;
    }
  }
  return out;
}

/** Parses "spec.nodeName=n1,status.phase!=Failed"; "" selects everything. */
export function parseFieldSelector(selector: string): FieldRequirement[] {
  if (selector.trim() === "") return [];
  return splitUnescaped(selector, ",").map((part) => {
    const m = /^([^=!\\]+?)\s*(==|!=|=)(.*)$/s.exec(part.trim());
    if (!m?.[1] || !m[2]) throw new SelectorError(`invalid field selector "${selector}": "${part}"`);
    const value = unescapeValue(m[3] ?? "", selector);
    return { field: m[1].trim(), operator: m[2] === "!=" ? "!=" : "=", value };
  });
}

/** Reads a field as the apiserver's field label conversion does: missing → "", bool → "true". */
export function fieldValue(obj: unknown, field: string): string {
  let cur: unknown = obj;
  for (const part of field.split(".")) {
    if (cur === null || typeof cur !== "object") return "";
    cur = (cur as Record<string, unknown>)[part];
  }
  if (typeof cur === "string") return cur;
  if (typeof cur === "number" || typeof cur === "boolean") return String(cur);
  // "source" on an Event is an object; the apiserver selects on its component.
  if (field === "source" && cur !== null && typeof cur === "object") {
    const c = (cur as { component?: unknown }).component;
    return typeof c === "string" ? c : "";
  }
  return "";
}

export function matchesFieldRequirements(reqs: readonly FieldRequirement[], obj: unknown): boolean {
  for (const r of reqs) {
    const v = fieldValue(obj, r.field);
    if (r.operator === "=" ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/**
 * A predicate for a field selector on a kind; unsupported fields fail like the apiserver's
 * `field label not supported` so tests catch selectors a real cluster would refuse.
 */
export function fieldMatcher(kind: KindName, selector: string | undefined): (obj: unknown) => boolean {
  if (selector === undefined || selector.trim() === "") return () => true;
  const reqs = parseFieldSelector(selector);
  for (const r of reqs) {
    if (!isSelectableField(kind, r.field)) {
      throw new SelectorError(`field label not supported: ${r.field} (kind ${kind})`);
    }
  }
  return (obj) => matchesFieldRequirements(reqs, obj);
}
