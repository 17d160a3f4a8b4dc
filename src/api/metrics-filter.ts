// /metrics for one caller (issue 42: a user with no role in cluster-b read its 113 series): the
// exposition's samples whose `cluster` label names a cluster the caller has no role in are left
// out. Series without a cluster label are core's own (its process, ingest totals) and stay: a
// caller reaches /metrics only with a role in core's own cluster.

const CLUSTER_LABEL = /[{,]cluster="((?:[^"\\]|\\.)*)"/;

/** The Prometheus text exposition without the samples of clusters `keep` refuses. */
export function exposedTo(text: string, keep: (clusterId: string) => boolean): string {
  return text
    .split("\n")
    .filter((line) => {
      if (line.startsWith("#")) return true;
      const m = CLUSTER_LABEL.exec(line);
      return m === null || keep(m[1] ?? "");
    })
    .join("\n");
}
