import type { LookupAddress } from 'node:dns';
import { isIP, LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, Dispatcher, request as undiciRequest } from 'undici';
import { DomainError, PermissionError, UpstreamError } from '../../core/errors';
import type { InstallationContext } from '../capability';
import { HostLookup, isPublicAddress, refuseAddresses, resolveAndVet } from '../network-policy';
import { DEFAULT_TIMEOUT_MS, HttpDatasetCredentials, HttpDatasetSettings } from './definition';

/**
 * Everything a request needs from the installation. `headers` and `queryParameters` carry
 * credentials: never log them or put them in errors, check results or continuations.
 */
export interface HttpConnection {
  baseUrl: string;
  headers: Record<string, string>;
  /** Query parameters set on every request (each hop), and kept out of every URL this code stores or shows. */
  queryParameters?: Record<string, string>;
  allowPrivateNetwork: boolean;
  timeoutMs: number;
  /**
   * Resolves a host name to all its addresses; replaceable so tests can simulate DNS answers. It is
   * called once per new connection, and the connection goes to the addresses it answered.
   */
  lookup?: HostLookup;
}

export interface HttpRequest {
  url: URL;
  method: 'GET' | 'POST';
  body?: Record<string, unknown>;
}

export interface HttpResponse {
  status: number;
  /** Final URL after redirects, against which relative next links resolve; without the installation's queryParameters. */
  url: URL;
  text: string;
}

export interface FetchOptions {
  /** Aborts the request when the caller's overall deadline passes (reported with reason "deadline"). */
  deadline?: AbortSignal;
  /** The caller's abort (a canceled run): the request in flight stops and the call rejects with its reason. */
  signal?: AbortSignal;
  /** Called every HEARTBEAT_EVERY_MS while the request is in flight: a slow answer is not a dead caller. */
  heartbeat?: () => void;
}

/** How often a request in flight calls FetchOptions.heartbeat (Temporal throttles what it sends). */
export const HEARTBEAT_EVERY_MS = 1_000;

/** The caller's reason for aborting, thrown as it is (a Temporal CancelledFailure for a canceled activity). */
function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The request was aborted.', 'AbortError');
}

const MAX_REDIRECTS = 5;
const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export function connectionFor(installation: InstallationContext): HttpConnection {
  const settings = installation.settings as unknown as HttpDatasetSettings;
  const credentials = installation.credentials as HttpDatasetCredentials;
  return {
    baseUrl: settings.baseUrl,
    headers: credentials.headers ?? {},
    queryParameters: credentials.queryParameters ?? {},
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

/**
 * Parses a URL that came from the remote side (a redirect Location, a next link). A malformed one
 * is the remote API's fault: an upstream_invalid_response naming only where it came from, never
 * the text itself (it may echo credentials or query strings).
 */
export function parseRemoteUrl(text: string, base: URL, what: string): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new UpstreamError('upstream_invalid_response', `${displayUrl(base)} answered with ${what} that is not a valid URL.`);
  }
}

/** The query string without the pairs named in `names`, every other pair kept byte for byte (signed next links stay valid). */
function searchWithout(search: string, names: Set<string>): string {
  const kept = search.replace(/^\?/, '').split('&').filter((pair) => {
    if (pair === '') return false;
    const rawName = pair.split('=', 1)[0].replace(/\+/g, ' ');
    let name = rawName;
    try {
      name = decodeURIComponent(rawName);
    } catch {
      // A malformed escape is not one of our names, which are sent encoded.
    }
    return !names.has(name);
  });
  return kept.length ? `?${kept.join('&')}` : '';
}

/** `url` without the installation's query parameters: the form that may be stored, shown or digested. */
export function withoutInstallationParameters(connection: HttpConnection, url: URL): URL {
  const names = new Set(Object.keys(connection.queryParameters ?? {}));
  if (!names.size || ![...names].some((name) => url.searchParams.has(name))) return url;
  const stripped = new URL(url);
  stripped.search = searchWithout(url.search, names);
  return stripped;
}

/** `url` with the installation's query parameters added once each (after removing echoed ones): the form that is sent. */
function withInstallationParameters(connection: HttpConnection, url: URL): URL {
  const entries = Object.entries(connection.queryParameters ?? {});
  if (!entries.length) return url;
  const sent = new URL(url);
  const rest = searchWithout(url.search, new Set(entries.map(([name]) => name)));
  const added = new URLSearchParams(entries).toString();
  sent.search = rest ? `${rest}&${added}` : `?${added}`;
  return sent;
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
  // Encoded slashes or backslashes, or dot segments, could climb out of the base path on servers that decode them.
  if (/%2f|%5c|\\/i.test(target.pathname) || /(^|\/)(\.|%2e){1,2}(\/|$)/i.test(target.pathname)) return false;
  const prefix = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
  return target.pathname === base.pathname || target.pathname.startsWith(prefix);
}

/**
 * The `lookup` the connection's sockets use: the one resolution of the host, checked before the
 * socket connects to it. Resolving and checking in the same step leaves no window in which a DNS
 * answer that changes (DNS rebinding) can steer the connection to an address that was not
 * checked. TLS still verifies the certificate against the host name, which the socket keeps.
 */
function pinnedLookup(connection: HttpConnection): LookupFunction {
  return (hostname, options, callback) => {
    resolveAndVet(hostname, connection).then(
      (resolved) => {
        const addresses: LookupAddress[] = resolved.map((address) => ({ address, family: isIP(address) })).filter((entry) => entry.family !== 0);
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((entry) => entry.family === options.family) : addresses;
        if (!wanted.length) {
          callback(new UpstreamError('upstream_unavailable', `${hostname} has no IPv${String(options.family)} address.`, { host: hostname }), '');
        } else if (options.all) {
          callback(null, wanted);
        } else {
          callback(null, wanted[0].address, wanted[0].family);
        }
      },
      (error: Error) => callback(error, ''),
    );
  };
}

