// `helm test <release>`: core answers /healthz, and the webhook answers a dry-run AdmissionReview
// over its Service with cert-manager's certificate (the path the API server takes). A dry run
// writes no slot ledger Lease. Exits 1 with one line saying what failed.
import { readFileSync } from "node:fs";
import { request } from "node:https";

const fail = (message) => {
  console.error(`FAIL ${message}`);
  process.exit(1);
};

const core = process.env.WAVE_TEST_CORE_URL;
const health = await fetch(`${core}/healthz`, { signal: AbortSignal.timeout(10_000) }).catch((err) =>
  fail(`core ${core}/healthz: ${err.message}`),
);
if (health.status !== 200) fail(`core ${core}/healthz answered ${health.status}`);
console.log(`ok core ${core}/healthz`);

const host = process.env.WAVE_TEST_WEBHOOK_HOST;
if (host) {
  const port = Number(process.env.WAVE_TEST_WEBHOOK_PORT);
  const ns = process.env.WAVE_TEST_NAMESPACE;
  const uid = `wave-helm-test-${Date.now()}`;
  const review = JSON.stringify({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    request: {
      uid,
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace: ns,
      operation: "CREATE",
      dryRun: true,
      userInfo: { username: "wave-helm-test" },
      object: {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "wave-helm-test", namespace: ns },
        spec: { containers: [{ name: "c", image: "wave-helm-test" }] },
      },
    },
  });
  const answer = await new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        path: "/mutate",
        method: "POST",
        ca: readFileSync(process.env.WAVE_TEST_CA ?? "/etc/wave-test/ca.crt"),
        headers: { "content-type": "application/json" },
        timeout: 10_000,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer in 10 s")));
    req.on("error", reject);
    req.end(review);
  }).catch((err) => fail(`webhook https://${host}:${port}/mutate: ${err.message}`));
  let response;
  try {
    response = JSON.parse(answer.body).response;
  } catch {
    fail(`webhook answered ${answer.status} with no AdmissionReview: ${answer.body.slice(0, 200)}`);
  }
  if (answer.status !== 200 || response?.uid !== uid || response?.allowed !== true)
    fail(`webhook answered ${answer.status}: ${answer.body.slice(0, 200)}`);
  console.log(`ok webhook https://${host}:${port}/mutate answered the dry-run review (allowed)`);
}
