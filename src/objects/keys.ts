// The key of a namespaced object ("namespace/name"), as the informers' caches and the cluster
// state store it. Built from a shared "namespace/" prefix: V8 makes a long concatenation a rope
// of its two halves, so each key then costs one small rope over the name the object already
// holds — before, each key also had its own copy of the prefix (300,000 pods × 2 maps × 24 B).

const MAX_PREFIXES = 10_000;
let prefixes = new Map<string, string>();

/** "namespace/name": one shared "namespace/" per namespace (bounded; past it, starts over). */
export function namespacedKey(namespace: string, name: string): string {
  let prefix = prefixes.get(namespace);
  if (prefix === undefined) {
    if (prefixes.size >= MAX_PREFIXES) prefixes = new Map();
    prefix = `${namespace}/`;
    prefixes.set(namespace, prefix);
  }
  return prefix + name;
}
