// Who may hold the webhook's connections (issue 42, finding 3). The port takes reviews without
// credentials, so any address that reaches it could hold every connection idle and starve the
// apiserver (256 idle keep-alives answered 0 of 30 reviews). Each new connection is admitted by
// rank: the apiserver's configured CIDRs first, then addresses that sent a valid review lately,
// then everyone else — capped per address. When the total cap is reached, a newcomer takes an idle
// connection from an address ranked below it, or from an equal one holding more connections than
// it (fair share); a connection whose request is being answered is never taken.
import { BlockList, isIPv4, isIPv6 } from "node:net";
import type { Clock } from "../shared/clock.ts";

export interface GateLimits {
  /** Open connections at most, over all addresses. */
  maxConnections: number;
  /** Open connections at most from one address of rank 0 (no valid review lately, not configured). */
  maxConnectionsPerAddress: number;
  /** The apiserver's source CIDRs: never capped per address, never evicted. */
  trustedCidrs: readonly string[];
  /** An address that sent a valid review keeps rank 1 this long. */
  reviewTrustMs: number;
}

export interface GateConn {
  readonly address: string;
  /** A complete request is being answered: never evicted. */
  busy: boolean;
  /** When it last finished an answer or opened (clock ms): the longest idle goes first. */
  lastActive: number;
  /** Closes the socket (the gate has already forgotten it). */
  readonly close: () => void;
}

/** Parses CIDRs ("10.0.0.0/16", "fd00::/8", or a bare address) into a BlockList; throws on bad ones. */
export function cidrList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const [addr = "", bits] = c.trim().split("/");
    const type = isIPv4(addr) ? "ipv4" : isIPv6(addr) ? "ipv6" : undefined;
    const max = type === "ipv4" ? 32 : 128;
    const prefix = bits === undefined ? max : Number(bits);
    if (type === undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > max)
      throw new Error(`not a CIDR: ${JSON.stringify(c)}`);
    list.addSubnet(addr, prefix, type);
  }
  return list;
}

/** "::ffff:10.0.0.1" (a v4 peer on a dual-stack socket) → "10.0.0.1". */
function plainAddress(address: string): string {
  return address.startsWith("::ffff:") && isIPv4(address.slice(7)) ? address.slice(7) : address;
}

export class ConnectionGate {
  readonly #limits: GateLimits;
  readonly #clock: Clock;
  readonly #trusted: BlockList;
  readonly #byAddress = new Map<string, Set<GateConn>>();
  /** Address → when it last sent a valid review. */
  readonly #reviewed = new Map<string, number>();
  #total = 0;
  /** Connections refused and evicted so far (metrics, tests). */
  refused = 0;
  evicted = 0;

  constructor(limits: GateLimits, clock: Clock) {
    this.#limits = limits;
    this.#clock = clock;
    this.#trusted = cidrList(limits.trustedCidrs);
  }

  get open(): number {
    return this.#total;
  }

  /** 2: a configured apiserver CIDR; 1: sent a valid review lately; 0: anyone else. */
  rank(address: string): number {
    const a = plainAddress(address);
    if (this.#trusted.check(a, isIPv6(a) ? "ipv6" : "ipv4")) return 2;
    const at = this.#reviewed.get(a);
    if (at !== undefined && this.#clock.now() - at <= this.#limits.reviewTrustMs) return 1;
    if (at !== undefined) this.#reviewed.delete(a);
    return 0;
  }

  /** Records a valid review from `address` (it gains rank 1 for reviewTrustMs). */
  reviewed(address: string): void {
    const a = plainAddress(address);
    this.#reviewed.delete(a); // re-inserted last: the map stays ordered oldest first
    this.#reviewed.set(a, this.#clock.now());
    // Bounded: forget the oldest beyond as many addresses as connections.
    for (const old of this.#reviewed.keys()) {
      if (this.#reviewed.size <= this.#limits.maxConnections) break;
      this.#reviewed.delete(old);
    }
  }

  /** A new connection from `address`: its handle, or undefined (close it at once). */
  admit(address: string, close: () => void): GateConn | undefined {
    const a = plainAddress(address);
    const rank = this.rank(a);
    const mine = this.#byAddress.get(a)?.size ?? 0;
    const victim = this.#total >= this.#limits.maxConnections ? this.#victim(a, rank, mine) : undefined;
    const full = this.#total >= this.#limits.maxConnections && !victim;
    if ((rank === 0 && mine >= this.#limits.maxConnectionsPerAddress) || full) {
      this.refused++;
      return undefined;
    }
    if (victim) {
      this.release(victim);
      this.evicted++;
      victim.close();
    }
    const conn: GateConn = { address: a, busy: false, lastActive: this.#clock.now(), close };
    let set = this.#byAddress.get(a);
    if (!set) this.#byAddress.set(a, (set = new Set()));
    set.add(conn);
    this.#total++;
    return conn;
  }

  /** The connection closed (idempotent). */
  release(conn: GateConn): void {
    const set = this.#byAddress.get(conn.address);
    if (!set?.delete(conn)) return;
    this.#total--;
    if (set.size === 0) this.#byAddress.delete(conn.address);
  }

  /** The idle connection a newcomer of `rank` holding `mine` may take, if any. */
  #victim(address: string, rank: number, mine: number): GateConn | undefined {
    let best: { conn: GateConn; rank: number; count: number } | undefined;
    for (const [other, set] of this.#byAddress) {
      if (other === address) continue;
      const r = this.rank(other);
      if (r === 2 || r > rank || (r === rank && set.size <= mine + 1)) continue;
      let idle: GateConn | undefined;
      for (const c of set) if (!c.busy && (!idle || c.lastActive < idle.lastActive)) idle = c;
      if (!idle) continue;
      // Lowest rank first, then the address holding the most, then the longest idle.
      const better =
        !best ||
        r < best.rank ||
        (r === best.rank && set.size > best.count) ||
        (r === best.rank && set.size === best.count && idle.lastActive < best.conn.lastActive);
      if (better) best = { conn: idle, rank: r, count: set.size };
    }
    return best?.conn;
  }
}
