// A local stand-in for the AWS endpoints live pricing talks to, for tests: it answers the real SDK
// clients (pointed at it by endpoint override) with the responses recorded in testdata/wire —
// Pricing API GetProducts (JSON 1.1 protocol) and EC2 DescribeSpotPriceHistory (EC2 query
// protocol, XML) — paged by NextToken, per region, and serves EKS Pod Identity / container
// credentials. Faults (throttling, 5xx, a hung request) are injected per service.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { readdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { parseStaticPriceTable, type RegionPrices, type StaticPriceTable } from "./static.ts";

/** A static price table of `regions` (parsed, so valid), generated 2026-01-19. */
export function priceTable(regions: Record<string, RegionPrices>): StaticPriceTable {
  return parseStaticPriceTable({ schema: 1, generatedAt: "2026-01-19", regions });
}

const WIRE = new URL("./testdata/wire/", import.meta.url);

export type FakeService = "pricing" | "ec2" | "credentials";
export type FakeFault = "throttle" | "server-error" | "hang";

export interface FakeRequest {
  service: FakeService;
  /** Pricing: the regionCode filter; EC2: the region of the request's SigV4 credential scope. */
  region?: string;
  /** The access key id the request was signed with (from its Authorization header). */
  accessKeyId?: string;
  nextToken?: string;
  /** What the server answered. */
  status: number;
}

export interface FakeAws {
  url: string;
  requests: FakeRequest[];
  /** The next `times` requests to `service` fail with `fault`. */
  fail(service: FakeService, fault: FakeFault, times?: number): void;
  /** Replace a region's recorded pages (e.g. partial data); [] answers with no prices. */
  setPages(service: "pricing" | "ec2", region: string, pages: string[]): void;
  /** Container credentials it hands out for `token` (EKS Pod Identity agent stand-in). */
  credentials: { token: string; accessKeyId: string };
  close(): Promise<void>;
}

/** Recorded pages per service and region, from testdata/wire, in page order. */
function recordedPages(): Record<"pricing" | "ec2", Map<string, string[]>> {
  const out = { pricing: new Map<string, string[]>(), ec2: new Map<string, string[]>() };
  const files = readdirSync(WIRE).sort();
  for (const f of files) {
    const m = /^(get-products|describe-spot-price-history)\.([a-z0-9-]+)\.(\d+)\.(json|xml)$/.exec(f);
    if (!m) continue;
    const service = m[1] === "get-products" ? "pricing" : "ec2";
    const region = m[2] ?? "";
    const pages = out[service].get(region) ?? [];
    pages[Number(m[3]) - 1] = readFileSync(new URL(f, WIRE), "utf8");
    out[service].set(region, pages);
  }
  return out;
}

function nextTokenOf(service: "pricing" | "ec2", page: string): string | undefined {
  if (service === "pricing") return (JSON.parse(page) as { NextToken?: string }).NextToken || undefined;
  return /<nextToken>([^<]*)<\/nextToken>/.exec(page)?.[1] || undefined;
}

const EMPTY = {
  pricing: JSON.stringify({ FormatVersion: "aws_v1", PriceList: [] }),
  ec2:
    '<?xml version="1.0" encoding="UTF-8"?>\n<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">' +
    "<requestId>5e1b0c44-9d0e-4d7a-8f3c-1a2b3c4d5e6f</requestId><spotPriceHistorySet/><nextToken></nextToken>" +
    "</DescribeSpotPriceHistoryResponse>",
};

const JSON_TYPE = "application/x-amz-json-1.1";

