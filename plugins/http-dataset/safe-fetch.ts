import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { PermissionError, UnavailableError } from '../../core/errors';
import type { InstallationContext } from '../capability';
import { DEFAULT_TIMEOUT_MS, HttpDatasetSettings } from './definition';

/** Everything a request needs from the installation. `headers` carry credentials: never log them or put them in errors. */
export interface HttpConnection {
  baseUrl: string;
  headers: Record<string, string>;
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  /** Resolves a host name to all its addresses; replaceable so tests can simulate DNS answers. */
  lookup?: (hostname: string) => Promise<string[]>;
}

export interface HttpRequest {
  url: URL;
  method: 'GET' | 'POST';
  body?: Record<string, unknown>;
}

export interface HttpResponse {
  status: number;
  /** Final URL after redirects, against which relative next links resolve. */
  url: URL;
  text: string;
}

const MAX_REDIRECTS = 5;
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export function connectionFor(installation: InstallationContext): HttpConnection {
  const settings = installation.settings as unknown as HttpDatasetSettings;
  return {
    baseUrl: settings.baseUrl,
    headers: (installation.credentials.headers as Record<string, string> | undefined) ?? {},
    allowPrivateNetwork: settings.allowPrivateNetwork === true,
    timeoutMs: settings.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
}

/** The URL without query string or credentials: safe for messages (query strings often carry API keys). */
export function displayUrl(url: URL | string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(an invalid URL)';
  }
}

/** Same origin as baseUrl, and a path equal to or below its path (/v1 admits /v1 and /v1/x, not /v10). */
export function isUnderBase(url: URL | string, baseUrl: string): boolean {
  let target: URL;
  let base: URL;
  try {
    target = new URL(url);
    base = new URL(baseUrl);
  } catch {
    return false;
  }
  if (target.origin !== base.origin || target.username || target.password) return false;
  const prefix = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  return target.pathname === base.pathname || target.pathname.startsWith(prefix);
}

/** Only public unicast addresses: refuses loopback, private, link-local, unique-local, CGNAT, multicast, unspecified, reserved and the IPv4-embedding IPv6 ranges. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // process() turns an IPv4-mapped IPv6 address (::ffff:127.0.0.1) into the IPv4 address it reaches.
  return ipaddr.process(address).range() === 'unicast';
}

async function resolveAll(connection: HttpConnection, hostname: string): Promise<string[]> {
  const bare = hostname.replace(/^\[(.*)\]$/, '$1');
  if (ipaddr.isValid(bare)) return [bare];
  try {
    if (connection.lookup) return await connection.lookup(bare);
    return (await dnsLookup(bare, { all: true, verbatim: true })).map((entry) => entry.address);
  } catch {
    throw new UnavailableError('upstream_unavailable', `Could not resolve the host ${bare}.`, { host: bare });
  }
}

/**
 * Checks a URL before contacting it: http(s) only, under the installation's baseUrl, and (unless
 * the installation allows private networks) every address the host resolves to is public, so a
 * DNS answer cannot steer a request into an internal network.
 */
async function assertAllowed(connection: HttpConnection, url: URL): Promise<void> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PermissionError('scheme_refused', `Only http and https URLs are fetched, not ${url.protocol}.`);
  }
  if (!isUnderBase(url, connection.baseUrl)) {
    throw new PermissionError('url_outside_base', `${displayUrl(url)} is not under the installation's base URL ${displayUrl(connection.baseUrl)}.`);
  }
  if (connection.allowPrivateNetwork) return;
  const refused = (await resolveAll(connection, url.hostname)).filter((address) => !isPublicAddress(address));
  if (refused.length) {
    throw new PermissionError('address_refused', `${url.hostname} resolves to a non-public address (${refused.join(', ')}); the installation does not allow private networks.`, { host: url.hostname });
  }
}

async function readCapped(response: Response): Promise<string> {
  if (!response.body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      throw new UnavailableError('upstream_response_too_large', `The remote response is larger than ${MAX_RESPONSE_BYTES} bytes.`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function unavailable(url: URL, error: unknown, timeoutMs: number): UnavailableError {
  const name = (error as Error).name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new UnavailableError('upstream_unavailable', `${displayUrl(url)} did not answer within ${timeoutMs} ms.`, { reason: 'timeout' });
  }
  // Only the low-level error code: undici messages can echo request details.
  const code = ((error as { cause?: { code?: string } }).cause?.code) ?? 'network_error';
  return new UnavailableError('upstream_unavailable', `Could not reach ${displayUrl(url)} (${code}).`, { reason: code });
}

/**
 * One request with redirects followed by hand (at most 5), each hop re-checked by assertAllowed.
 * Returns any final status; callers decide what a non-2xx status means. Address checks happen
 * before each hop; fetch resolves the name again to connect, so a DNS answer that changes within
 * that instant is not covered.
 */
export async function safeFetch(connection: HttpConnection, request: HttpRequest): Promise<HttpResponse> {
  const signal = AbortSignal.timeout(connection.timeoutMs);
  let url = new URL(request.url);
  let method = request.method;
  let body = request.body;
  for (let hop = 0; ; hop++) {
    await assertAllowed(connection, url);
    const headers: Record<string, string> = { accept: 'application/json', ...connection.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual', signal });
    } catch (error) {
      throw unavailable(url, error, connection.timeoutMs);
    }
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || !location) {
      try {
        return { status: response.status, url, text: await readCapped(response) };
      } catch (error) {
        if (error instanceof UnavailableError) throw error;
        throw unavailable(url, error, connection.timeoutMs);
      }
    }
    await response.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new UnavailableError('too_many_redirects', `${displayUrl(request.url)} redirected more than ${MAX_REDIRECTS} times.`);
    url = new URL(location, url);
    // As browsers do: 303 (and 301/302 after a POST) continue as a GET without body; 307/308 repeat the request.
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
  }
}

/** A 2xx JSON response body, or an UnavailableError naming the status. */
export async function fetchJson(connection: HttpConnection, request: HttpRequest): Promise<{ url: URL; status: number; body: unknown }> {
  const response = await safeFetch(connection, request);
  if (response.status < 200 || response.status > 299) {
    throw new UnavailableError('upstream_unavailable', `${displayUrl(response.url)} answered HTTP ${response.status}.`, { status: response.status });
  }
  try {
    return { url: response.url, status: response.status, body: JSON.parse(response.text) };
  } catch {
    throw new UnavailableError('upstream_invalid_response', `${displayUrl(response.url)} did not answer with JSON.`, { status: response.status });
  }
}
