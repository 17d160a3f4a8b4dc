import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { ConfigError, DEFAULTS, parseConfig } from "./config.ts";

const tmp = mkdtempSync(join(tmpdir(), "wave-config-"));
const file = (name: string, text: string): string => {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
};

describe("parseConfig", () => {
  it("returns frozen defaults with no input", () => {
    const { config } = parseConfig([], {});
    assert.deepEqual({ ...config }, { ...DEFAULTS });
    assert.ok(Object.isFrozen(config));
  });

  it("layers file < env < flags", () => {
    const cfg = file("a.yaml", "port: 9000\nclusterId: from-file\nlogLevel: warn\n");
    const { config } = parseConfig(["--config", cfg, "--port", "9100"], {
      WAVE_CLUSTER_ID: "from-env",
      WAVE_PORT: "9050",
    });
    assert.equal(config.port, 9100);
    assert.equal(config.clusterId, "from-env");
    assert.equal(config.logLevel, "warn");
  });

  it("takes a negative number as the value of the flag before it", () => {
    const extra = { threshold: { type: "string" as const }, disable: { type: "boolean" as const } };
    const { flags, positionals } = parseConfig(["set", "x", "--threshold", "-1", "--disable"], {}, extra);
    assert.equal(flags.threshold, "-1");
    assert.equal(flags.disable, true);
    assert.deepEqual(positionals, ["set", "x"]);
    assert.equal(parseConfig(["--threshold", "-0.5"], {}, extra).flags.threshold, "-0.5");
    // A shared flag's validation speaks, not parseArgs' "ambiguous".
    assert.throws(
      () => parseConfig(["--port", "-1"], {}),
      /--port: expected a port number 0-65535, got "-1"/,
    );
    // Only numbers: an option after a string flag is still an option (and a missing value).
    assert.throws(() => parseConfig(["--threshold", "--disable"], {}, extra), /argument is ambiguous/);
  });

  it("parses --log-format and records which settings were given", () => {
    assert.equal(parseConfig([]).config.logFormat, undefined);
    const { config, given } = parseConfig(["--log-format", "pretty"], { WAVE_LOG_LEVEL: "warn" });
    assert.equal(config.logFormat, "pretty");
    assert.deepEqual([...given].sort(), ["logFormat", "logLevel"]);
    assert.throws(
      () => parseConfig(["--log-format", "xml"]),
      /--log-format: expected json or pretty, got "xml"/,
    );
  });

  it("keeps positionals and booleans", () => {
    const { config, positionals } = parseConfig(["deployment/x", "--simulate", "--verbose"], {});
    assert.deepEqual(positionals, ["deployment/x"]);
    assert.equal(config.simulate, true);
    assert.equal(config.verbose, true);
  });

  const bad: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
    ["unknown flag", ["--nope"], {}, /Unknown option '--nope'/],
    ["bad port", ["--port", "70000"], {}, /--port: expected a port number 0-65535, got "70000"/],
    ["non-numeric port env", [], { WAVE_PORT: "http" }, /env WAVE_PORT: expected a port number/],
    ["bad level", ["--log-level", "loud"], {}, /expected debug, info, warn or error/],
    [
      "unreadable kubeconfig",
      ["--kubeconfig", "/nonexistent/kc"],
      {},
      /kubeconfig \/nonexistent\/kc: cannot read it \(ENOENT\)/,
    ],
    [
      "missing config file",
      ["--config", "/nonexistent.yaml"],
      {},
      /config file \/nonexistent.yaml: cannot read it/,
    ],
    ["bad database url", ["--database-url", "mysql://x"], {}, /must start with postgres:\/\//],
    ["bad pricing source", ["--pricing-source", "gcp"], {}, /--pricing-source: expected auto, aws or static/],
    [
      "a zone as pricing region",
      [],
      { WAVE_PRICING_REGION: "us-east-1,us-east-1a" },
      /env WAVE_PRICING_REGION: expected AWS region names .* got "us-east-1a"/,
    ],
    ["a too short refresh", ["--pricing-refresh", "30s"], {}, /expected a duration 5m-7d/],
    ["a unitless refresh", ["--pricing-refresh", "12"], {}, /expected a duration 5m-7d/],
    [
      "a max age below the refresh",
      ["--pricing-refresh", "12h", "--pricing-max-age", "1h"],
      {},
      /max age must be at least the refresh interval/,
    ],
  ];
  for (const [name, argv, env, re] of bad) {
    it(`rejects ${name} with one clear line`, () => {
      assert.throws(
        () => parseConfig(argv, env),
        (err: unknown) => err instanceof ConfigError && re.test(err.message) && !err.message.includes("\n"),
      );
    });
  }

  it("parses the pricing settings once: source, regions, durations", () => {
    const d = parseConfig([], {}).config;
    assert.equal(d.pricingSource, "auto");
    assert.deepEqual(d.pricingRegions, []);
    assert.equal(d.pricingRefreshMs, 12 * 3_600_000);
    assert.equal(d.pricingMaxAgeMs, 24 * 3_600_000);
    const { config } = parseConfig(
      ["--pricing-source", "aws", "--pricing-refresh", "30m", "--pricing-max-age", "2d"],
      { WAVE_PRICING_REGION: " eu-west-1, us-gov-west-1 ,eu-west-1" },
    );
    assert.equal(config.pricingSource, "aws");
    assert.deepEqual(config.pricingRegions, ["eu-west-1", "us-gov-west-1"]);
    assert.equal(config.pricingRefreshMs, 30 * 60_000);
    assert.equal(config.pricingMaxAgeMs, 2 * 86_400_000);
    const fromFile = parseConfig(["--config", file("p.yaml", "pricingRegions: [ap-southeast-1]\n")], {});
    assert.deepEqual(fromFile.config.pricingRegions, ["ap-southeast-1"]);
  });

  it("rejects unknown keys and malformed files", () => {
    assert.throws(() => parseConfig(["--config", file("b.yaml", "prot: 1\n")], {}), /unknown key "prot"/);
    assert.throws(() => parseConfig(["--config", file("c.yaml", "port: [\n")], {}), /not valid YAML/);
    assert.throws(() => parseConfig(["--config", file("d.yaml", "- 1\n")], {}), /expected a mapping/);
  });

  it("does not echo secret values in errors", () => {
    assert.throws(
      () => parseConfig(["--admin-token", "s3cret", "--viewer-token", "s3cret"], {}),
      (err: unknown) => err instanceof ConfigError && !err.message.includes("s3cret"),
    );
  });
});

