import dnsPromises from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import net from 'node:net';

/**
 * A deterministic network for the SSRF battery, in this process (the API and the worker run here):
 *
 *  - **Connection log.** Every outgoing TCP connection attempt (net.Socket#connect: undici, pg and
 *    everything else) is recorded with the host it was asked for and the address it resolved to,
 *    so a test can prove a private address was never even dialled, not only that a listener saw
 *    nothing.
 *  - **A public address that is local.** The network guard admits only public unicast addresses,
 *    so "a public upstream" needs one. FAKE_PUBLIC (unicast to the guard) is routed to 127.0.0.1
 *    on the same port, below the guard, the way a NAT would: the guard sees a public address, the
 *    packets reach a fixture on loopback. Nothing is ever sent to the real FAKE_PUBLIC.
 *  - **DNS answers.** Names under .weft-test.invalid resolve to the answers a test sets (each
 *    lookup takes the next answer, the last one repeats), through the system resolver's own entry
 *    point (dns.promises.lookup), so the guard's real resolution path is exercised. Other names
 *    (localhost from /etc/hosts included) resolve as usual.
 */

/** Unicast to ipaddr.js (what the guard uses), so it passes as public; routed to loopback here. */
export const FAKE_PUBLIC = '93.184.216.34';
export const TEST_DOMAIN = '.weft-test.invalid';

export interface ConnectAttempt {
  /** The host given to connect: a name or an address. */
  host: string;
  port: number;
  /** The addresses a name resolved to for this connection (empty for an address). */
  resolved: string[];
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type LookupFn = (hostname: string, options: Record<string, unknown>, callback: LookupCallback) => void;

const route = (address: string) => (address === FAKE_PUBLIC ? '127.0.0.1' : address);

export class FakeNetwork {
  readonly attempts: ConnectAttempt[] = [];
  readonly lookups: string[] = [];
  private answers = new Map<string, string[][]>();
  private restore: Array<() => void> = [];

  /** DNS answers for a name under TEST_DOMAIN, one per lookup in order (the last repeats). */
  resolve(name: string, ...answers: string[][]): this {
    if (!name.endsWith(TEST_DOMAIN)) throw new Error(`fake-network: only names under ${TEST_DOMAIN} are faked`);
    this.answers.set(name, answers);
    return this;
  }

  /** Attempts to one port (hosts and resolved addresses), e.g. a counting listener's. */
  attemptsTo(port: number): ConnectAttempt[] {
    return this.attempts.filter((attempt) => attempt.port === port);
  }

  clear(): void {
    this.attempts.length = 0;
    this.lookups.length = 0;
  }

  install(): this {
    if (this.restore.length) return this;
    const originalLookup = dnsPromises.lookup;
    const fakeLookup = (async (hostname: string, options?: unknown) => {
      const queue = this.answers.get(hostname);
      if (!queue) return (originalLookup as (h: string, o?: unknown) => Promise<unknown>)(hostname, options);
      this.lookups.push(hostname);
      const answer = queue.length > 1 ? queue.shift()! : queue[0] ?? [];
      if (!answer.length) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
      const entries = answer.map((address) => ({ address, family: net.isIP(address) }));
      const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
      return all ? entries : entries[0];
    }) as typeof dnsPromises.lookup;
    (dnsPromises as { lookup: typeof dnsPromises.lookup }).lookup = fakeLookup;
    this.restore.push(() => ((dnsPromises as { lookup: typeof dnsPromises.lookup }).lookup = originalLookup));

    const attempts = this.attempts;
    const proto = net.Socket.prototype;
    const originalConnect = proto.connect;
    proto.connect = function connect(this: net.Socket, ...args: unknown[]) {
      // net.connect passes its normalized [options, callback] array; pg calls connect(port, host).
      const normalized = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
      const first = normalized[0];
      if (first && typeof first === 'object') {
        const options = first as { host?: string; port?: number | string; path?: string; lookup?: LookupFn };
        if (options.path === undefined) {
          const attempt: ConnectAttempt = { host: options.host ?? 'localhost', port: Number(options.port), resolved: [] };
          attempts.push(attempt);
          if (options.host) options.host = route(options.host);
          const inner = options.lookup;
          if (inner) {
            // The guard's lookup answers (and vets) first; routing happens after it, like a NAT.
            options.lookup = (hostname, lookupOptions, callback) => inner(hostname, lookupOptions, (error, address, family) => {
              if (error) return callback(error, address, family);
              if (Array.isArray(address)) {
                attempt.resolved.push(...address.map((entry) => entry.address));
                return callback(null, address.map((entry) => ({ ...entry, address: route(entry.address) })));
              }
              attempt.resolved.push(address);
              return callback(null, route(address), family);
            });
          }
        }
      } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
        const host = typeof normalized[1] === 'string' ? normalized[1] : 'localhost';
        attempts.push({ host, port: Number(first), resolved: [] });
        if (typeof normalized[1] === 'string') normalized[1] = route(normalized[1]);
      }
      return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
    } as typeof proto.connect;
    this.restore.push(() => (proto.connect = originalConnect));
    return this;
  }

  uninstall(): void {
    for (const undo of this.restore.reverse()) undo();
    this.restore = [];
  }
}
