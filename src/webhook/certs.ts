// Local-run TLS: a throwaway CA and a serving certificate signed by it, made with the openssl CLI
// (EC P-256, SANs for every host). In a cluster, cert-manager or the Helm chart provides them.
import { execFile } from "node:child_process";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface GenerateCertsOptions {
  /** Directory written with ca.crt, ca.key, tls.crt, tls.key. */
  dir: string;
  /** DNS names and IPs the serving cert is valid for, e.g. ["localhost", "127.0.0.1"]. */
  hosts: string[];
  days?: number;
  /** Reuse an existing CA in `dir` (rotate only the serving cert). Default false. */
  reuseCa?: boolean;
  openssl?: string;
}

export interface DevCerts {
  caFile: string;
  caKeyFile: string;
  certFile: string;
  keyFile: string;
  /** PEM of the CA, for the MutatingWebhookConfiguration caBundle. */
  caPem: string;
}

const HOST = /^[A-Za-z0-9*]([A-Za-z0-9.*-]*[A-Za-z0-9])?$/;

export async function generateDevCerts(opts: GenerateCertsOptions): Promise<DevCerts> {
  if (opts.hosts.length === 0) throw new Error("generateDevCerts: at least one host is required");
  for (const h of opts.hosts)
    if (isIP(h) === 0 && !HOST.test(h)) throw new Error(`generateDevCerts: bad host ${JSON.stringify(h)}`);
  const openssl = opts.openssl ?? "openssl";
  const days = String(opts.days ?? 365);
  const dir = opts.dir;
  await mkdir(dir, { recursive: true });
  const caFile = join(dir, "ca.crt");
  const caKeyFile = join(dir, "ca.key");
  const certFile = join(dir, "tls.crt");
  const keyFile = join(dir, "tls.key");
  const work = join(dir, `.work-${process.pid}-${Date.now()}`);
  await mkdir(work);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  try {
    if (!opts.reuseCa) {
      await run(openssl, [
        "req",
        "-x509",
        "-new",
        ...ec,
        "-keyout",
        join(work, "ca.key"),
        "-out",
        join(work, "ca.crt"),
        "-days",
        days,
        "-subj",
        "/CN=wave-webhook-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
      ]);
      await rename(join(work, "ca.key"), caKeyFile);
      await rename(join(work, "ca.crt"), caFile);
    }
    const san = opts.hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(",");
    await writeFile(
      join(work, "ext.cnf"),
      `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=CA:FALSE\n`,
    );
    await run(openssl, [
      "req",
      "-new",
      ...ec,
      "-keyout",
      join(work, "tls.key"),
      "-out",
      join(work, "tls.csr"),
      "-subj",
      `/CN=${opts.hosts[0] ?? "localhost"}`,
    ]);
    await run(openssl, [
      "x509",
      "-req",
      "-in",
      join(work, "tls.csr"),
      "-CA",
      caFile,
      "-CAkey",
      caKeyFile,
      "-CAcreateserial",
      "-CAserial",
      join(work, "ca.srl"),
      "-out",
      join(work, "tls.crt"),
      "-days",
      days,
      "-extfile",
      join(work, "ext.cnf"),
    ]);
    // Renames are atomic: a watcher never reads a half-written file.
    await rename(join(work, "tls.key"), keyFile);
    await rename(join(work, "tls.crt"), certFile);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { caFile, caKeyFile, certFile, keyFile, caPem: await readFile(caFile, "utf8") };
}