describe("console identity settings (docs/auth.md)", () => {
  const roles = file(
    "roles.yaml",
    'clusters:\n  "*":\n    admin: [ops]\n    viewer: [dev]\n    namespaceEditors:\n      - group: team-a\n        namespaces: [a, b]\n',
  );
  const oidcEnv = {
    WAVE_OIDC_ISSUER_URL: "https://idp.example.com/realms/wave",
    WAVE_OIDC_CLIENT_ID: "wave",
    WAVE_OIDC_REDIRECT_URL: "https://wave.example.com/auth/callback",
    WAVE_AUTH_ROLES: roles,
  };

  it("parses OIDC, the role mapping and the client secret from its file", () => {
    const secret = file("secret", "s3cret-from-a-file\n");
    const { config } = parseConfig([], { ...oidcEnv, WAVE_OIDC_CLIENT_SECRET_FILE: secret });
    assert.equal(config.oidcClientSecret, "s3cret-from-a-file");
    assert.deepEqual(config.oidcScopes, ["openid", "profile", "email"]);
    assert.equal(config.oidcGroupsClaim, "groups");
    assert.equal(config.sessionTtlMs, 8 * 3_600_000);
    assert.deepEqual(config.authRoles?.clusters["*"]?.namespaceEditors, [
      { group: "team-a", namespaces: ["a", "b"] },
    ]);
    const inline = parseConfig(
      ["--config", file("wave.yaml", "authRoles:\n  clusters:\n    prod:\n      admin: [sre]\n")],
      { ...oidcEnv, WAVE_AUTH_ROLES: "" },
    );
    assert.deepEqual(inline.config.authRoles?.clusters.prod?.admin, ["sre"]);
  });

  it("refuses settings that do not hang together, in one line", () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ ...oidcEnv, WAVE_OIDC_CLIENT_ID: "" }, /--oidc-client-id .* is required/],
      [{ ...oidcEnv, WAVE_OIDC_REDIRECT_URL: "" }, /--oidc-redirect-url .* is required/],
      [{ ...oidcEnv, WAVE_AUTH_ROLES: "" }, /needs --auth-roles/],
      [{ WAVE_OIDC_CLIENT_ID: "wave" }, /--oidc-issuer-url .* is required/],
      [{ ...oidcEnv, WAVE_OIDC_SCOPES: "email,openid" }, /must begin with "openid"/],
      [{ ...oidcEnv, WAVE_OIDC_ISSUER_URL: "idp.example.com" }, /expected an http\(s\) URL/],
      [{ WAVE_AUTH_PROXY_TRUSTED: "10.0.0.0/8" }, /needs --auth-roles/],
      [{ WAVE_AUTH_PROXY_TRUSTED: "10.0.0.0/33", WAVE_AUTH_ROLES: roles }, /IP addresses or CIDRs/],
      [{ WAVE_AUTH_PROXY_SECRET: "short", WAVE_AUTH_ROLES: roles }, /at least 16 characters/],
      [
        { WAVE_AUTH_PROXY_TRUSTED: "10.0.0.1", WAVE_AUTH_PROXY_HEADERS: "both", WAVE_AUTH_ROLES: roles },
        /WAVE_AUTH_PROXY_HEADERS: expected x-auth-request or x-forwarded/,
      ],
      [
        { ...oidcEnv, WAVE_AUTH_ROLES: file("r1.yaml", "clusters:\n  x:\n    owner: [a]\n") },
        /unknown key "owner"/,
      ],
      [
        {
          ...oidcEnv,
          WAVE_AUTH_ROLES: file("r2.yaml", "clusters:\n  x:\n    namespaceEditors: [{ group: g }]\n"),
        },
        /namespaceEditors\[0\]\.namespaces: expected a non-empty list/,
      ],
      [
        { ...oidcEnv, WAVE_OIDC_CLIENT_SECRET_FILE: join(tmp, "missing") },
        /OIDC client secret file .*: cannot read it/,
      ],
    ];
    for (const [env, re] of bad)
      assert.throws(
        () => parseConfig([], env),
        (err: unknown) => err instanceof ConfigError && re.test(err.message) && !err.message.includes("\n"),
        JSON.stringify(env),
      );
  });
});