/**
 * Checks a URL before contacting it: http(s) only, and under the installation's baseUrl. A host
 * given as an IP address is checked here (no lookup happens for it); a host name is checked when
 * it is resolved to connect (pinnedLookup).
 */
function assertAllowed(connection: HttpConnection, url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PermissionError('scheme_refused', `Only http and https URLs are fetched, not ${url.protocol}.`);
  }
  if (!isUnderBase(url, connection.baseUrl)) {
    throw new PermissionError('url_outside_base', `${displayUrl(url)} is not under the installation's base URL ${displayUrl(connection.baseUrl)}.`);
  }
  const bare = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!connection.allowPrivateNetwork && ipaddr.isValid(bare) && !isPublicAddress(bare)) throw refuseAddresses(bare, [bare]);
}

async function readCapped(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    size += buffer.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw new UpstreamError('upstream_response_too_large', `The remote response is larger than ${MAX_RESPONSE_BYTES} bytes.`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function unavailable(url: URL, error: unknown, timeoutMs: number, deadline?: AbortSignal): DomainError {
  // Our own errors, such as a refused address or an unresolvable host raised from pinnedLookup.
  if (error instanceof DomainError) return error;
  if (deadline?.aborted) {
    return new UpstreamError('upstream_unavailable', `${displayUrl(url)} did not answer before the deadline of the read.`, { reason: 'deadline' });
  }
  const name = (error as Error).name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new UpstreamError('upstream_unavailable', `${displayUrl(url)} did not answer within ${timeoutMs} ms.`, { reason: 'timeout' });
  }
  // Only the low-level error code: undici messages can echo request details.
  const { code, cause } = error as { code?: unknown; cause?: { code?: unknown } };
  const reason = [cause?.code, code].find((value): value is string => typeof value === 'string' && /^[A-Za-z0-9_]+$/.test(value)) ?? 'network_error';
  return new UpstreamError('upstream_unavailable', `Could not reach ${displayUrl(url)} (${reason}).`, { reason });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * One request with redirects followed by hand (at most 5), each hop re-checked by assertAllowed.
 * Returns any final status; callers decide what a non-2xx status means. Every connection goes
 * through its own undici Agent whose lookup resolves and vets the host in one step, so the socket
 * reaches exactly the address that was checked; the agent (and its sockets) closes on return.
 */
export async function safeFetch(connection: HttpConnection, request: HttpRequest, options: FetchOptions = {}): Promise<HttpResponse> {
  const { deadline, signal: aborted, heartbeat } = options;
  if (aborted?.aborted) throw abortReason(aborted);
  const timeout = AbortSignal.timeout(connection.timeoutMs);
  const signal = AbortSignal.any([timeout, ...(deadline ? [deadline] : []), ...(aborted ? [aborted] : [])]);
  const beat = heartbeat && setInterval(heartbeat, HEARTBEAT_EVERY_MS);
  const agent = new Agent({ connect: { lookup: pinnedLookup(connection) } });
  // Tracked without the installation's query parameters (they are added to each hop as it is sent),
  // so the URL returned, shown in errors or resolved against never carries them.
  let url = withoutInstallationParameters(connection, new URL(request.url));
  let method = request.method;
  let body = request.body;
  // Failures after the caller aborted are the abort, not a remote failure to retry.
  const failure = (error: unknown) => (aborted?.aborted ? abortReason(aborted) : unavailable(url, error, connection.timeoutMs, deadline));
  try {
    for (let hop = 0; ; hop++) {
      assertAllowed(connection, url);
      const headers: Record<string, string> = { accept: 'application/json', ...connection.headers };
      if (body !== undefined) headers['content-type'] = 'application/json';
      let response: Dispatcher.ResponseData;
      try {
        const sent = withInstallationParameters(connection, url);
        response = await undiciRequest(sent, { dispatcher: agent, method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
      } catch (error) {
        throw failure(error);
      }
      const location = headerValue(response.headers.location);
      if (!REDIRECT_STATUSES.has(response.statusCode) || !location) {
        try {
          return { status: response.statusCode, url, text: await readCapped(response.body) };
        } catch (error) {
          throw failure(error);
        }
      }
      await response.body.dump().catch(() => undefined);
      if (hop >= MAX_REDIRECTS) throw new UpstreamError('too_many_redirects', `${displayUrl(request.url)} redirected more than ${MAX_REDIRECTS} times.`);
      url = withoutInstallationParameters(connection, parseRemoteUrl(location, url, 'a redirect Location'));
      // As browsers do: 303 (and 301/302 after a POST) continue as a GET without body; 307/308 repeat the request.
      if (response.statusCode === 303 || ((response.statusCode === 301 || response.statusCode === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
      }
    }
  } finally {
    if (beat) clearInterval(beat);
    await agent.destroy().catch(() => undefined);
  }
}

/** A 2xx JSON response body, or an UpstreamError naming the status. */
export async function fetchJson(connection: HttpConnection, request: HttpRequest, options: FetchOptions = {}): Promise<{ url: URL; status: number; body: unknown }> {
  const response = await safeFetch(connection, request, options);
  if (response.status < 200 || response.status > 299) {
    throw new UpstreamError('upstream_unavailable', `${displayUrl(response.url)} answered HTTP ${response.status}.`, { status: response.status });
  }
  try {
    return { url: response.url, status: response.status, body: JSON.parse(response.text) };
  } catch {
    throw new UpstreamError('upstream_invalid_response', `${displayUrl(response.url)} did not answer with JSON.`, { status: response.status });
  }
}
