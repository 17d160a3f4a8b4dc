// Live AWS prices through the real path: Nodes in a cluster → the agent (informers, trim, gRPC
// over mutual TLS) → core (state, machine index, cost figures, price lookup) → the API, with the
// real AWS SDK clients and credential chain pointed at a local server that replays recorded
// Pricing API (JSON 1.1) and DescribeSpotPriceHistory (EC2 XML) responses. The endpoint override
// is the SDK's own AWS_ENDPOINT_URL_<SERVICE> setting; credentials come from EKS Pod Identity.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NodeDto, NodeListDto, NodePoolDto, OverviewDto } from "../../src/dashboard/dto.ts";
import { startAgentComponent, startCoreComponent } from "../../src/cli/components.ts";
import { parseConfig } from "../../src/config/config.ts";
import {
  CAPACITY_TYPE_LABEL,
  INSTANCE_TYPE_LABEL,
  NODE_POOL_LABEL,
  TOPOLOGY_REGION_LABEL,
  TOPOLOGY_ZONE_LABEL,
} from "../../src/objects/karpenter.ts";
import { MemoryKube } from "../../src/kube/memory/memory.ts";
import { setAwsEnv, startFakeAws, type FakeAws } from "../../src/pricing/testing.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { CLIENT_EXT, makePki, SERVER_EXT } from "../support/pki.ts";

const NS = "wave";
const TOKENS = {
  agent: "agent-token-0123456789",
  admin: "admin-token-0123456789",
  viewer: "viewer-token-0123456789",
};

interface Machine {
  name: string;
  type: string;
  capacity: "spot" | "on-demand";
  zone?: string;
  region?: string;
  providerID?: string;
}

/** EC2 nodes as Karpenter launches them (labels, providerID), in two regions. */
const MACHINES: Machine[] = [
  { name: "ip-10-0-1-11.ec2.internal", type: "m5.large", capacity: "on-demand", zone: "us-east-1a" },
  { name: "ip-10-0-2-12.ec2.internal", type: "m5.large", capacity: "spot", zone: "us-east-1b" },
  // No zone label: the zone is read from the providerID the agent forwards.
  {
    name: "ip-10-0-3-13.ec2.internal",
    type: "c6g.xlarge",
    capacity: "spot",
    providerID: "aws:///us-east-1c/i-0c6a11b2c3d4e5f60",
  },
  // No spot price recorded for m5.large in us-east-1c: partial data, estimated.
  { name: "ip-10-0-3-14.ec2.internal", type: "m5.large", capacity: "spot", zone: "us-east-1c" },
  {
    name: "ip-10-1-1-15.eu-west-1.compute.internal",
    type: "m5.large",
    capacity: "spot",
    zone: "eu-west-1a",
    region: "eu-west-1",
  },
];

async function seed(kube: MemoryKube): Promise<void> {
  for (const m of MACHINES) {
    await kube.create("Node", {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: m.name,
        labels: {
          [NODE_POOL_LABEL]: "general",
          [INSTANCE_TYPE_LABEL]: m.type,
          [CAPACITY_TYPE_LABEL]: m.capacity,
          ...(m.zone ? { [TOPOLOGY_ZONE_LABEL]: m.zone } : {}),
          ...(m.region ? { [TOPOLOGY_REGION_LABEL]: m.region } : {}),
        },
      },
      spec: { providerID: m.providerID ?? `aws:///${m.zone ?? ""}/i-0${m.name.length}abcdef0123456` },
      status: {
        capacity: { cpu: "2", memory: "8Gi", pods: "29" },
        allocatable: { cpu: "1930m", memory: "7Gi", pods: "29" },
        conditions: [{ type: "Ready", status: "True" }],
      },
    } as never);
  }
}

