// Regenerates src/pricing/data/ec2-on-demand.json from the AWS Pricing API.
//
//   node hack/pricing/update.ts [--regions us-east-1,eu-west-1] [--out FILE] [--spot-ratio] [--dry-run]
//
// Needs AWS credentials (the SDK's default chain: env, profile, SSO, instance role) allowed to call
// pricing:GetProducts and, for --spot-ratio, ec2:DescribeSpotPriceHistory. Each region is fetched
// whole (GetProducts: Linux, shared tenancy, no pre-installed software, capacitystatus Used), the
// shipped families are kept, and the region is replaced in the table with provenance
// "aws-pricing-api"; regions not fetched are left as they were. --spot-ratio prints the median
// spot/on-demand ratio per region, to calibrate the spot estimate factor.
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { PricingClient } from "@aws-sdk/client-pricing";
import { EC2Client } from "@aws-sdk/client-ec2";
import { pricingApiFetcher, spotPriceHistoryFetcher } from "../../src/pricing/aws.ts";
import { DEFAULT_TABLE_URL, loadStaticPriceTable } from "../../src/pricing/static.ts";
import {
  medianSpotRatio,
  mergeRegion,
  selectFamilies,
  TABLE_REGIONS,
} from "../../src/pricing/table-update.ts";

// The Pricing API is served from a few regions only; us-east-1 answers for every region's prices.
const PRICING_API_REGION = "us-east-1";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      regions: { type: "string" },
      out: { type: "string" },
      "spot-ratio": { type: "boolean", default: false },
      "dry-run": { type: "boolean", default: false },
    },
    strict: true,
  });
  const regions = values.regions
    ? values.regions
        .split(",")
        .map((r) => r.trim())
        .filter(Boolean)
    : [...TABLE_REGIONS];
  const out = values.out ?? DEFAULT_TABLE_URL;
  let table = loadStaticPriceTable(DEFAULT_TABLE_URL);
  const today = new Date().toISOString().slice(0, 10);
  const pricing = pricingApiFetcher(new PricingClient({ region: PRICING_API_REGION }));
  let failed = 0;
  let fetched = 0;
  for (const region of regions) {
    try {
      const onDemand = selectFamilies(await pricing.fetchOnDemand(region));
      table = mergeRegion(table, region, onDemand, today);
      fetched++;
      process.stdout.write(`${region}: ${String(Object.keys(onDemand).length)} instance types\n`);
      if (values["spot-ratio"]) {
        const spot = await spotPriceHistoryFetcher(new EC2Client({ region })).fetchSpot(
          new Date(),
          undefined,
          Object.keys(onDemand),
        );
        const ratio = medianSpotRatio(spot, onDemand);
        process.stdout.write(
          `${region}: median spot/on-demand ${ratio === undefined ? "n/a" : ratio.toFixed(3)} over ${String(spot.length)} offerings\n`,
        );
      }
    } catch (err) {
      failed++;
      process.stderr.write(
        `${region}: ${err instanceof Error ? err.message : String(err)} (region left unchanged)\n`,
      );
    }
  }
  if (fetched > 0 && !values["dry-run"]) writeFileSync(out, JSON.stringify(table, null, 2) + "\n");
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`update: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
