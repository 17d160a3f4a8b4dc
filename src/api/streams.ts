// Caps on requests the API holds open (the dashboard's event stream, the spot policies' long
// poll): each costs a socket and memory for as long as the client wants, so a viewer could open
// them without limit (issue 32: 3,000 streams → +50 MB; ~20,600 hit core's fd limit). Counted per
// caller — the request's identity (a static token, an OIDC user, a proxy user; issue 42: keyed on
// the Authorization header, every cookie and proxy user shared one bucket) —, per client address
// and in total; beyond any cap the request gets 429.
import type { FastifyReply, FastifyRequest } from "fastify";
import { tokenFingerprint } from "./auth.ts";

/** Whose streams a request's count against: its identity, else its bearer's fingerprint. */
export const callerKey = (req: FastifyRequest): string =>
  req.identity
    ? `${req.identity.source}:${req.identity.subject}`
    : `bearer:${tokenFingerprint(req.headers.authorization)}`;

export interface StreamCaps {
  /** Open at once by one caller: one identity (every client of a shared viewer token counts). */
  perToken: number;
  /** Open at once from one client address (an ingress or SNAT is one address for many). */
  perAddress: number;
  /** Open at once in this core process. */
  total: number;
}

/** The dashboard's event streams: one per open dashboard tab. */
export const DEFAULT_SSE_CAPS: StreamCaps = Object.freeze({ perToken: 500, perAddress: 250, total: 1000 });
/** The spot policies' long polls: one per webhook replica. */
export const DEFAULT_WATCH_CAPS: StreamCaps = Object.freeze({ perToken: 100, perAddress: 50, total: 200 });

export class StreamLimits {
  readonly #what: string;
  readonly #caps: StreamCaps;
  #total = 0;
  readonly #byToken = new Map<string, number>();
  readonly #byAddress = new Map<string, number>();

  constructor(what: string, caps: StreamCaps) {
    this.#what = what;
    this.#caps = caps;
  }

  get open(): number {
    return this.#total;
  }

  /** A release function (call it once, when the stream ends), or why the stream is refused. */
  acquire(token: string, address: string): { release: () => void } | { refused: string } {
    const byToken = this.#byToken.get(token) ?? 0;
    const byAddress = this.#byAddress.get(address) ?? 0;
    const what = this.#what;
    if (this.#total >= this.#caps.total)
      return {
        refused: `too many open ${what} (${this.#total}, at most ${this.#caps.total}); try again later`,
      };
    if (byAddress >= this.#caps.perAddress)
      return {
        refused: `too many open ${what} from this address (${byAddress}, at most ${this.#caps.perAddress})`,
      };
    if (byToken >= this.#caps.perToken)
      return {
        refused: `too many open ${what} by this caller (${byToken}, at most ${this.#caps.perToken})`,
      };
    this.#total++;
    this.#byToken.set(token, byToken + 1);
    this.#byAddress.set(address, byAddress + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#total--;
        this.#down(this.#byToken, token);
        this.#down(this.#byAddress, address);
      },
    };
  }

  #down(map: Map<string, number>, key: string): void {
    const n = (map.get(key) ?? 1) - 1;
    if (n <= 0) map.delete(key);
    else map.set(key, n);
  }

  /**
   * Takes a slot for the request, or answers 429 (the connection closed, so a refused client holds
   * no socket) and returns undefined.
   */
  async admit(req: FastifyRequest, reply: FastifyReply): Promise<(() => void) | undefined> {
    const slot = this.acquire(callerKey(req), req.socket.remoteAddress ?? "");
    if ("release" in slot) return slot.release;
    await reply
      .code(429)
      .header("retry-after", "10")
      .header("connection", "close")
      .send({ error: "too_many_streams", message: slot.refused });
    return undefined;
  }
}
