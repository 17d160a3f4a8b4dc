// Object names as the Kubernetes apiserver validates them (apimachinery's validation package), so
// core can refuse what no real cluster holds (issue 42: names from a compromised agent reached
// copyable shell commands). Pure; imports nothing.

const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL = new RegExp(`^${LABEL}$`);
const DNS1123_SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** DNS-1123 label: a namespace's name (≤ 63, lowercase alphanumerics and '-'). */
export const isDns1123Label = (s: string): boolean => s.length <= 63 && DNS1123_LABEL.test(s);

/** DNS-1123 subdomain: the name of a Node, Pod, PDB, Event or custom resource (≤ 253). */
export const isDns1123Subdomain = (s: string): boolean => s.length <= 253 && DNS1123_SUBDOMAIN.test(s);

/** A label's or annotation's key: [DNS-1123 subdomain prefix '/'] name (≤ 63). */
export function isQualifiedName(s: string): boolean {
  const slash = s.lastIndexOf("/");
  const name = slash < 0 ? s : s.slice(slash + 1);
  const prefix = slash < 0 ? undefined : s.slice(0, slash);
  if (prefix !== undefined && (prefix === "" || !isDns1123Subdomain(prefix))) return false;
  return name.length <= 63 && QUALIFIED_NAME.test(name);
}

/** A label's value (≤ 63; may be empty). */
export const isLabelValue = (s: string): boolean => s.length <= 63 && LABEL_VALUE.test(s);

/**
 * What is wrong with an object's metadata as the apiserver would see it (its name a DNS-1123
 * subdomain, its namespace a DNS-1123 label, its labels' keys and values valid), or undefined.
 */
export function metadataProblem(meta: {
  name?: string | undefined;
  namespace?: string | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
}): string | undefined {
  const name = meta.name ?? "";
  if (!isDns1123Subdomain(name))
    return `metadata.name ${JSON.stringify(name.slice(0, 80))} is not a DNS-1123 subdomain`;
  if (meta.namespace !== undefined && meta.namespace !== "" && !isDns1123Label(meta.namespace))
    return `metadata.namespace ${JSON.stringify(meta.namespace.slice(0, 80))} is not a DNS-1123 label`;
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    if (!isQualifiedName(k)) return `label key ${JSON.stringify(k.slice(0, 80))} is not a qualified name`;
    if (!isLabelValue(v))
      return `label ${k}: value ${JSON.stringify(v.slice(0, 80))} is not a valid label value`;
  }
  return undefined;
}
