import http from 'node:http';
import pino from 'pino';
import { logger } from '../../../core/logger';

/**
 * Secret watch (reliability issue item 2): every secret the suite creates is searched for in every
 * log line and every response body of the suite, and must appear nowhere.
 *
 * What is watched, while installed:
 *  - every line Weft's pino logger writes (the API and the worker run in this process), at every
 *    level: the logger is turned up to trace while watching, and lines below the configured level
 *    are scanned but not printed, so a secret in a debug line is found even under LOG_LEVEL=error;
 *  - everything else written to stdout and stderr (console, the Temporal SDK's logger);
 *  - every response the in-process Weft API sends (recognised by its X-Request-Id header), body and
 *    headers, whichever client asked (fetch helpers, raw sockets, MCP clients).
 *
 * What is a secret: values registered with registerSecret, plus every API key the suite uses
 * (taken from the Authorization header of each request the API answers) and every key the API
 * creates (taken from the POST /api/v1/api-keys answer, the one place it is meant to appear: that
 * one field is left out of the scan). A secret is searched for whole and by its last 16
 * characters (so a truncated echo is found too), raw and percent-encoded.
 *
 * Texts are scanned as they arrive, against the secrets known at that moment: register a secret
 * before it is used. Hits are kept with where they were found and an excerpt in which the secret
 * is masked, so a failure report never prints a secret.
 */

export interface Hit {
  secret: string;
  where: string;
  excerpt: string;
}

const FRAGMENT = 16;
const MIN_SECRET_LENGTH = 16;
const API_KEY = /^Bearer\s+(weft_sk_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{43})\s*$/i;

interface Needle {
  text: string;
  /** The secret this needle is a form of (hits are counted once per secret and text). */
  secret: string;
  label: string;
}

const secrets = new Map<string, string>();
/** Needles by their first FRAGMENT characters: a text is scanned with one window lookup per position. */
const needlesByHead = new Map<string, Needle[]>();
const hits: Hit[] = [];
const counts = { logLines: 0, outputWrites: 0, responses: 0 };
let installed: (() => void) | undefined;

function addNeedle(text: string, secret: string, label: string): void {
  const head = text.slice(0, FRAGMENT);
  const list = needlesByHead.get(head) ?? [];
  if (!list.some((needle) => needle.text === text)) list.push({ text, secret, label });
  needlesByHead.set(head, list);
}

/** Registers a value that must never appear in a log line or a response body. */
export function registerSecret(value: string, label: string): void {
  if (value.length < MIN_SECRET_LENGTH) throw new Error(`secret-watch: "${label}" is shorter than ${MIN_SECRET_LENGTH} characters; use a longer test secret so a hit cannot be a coincidence.`);
  if (secrets.has(value)) return;
  secrets.set(value, label);
  const forms = new Set([value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]);
  for (const form of forms) addNeedle(form, value, label);
  addNeedle(value.slice(-FRAGMENT), value, `${label} (its last ${FRAGMENT} characters)`);
}

/** Forgets a secret (the watch's own canaries, once found). */
export function unregisterSecret(value: string): void {
  secrets.delete(value);
  for (const [head, needles] of needlesByHead) {
    const kept = needles.filter((needle) => needle.secret !== value);
    if (kept.length) needlesByHead.set(head, kept);
    else needlesByHead.delete(head);
  }
}

/** Registers every string value of a config (e.g. an installation's headers and password). */
export function registerSecretsIn(value: unknown, label: string): void {
  if (typeof value === 'string') registerSecret(value, label);
  else if (value && typeof value === 'object') for (const [name, inner] of Object.entries(value)) registerSecretsIn(inner, `${label}.${name}`);
}

/** The text with every known secret, whole or its tail, replaced by a marker. */
function mask(text: string): string {
  let masked = text;
  for (const [value] of secrets) {
    for (const form of [value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)]) masked = masked.split(form).join('«secret»');
    masked = masked.split(value.slice(-FRAGMENT)).join('«secret tail»');
  }
  return masked;
}

/** Scans one text and records each secret found in it once. */
export function scan(text: string, where: string | (() => string)): void {
  if (!text || !needlesByHead.size) return;
  const found = new Set<string>();
  for (let i = 0; i + FRAGMENT <= text.length; i++) {
    const needles = needlesByHead.get(text.slice(i, i + FRAGMENT));
    if (!needles) continue;
    for (const needle of needles) {
      if (!found.has(needle.secret) && text.startsWith(needle.text, i)) {
        found.add(needle.secret);
        report(text, needle, where);
      }
    }
  }
}

function report(text: string, needle: Needle, where: string | (() => string)): void {
  // The whole text is masked before an excerpt is cut from it, so no piece of a secret survives at its edges.
  const masked = mask(text);
  const at = Math.max(0, masked.indexOf('«secret'));
  hits.push({ secret: needle.label, where: typeof where === 'string' ? where : where(), excerpt: masked.slice(Math.max(0, at - 120), at + 160).replace(/\s+/g, ' ') });
}

/** The pino destination the logger writes to (a SonicBoom on fd 1 or 2, not process.stdout). */
function loggerStream(): { write(line: string): unknown } {
  return (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym];
}

function levelOf(line: string): number {
  const match = /"level":(\d+)/.exec(line);
  return match ? Number(match[1]) : Infinity;
}