describe("live AWS prices, agent → wire → core → API", { timeout: 90_000 }, () => {
  let dir = "";
  let fake: FakeAws;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "wave-live-pricing-"));
    makePki(dir, [
      { dir: "grpc", cn: "grpc", ext: SERVER_EXT },
      { dir: "agent", cn: "wave-agent", ext: CLIENT_EXT },
    ]);
    fake = await startFakeAws();
  });
  after(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Core and agent on one in-memory cluster; `check` polls the API until it returns a value. */
  async function withWave<T>(
    name: string,
    check: (get: <D>(path: string) => Promise<D>) => Promise<T | undefined>,
  ): Promise<T> {
    const kube = new MemoryKube();
    await seed(kube);
    const common = [
      "--namespace",
      NS,
      "--cluster-id",
      "eks",
      "--host",
      "127.0.0.1",
      "--agent-token",
      TOKENS.agent,
    ];
    const core = await startCoreComponent(
      parseConfig(
        [
          ...common,
          ...[
            "--port",
            "0",
            "--grpc-port",
            "0",
            "--grpc-tls-dir",
            join(dir, "grpc"),
            "--data-dir",
            join(dir, name),
          ],
          ...["--admin-token", TOKENS.admin, "--viewer-token", TOKENS.viewer, "--pod-name", "core-0"],
        ],
        {},
      ).config,
      {},
      { kube, log: silentLogger },
    );
    try {
      const agent = await startAgentComponent(
        parseConfig(
          [
            ...common,
            ...[
              "--core-address",
              `https://127.0.0.1:${core.grpcPort}`,
              "--agent-tls-dir",
              join(dir, "agent"),
            ],
            ...["--metrics-port", "0", "--pod-name", "agent-0"],
          ],
          {},
        ).config,
        {},
        { kube, log: silentLogger },
      );
      try {
        const get = async <D>(path: string): Promise<D> => {
          const url = path === "/metrics" ? path : `/api/v1/clusters/eks/${path}`;
          const res = await fetch(`http://127.0.0.1:${core.apiPort}${url}`, {
            headers: { authorization: `Bearer ${TOKENS.viewer}` },
          });
          assert.equal(res.status, 200, path);
          return (path === "/metrics" ? await res.text() : await res.json()) as D;
        };
        const deadline = Date.now() + 30_000;
        for (;;) {
          const v = await check(get);
          if (v !== undefined) return v;
          assert.ok(Date.now() < deadline, `${name}: the API did not show the expected prices within 30 s`);
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        await agent.stop();
      }
    } finally {
      await core.stop();
    }
  }

  const byName = (list: NodeListDto): Map<string, NodeDto> => new Map(list.items.map((n) => [n.name, n]));

  it("shows each node at its recorded price with source live, per zone and region", async () => {
    const tokenFile = join(dir, "eks-pod-identity-token");
    writeFileSync(tokenFile, fake.credentials.token);
    const restore = setAwsEnv({
      AWS_ENDPOINT_URL_PRICING: fake.url,
      AWS_ENDPOINT_URL_EC2: fake.url,
      AWS_CONTAINER_CREDENTIALS_FULL_URI: `${fake.url}/v1/credentials`,
      AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile,
    });
    const started = Date.now();
    try {
      const { nodes, pools, overview, metrics } = await withWave("live", async (get) => {
        const nodes = byName(await get<NodeListDto>("nodes"));
        if (
          nodes.size < MACHINES.length ||
          [...nodes.values()].filter((n) => n.priceSource === "live").length < 4
        )
          return undefined;
        return {
          nodes,
          pools: await get<NodePoolDto[]>("nodepools"),
          overview: await get<OverviewDto>("overview"),
          metrics: await get<string>("/metrics"),
        };
      });
      const price = (n: string) => {
        const d = nodes.get(n);
        return [d?.costPerHour, d?.priceSource];
      };
      assert.deepEqual(price("ip-10-0-1-11.ec2.internal"), [0.096, "live"]);
      assert.deepEqual(price("ip-10-0-2-12.ec2.internal"), [0.0351, "live"]);
      assert.deepEqual(price("ip-10-0-3-13.ec2.internal"), [0.0493, "live"]);
      assert.deepEqual(price("ip-10-1-1-15.eu-west-1.compute.internal"), [0.0412, "live"]);
      // Partial data: no recorded spot price for that zone → 0.35 × the live on-demand price.
      assert.equal(nodes.get("ip-10-0-3-14.ec2.internal")?.priceSource, "estimate");
      assert.ok(Math.abs((nodes.get("ip-10-0-3-14.ec2.internal")?.costPerHour ?? 0) - 0.0336) < 1e-9);
      for (const n of nodes.values()) {
        const at = Date.parse(n.priceAsOf ?? "");
        assert.ok(
          at >= started - 1000 && at <= Date.now(),
          `${n.name} priced at fetch time, got ${n.priceAsOf}`,
        );
      }
      const pool = pools.find((p) => p.name === "general");
      assert.ok(pool, "the general pool");
      assert.deepEqual(pool.priceSources, { live: 4, estimate: 1 });
      assert.ok(pool.oldestPriceAsOf !== null && Date.parse(pool.oldestPriceAsOf) >= started - 1000);
      assert.ok(Math.abs(pool.costPerHour - (0.096 + 0.0351 + 0.0493 + 0.0412 + 0.0336)) < 1e-9);
      assert.deepEqual(overview.priceSources, { live: 4, estimate: 1 });
      assert.match(metrics, /^wave_pricing_live_state\{region="us-east-1",source="spot",state="ok"\} 1$/m);
      assert.match(
        metrics,
        /^wave_pricing_live_state\{region="eu-west-1",source="on-demand",state="ok"\} 1$/m,
      );
      assert.match(metrics, /^wave_pricing_live_age_seconds\{region="us-east-1",source="on-demand"\} \d/m);
      // Signed with the credentials the Pod Identity endpoint handed out, region from the nodes.
      const calls = fake.requests.filter((r) => r.service !== "credentials");
      assert.ok(calls.every((r) => r.accessKeyId === fake.credentials.accessKeyId));
      assert.deepEqual([...new Set(calls.filter((r) => r.service === "ec2").map((r) => r.region))].sort(), [
        "eu-west-1",
        "us-east-1",
      ]);
    } finally {
      restore();
    }
  });

  it("without credentials shows the shipped table's prices, labelled static / estimate with their date", async () => {
    const restore = setAwsEnv({ AWS_ENDPOINT_URL_PRICING: fake.url, AWS_ENDPOINT_URL_EC2: fake.url });
    const before = fake.requests.length;
    try {
      // Once both regions' live prices have given up for want of credentials (core's /metrics):
      const nodes = await withWave("none", async (get) => {
        const nodes = byName(await get<NodeListDto>("nodes"));
        const metrics = await get<string>("/metrics");
        const given = ["us-east-1", "eu-west-1"].every((r) =>
          ["on-demand", "spot"].every((s) =>
            metrics.includes(`wave_pricing_live_state{region="${r}",source="${s}",state="no-credentials"} 1`),
          ),
        );
        return nodes.size === MACHINES.length && given ? nodes : undefined;
      });
      assert.deepEqual([...nodes.values()].map((n) => [n.name, n.priceSource, n.priceAsOf]).sort(), [
        ["ip-10-0-1-11.ec2.internal", "static", "2026-01-19"],
        ["ip-10-0-2-12.ec2.internal", "estimate", "2026-01-19"],
        ["ip-10-0-3-13.ec2.internal", "estimate", "2026-01-19"],
        ["ip-10-0-3-14.ec2.internal", "estimate", "2026-01-19"],
        ["ip-10-1-1-15.eu-west-1.compute.internal", "estimate", "2024-12-01"],
      ]);
      assert.equal(nodes.get("ip-10-0-1-11.ec2.internal")?.costPerHour, 0.096);
      assert.equal(fake.requests.length, before, "nothing was sent without credentials");
    } finally {
      restore();
    }
  });
});
