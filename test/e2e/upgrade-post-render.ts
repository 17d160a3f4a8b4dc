// Helm post-renderer of test/e2e/upgrade.e2e.test.ts (`helm install|upgrade --post-renderer`):
// the chart's objects go to the shared rig for real, except what would reach beyond the test's
// release or cannot exist here. Helm stores the post-rendered manifest in the release, so
// `helm rollback` brings back exactly this. Dropped:
//   - cert-manager's Certificate and Issuer (the rig has no cert-manager; the test issues the
//     Secrets' files itself, as image.e2e.test.ts does)
//   - the MutatingWebhookConfiguration (cluster-wide admission on a shared rig; the webhook's own
//     serving is checked on its /healthz) and the fixed-name PriorityClass wave-warmup (other
//     tests create it; no warmup runs here)
// and every Deployment gets 0 replicas: the rig's nodes are KWOK's (no kubelet runs containers);
// the test runs each component of the deployed revision in podman from the Deployment as stored.
import { parseAllDocuments, stringify } from "yaml";

const DROP = new Set([
  "Certificate",
  "Issuer",
  "ClusterIssuer",
  "MutatingWebhookConfiguration",
  "PriorityClass",
]);

const chunks: Buffer[] = [];
for await (const c of process.stdin) chunks.push(c as Buffer);
const out: string[] = [];
for (const doc of parseAllDocuments(Buffer.concat(chunks).toString("utf8"))) {
  const o = doc.toJSON() as { kind?: string; spec?: { replicas?: number } } | null;
  if (o === null || typeof o !== "object" || DROP.has(String(o.kind))) continue;
  if (o.kind === "Deployment" && o.spec) o.spec.replicas = 0;
  out.push(stringify(o));
}
process.stdout.write(out.map((d) => `---\n${d}`).join(""));