/** Scans what the API sends, per response: body chunks are collected until end(). */
function watchResponses(): () => void {
  const proto = http.ServerResponse.prototype;
  const originalWrite = proto.write;
  const originalEnd = proto.end;
  const bodies = new WeakMap<http.ServerResponse, Buffer[]>();
  const collect = (res: http.ServerResponse, chunk: unknown, encoding: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buffer = Buffer.isBuffer(chunk)
      ? chunk
      : typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk as Uint8Array);
    const list = bodies.get(res) ?? [];
    list.push(buffer);
    bodies.set(res, list);
  };
  proto.write = function write(this: http.ServerResponse, chunk: unknown, ...rest: unknown[]) {
    collect(this, chunk, rest[0]);
    return (originalWrite as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof proto.write;
  proto.end = function end(this: http.ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    collect(this, chunk, rest[0]);
    try {
      inspectResponse(this, Buffer.concat(bodies.get(this) ?? []).toString('utf8'));
    } catch (error) {
      hits.push({ secret: '(secret-watch itself)', where: 'response inspection', excerpt: String(error) });
    }
    bodies.delete(this);
    return (originalEnd as (...args: unknown[]) => http.ServerResponse).call(this, chunk, ...rest);
  } as typeof proto.end;
  return () => {
    proto.write = originalWrite;
    proto.end = originalEnd;
  };
}

function inspectResponse(res: http.ServerResponse, body: string): void {
  // Only Weft answers: it sets X-Request-Id on every response; fixture servers do not.
  if (!res.getHeader('x-request-id')) return;
  const req = res.req as http.IncomingMessage | undefined;
  const method = req?.method ?? '?';
  const path = (req?.url ?? '?').split('?')[0];
  const bearer = API_KEY.exec(String(req?.headers.authorization ?? ''))?.[1];
  if (bearer) registerSecret(bearer, 'API key used by the suite');
  counts.responses++;
  let scanned = body;
  // The one place a key's secret belongs: the answer that creates it (and its idempotent replay).
  if (method === 'POST' && path === '/api/v1/api-keys' && res.statusCode === 201) {
    const parsed = JSON.parse(body) as { key?: { secret?: string } };
    if (typeof parsed.key?.secret === 'string') {
      registerSecret(parsed.key.secret, 'API key created through POST /api/v1/api-keys');
      delete parsed.key.secret;
      scanned = JSON.stringify(parsed);
    }
  }
  const where = `response to ${method} ${mask(path)} (${res.statusCode})`;
  scan(scanned, `${where} body`);
  scan(JSON.stringify(res.getHeaders()), `${where} headers`);
}

/**
 * Starts watching (idempotent). Returns nothing; stopWatching undoes every patch. The suite
 * installs it from root hooks (see installSuiteHooks), and single files may install it too.
 */
export function startWatching(): void {
  if (installed) return;
  const stream = loggerStream();
  const originalStreamWrite = stream.write;
  const originalLevel = logger.level;
  const printFrom = logger.levels.values[originalLevel] ?? 30;
  logger.level = 'trace';
  stream.write = function write(line: string) {
    counts.logLines++;
    scan(line, () => `log line ${mask(line).slice(0, 160)}`);
    return levelOf(line) >= printFrom ? originalStreamWrite.call(stream, line) : true;
  };
  const outputs = [process.stdout, process.stderr] as const;
  const originalOutputWrites = outputs.map((output) => output.write);
  outputs.forEach((output, index) => {
    const original = originalOutputWrites[index];
    output.write = function write(this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
      counts.outputWrites++;
      if (typeof chunk === 'string' || Buffer.isBuffer(chunk)) scan(String(chunk), `${index === 0 ? 'stdout' : 'stderr'} write`);
      return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof output.write;
  });
  const stopResponses = watchResponses();
  installed = () => {
    stream.write = originalStreamWrite;
    logger.level = originalLevel;
    outputs.forEach((output, index) => (output.write = originalOutputWrites[index]));
    stopResponses();
  };
}

export function stopWatching(): void {
  installed?.();
  installed = undefined;
}

export function secretHits(): Hit[] {
  return [...hits];
}

/** Removes and returns the hits of secrets whose label starts with `labelPrefix` (the watch's own canaries). */
export function takeHits(labelPrefix: string): Hit[] {
  const taken = hits.filter((hit) => hit.secret.startsWith(labelPrefix));
  for (const hit of taken) hits.splice(hits.indexOf(hit), 1);
  return taken;
}

export function watchCounts(): typeof counts & { secrets: number } {
  return { ...counts, secrets: secrets.size };
}

/** A readable list of hits (secrets masked), or '' when there are none. */
export function describeHits(list: Hit[] = hits): string {
  return list.map((hit) => `- ${hit.secret} in ${hit.where}: …${hit.excerpt}…`).join('\n');
}

let hooksInstalled = false;

/**
 * Root-level mocha hooks (called at a spec file's top level, they apply to the whole run): watch
 * from before the first test, and fail the run in a final "after all" hook when any secret was
 * found anywhere, listing every hit. Safe to call from several files.
 */
export function installSuiteHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  before(() => startWatching());
  after(function () {
    stopWatching();
    const found = secretHits();
    if (found.length) {
      throw new Error(`secret-watch: ${found.length} secret(s) found in logs or responses of the suite:\n${describeHits(found)}`);
    }
  });
}
