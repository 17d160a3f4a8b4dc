// Namespaces no spot policy may target (issue 42): Kubernetes' own and Wave's.

/** Kubernetes' own namespaces: placing their pods is not Wave's to change. */
export const KUBERNETES_NAMESPACES: readonly string[] = ["kube-system", "kube-public", "kube-node-lease"];

/** Why no spot policy may target `namespace`, or undefined when one may. */
export function reservedNamespace(namespace: string, waveNamespaces: readonly string[]): string | undefined {
  if (KUBERNETES_NAMESPACES.includes(namespace))
    return `namespace ${namespace} is Kubernetes' own: Wave places no pods there`;
  if (waveNamespaces.includes(namespace))
    return `namespace ${namespace} is Wave's own: its pods are never placed by a spot policy`;
  return undefined;
}
