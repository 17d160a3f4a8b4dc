// Test PKI made with openssl, laid out the way cert-manager mounts Secrets: a CA, and per leaf a
// directory with tls.crt, tls.key and the CA's ca.crt (beside a server's pair, ca.crt makes core
// require agent client certificates that CA signed).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Leaf {
  /** Directory under the PKI root. */
  dir: string;
  cn: string;
  /** x509 extensions (an openssl -extfile). */
  ext: string;
}

export const SERVER_EXT = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
export const CLIENT_EXT = "extendedKeyUsage=clientAuth\n";

function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: "pipe" });
}

/** root/ca/{ca.crt,ca.key} and root/<leaf.dir>/{tls.crt,tls.key,ca.crt}; returns the CA PEM. */
export function makePki(root: string, leaves: readonly Leaf[]): string {
  const ca = join(root, "ca");
  mkdirSync(ca, { recursive: true });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl(
    "req",
    "-x509",
    ...ec,
    "-days",
    "1",
    "-subj",
    "/CN=wave-test-ca",
    "-keyout",
    `${ca}/ca.key`,
    "-out",
    `${ca}/ca.crt`,
  );
  const caPem = readFileSync(`${ca}/ca.crt`, "utf8");
  for (const { dir, cn, ext } of leaves) {
    const d = join(root, dir);
    mkdirSync(d, { recursive: true });
    writeFileSync(`${d}/ext.cnf`, ext);
    openssl("req", ...ec, "-subj", `/CN=${cn}`, "-keyout", `${d}/tls.key`, "-out", `${d}/tls.csr`);
    openssl(
      "x509",
      "-req",
      "-in",
      `${d}/tls.csr`,
      "-CA",
      `${ca}/ca.crt`,
      "-CAkey",
      `${ca}/ca.key`,
      "-CAcreateserial",
      "-CAserial",
      `${ca}/ca.srl`,
      "-days",
      "1",
      "-extfile",
      `${d}/ext.cnf`,
      "-out",
      `${d}/tls.crt`,
    );
    writeFileSync(`${d}/ca.crt`, caPem);
  }
  return caPem;
}