function ec2Error(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${code}</Code><Message>${message}</Message></Error></Errors><RequestID>9f8e7d6c-5b4a-4392-8170-fedcba987654</RequestID></Response>`;
}

/** What AWS answers for each fault: Pricing in JSON 1.1, EC2 in its XML error envelope. */
const FAULTS: Record<"pricing" | "ec2", Record<"throttle" | "server-error", [number, string]>> = {
  pricing: {
    throttle: [400, JSON.stringify({ __type: "ThrottlingException", message: "Rate exceeded" })],
    "server-error": [
      500,
      JSON.stringify({ __type: "InternalErrorException", Message: "An error occurred on the server side." }),
    ],
  },
  ec2: {
    throttle: [503, ec2Error("RequestLimitExceeded", "Request limit exceeded.")],
    "server-error": [500, ec2Error("InternalError", "An internal error has occurred")],
  },
};

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startFakeAws(): Promise<FakeAws> {
  const pages = recordedPages();
  const requests: FakeRequest[] = [];
  const faults: { service: FakeService; fault: FakeFault }[] = [];
  const hung = new Set<ServerResponse>();
  const credentials = { token: "pod-identity-token-for-tests", accessKeyId: "ASIAFAKEPODIDENTITY1" };

  const takeFault = (service: FakeService): FakeFault | undefined => {
    const i = faults.findIndex((f) => f.service === service);
    return i < 0 ? undefined : faults.splice(i, 1)[0]?.fault;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await bodyOf(req);
    const auth = req.headers.authorization ?? "";
    const scope = /Credential=([^/]+)\/\d{8}\/([a-z0-9-]+)\/([a-z0-9]+)\/aws4_request/.exec(auth);
    const target = req.headers["x-amz-target"];
    const service: FakeService | undefined =
      req.method === "GET" && req.url?.startsWith("/v1/credentials")
        ? "credentials"
        : target === "AWSPriceListService.GetProducts"
          ? "pricing"
          : /(^|&)Action=DescribeSpotPriceHistory(&|$)/.test(body)
            ? "ec2"
            : undefined;
    const record = (r: Omit<FakeRequest, "status">, status: number): void => {
      requests.push({ ...r, status });
    };
    if (service === undefined) {
      res.writeHead(404).end();
      return;
    }
    const fault = takeFault(service);
    if (fault === "hang") {
      hung.add(res);
      record({ service }, 0);
      return;
    }
    if (service === "credentials") {
      if (fault !== undefined || auth !== credentials.token) {
        record({ service }, fault ? 500 : 401);
        res.writeHead(fault ? 500 : 401, { "content-type": "application/json" }).end('{"message":"denied"}');
        return;
      }
      record({ service }, 200);
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          AccessKeyId: credentials.accessKeyId,
          SecretAccessKey: "fake-secret-access-key-for-tests-only",
          Token: "fake-session-token-for-tests-only",
          AccountId: "111122223333",
          Expiration: new Date(Date.now() + 6 * 3_600_000).toISOString(),
        }),
      );
      return;
    }
    let region: string | undefined;
    let nextToken: string | undefined;
    if (service === "pricing") {
      const input = JSON.parse(body) as { Filters?: { Field: string; Value: string }[]; NextToken?: string };
      region = input.Filters?.find((f) => f.Field === "regionCode")?.Value;
      nextToken = input.NextToken;
    } else {
      region = scope?.[2];
      const t = new URLSearchParams(body).get("NextToken");
      nextToken = t === null || t === "" ? undefined : t;
    }
    const seen = {
      service,
      ...(region ? { region } : {}),
      ...(scope?.[1] ? { accessKeyId: scope[1] } : {}),
      ...(nextToken ? { nextToken } : {}),
    };
    const type = service === "pricing" ? JSON_TYPE : "text/xml;charset=UTF-8";
    if (fault !== undefined) {
      const [status, text] = FAULTS[service][fault];
      record(seen, status);
      res.writeHead(status, { "content-type": type }).end(text);
      return;
    }
    const list = pages[service].get(region ?? "") ?? [];
    // An unknown region is not an error to AWS: it has no products there.
    let page: string | undefined = list.length === 0 && nextToken === undefined ? EMPTY[service] : undefined;
    if (page === undefined) {
      const i =
        nextToken === undefined
          ? 0
          : list.findIndex((p, j) => j > 0 && nextTokenOf(service, list[j - 1] ?? "") === nextToken);
      page = i < 0 ? undefined : list[i];
    }
    if (page === undefined) {
      record(seen, 400);
      res
        .writeHead(400, { "content-type": type })
        .end(
          service === "pricing"
            ? JSON.stringify({ __type: "InvalidNextTokenException", Message: "invalid NextToken" })
            : ec2Error("InvalidNextToken", "The token is invalid."),
        );
      return;
    }
    record(seen, 200);
    res.writeHead(200, { "content-type": type }).end(page);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    credentials,
    fail(service, fault, times = 1) {
      for (let i = 0; i < times; i++) faults.push({ service, fault });
    },
    setPages(service, region, list) {
      pages[service].set(region, list);
    },
    close: async () => {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Sets exactly these AWS_* variables (plus ones that keep the SDK's standard credential chain
 * off the network and away from the user's ~/.aws) until the returned function restores the
 * previous ones. The chain reads process.env when it resolves.
 */
export function setAwsEnv(vars: Record<string, string>): () => void {
  const saved = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("AWS_")));
  const clear = (): void => {
    for (const k of Object.keys(process.env))
      if (k.startsWith("AWS_")) Reflect.deleteProperty(process.env, k);
  };
  clear();
  Object.assign(process.env, {
    // Off AWS, the chain's last step would probe the instance metadata service on the network.
    AWS_EC2_METADATA_DISABLED: "true",
    AWS_SHARED_CREDENTIALS_FILE: "/nonexistent/credentials",
    AWS_CONFIG_FILE: "/nonexistent/config",
    ...vars,
  });
  return () => {
    clear();
    Object.assign(process.env, saved);
  };
}
