import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { PermissionError, UpstreamError } from '../core/errors';

/**
 * Where capabilities may connect: one resolution of a host, and the check of every address it
 * answered. http_dataset and postgres_table both connect to exactly the addresses returned here,
 * so a DNS answer that changes afterwards (DNS rebinding) cannot steer them elsewhere.
 */

/** Resolves a host name to all its addresses; replaceable so tests can simulate DNS answers. */
export type HostLookup = (hostname: string) => Promise<string[]>;

const systemLookup: HostLookup = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** Only public unicast addresses: refuses loopback, private, link-local, unique-local, CGNAT, multicast, unspecified, reserved and the IPv4-embedding IPv6 ranges. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() turns an IPv4-mapped IPv6 address (::ffff:127.0.0.1) into the IPv4 address it reaches.
  return ipaddr.process(address).range() === 'unicast';
}

export function refuseAddresses(host: string, refused: string[]): PermissionError {
  return new PermissionError('address_refused', `${host} resolves to a non-public address (${refused.join(', ')}); the installation does not allow private networks.`, { host });
}

export interface VetPolicy {
  /** Allow loopback, private, link-local and other non-public addresses. */
  allowPrivateNetwork: boolean;
  /** Resolver to use instead of the system's (tests). */
  lookup?: HostLookup;
}

/**
 * Resolves a host once (an IP address, brackets allowed, stands for itself) and vets the answer:
 * every address must be public unless the policy allows private networks. Throws
 * UpstreamError('upstream_unavailable') when the host does not resolve and
 * PermissionError('address_refused') when any address is refused; returns every address otherwise.
 */
export async function resolveAndVet(host: string, policy: VetPolicy): Promise<string[]> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const unresolvable = () => new UpstreamError('upstream_unavailable', `Could not resolve the host ${bare}.`, { host: bare });
  let addresses: string[];
  if (ipaddr.isValid(bare)) {
    addresses = [bare];
  } else {
    try {
      addresses = (await (policy.lookup ?? systemLookup)(bare)).filter((address) => isIP(address) !== 0);
    } catch {
      throw unresolvable();
    }
  }
  if (!addresses.length) throw unresolvable();
  if (!policy.allowPrivateNetwork) {
    const refused = addresses.filter((address) => !isPublicAddress(address));
    if (refused.length) throw refuseAddresses(bare, refused);
  }
  return addresses;
}
