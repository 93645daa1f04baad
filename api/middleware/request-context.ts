import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { BadRequestError } from '../../core/errors';
import { logger, writeInfoLine } from '../../core/logger';
import { looksLikeApiKey } from '../../services/tenancy/api-keys';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Request lines are built here from fixed fields that never hold a secret (the path with a key in
 * it is withheld below), so they skip the root logger's redaction pass, a cost on every request;
 * a success's line is written from its fields serialized here (writeInfoLine).
 */
const requestLog = logger.child({}, { redact: [] });
const CREDENTIAL_PARAMS = new Set(['api_key', 'apikey', 'api-key', 'token', 'access_token', 'authorization', 'bearer']);

/** A path with an API key in it (percent-encoded or not): refused, and never written to the logs. */
function pathCarriesKey(path: string): boolean {
  if (!path.includes('%')) return looksLikeApiKey(path);
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // Malformed escapes: check the raw text.
  }
  return looksLikeApiKey(path) || looksLikeApiKey(decoded);
}

/** The request's id: a sane incoming X-Request-Id, else a new one; set on the answer and the state. */
export function assignRequestId(ctx: Koa.Context): string {
  const incoming = ctx.get('X-Request-Id');
  const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
  ctx.state.requestId = requestId;
  ctx.set('X-Request-Id', requestId);
  return requestId;
}

/**
 * One structured log line per request, from `started` (process.hrtime.bigint()) until now. Logs
 * carry the path without its query string, so nothing sent in a URL reaches them.
 */
export function logRequest(ctx: Koa.Context, requestId: string, started: bigint): void {
  const principal = ctx.state.principal as { workspaceId?: string; apiKeyId?: string } | undefined;
  const path = pathCarriesKey(ctx.path) ? '[withheld: the path contained an API key]' : ctx.path;
  const durationMs = Number((process.hrtime.bigint() - started) / 1000n) / 1000;
  const errorCode = ctx.status >= 400 ? (ctx.body as { code?: string } | undefined)?.code : undefined;
  if (ctx.status >= 500) {
    // A refusal with a code (a remote system failed: 502; billing not configured: 503) is a warning;
    // an answer without one (500) is Weft's own fault.
    const log = errorCode !== undefined && ctx.status !== 500 ? requestLog.warn.bind(requestLog) : requestLog.error.bind(requestLog);
    log({ requestId, method: ctx.method, path, status: ctx.status, durationMs, workspaceId: principal?.workspaceId, apiKeyId: principal?.apiKeyId, errorCode }, 'request');
  } else {
    // The same fields in the same order; the request id and method are plain tokens (REQUEST_ID, HTTP's method syntax).
    writeInfoLine(
      requestLog,
      `,"requestId":"${requestId}","method":"${ctx.method}","path":${JSON.stringify(path)},"status":${ctx.status},"durationMs":${durationMs}` +
        (principal?.workspaceId ? `,"workspaceId":${JSON.stringify(principal.workspaceId)},"apiKeyId":${JSON.stringify(principal.apiKeyId)}` : '') +
        (errorCode !== undefined ? `,"errorCode":${JSON.stringify(errorCode)}` : ''),
      'request',
    );
  }
}

const credentialInUrl = () => new BadRequestError('credential_in_url', 'API keys are accepted only in the Authorization: Bearer header, never in the URL. Treat a key sent in a URL as leaked: revoke it and create a new one.');

/** A key in the URL leaks into proxies, browser history and logs: refused before anything else reads it. */
export function refuseCredentialsInUrl(ctx: Koa.Context): void {
  if (ctx.querystring) {
    for (const [name, value] of new URLSearchParams(ctx.querystring)) {
      if (CREDENTIAL_PARAMS.has(name.toLowerCase()) || looksLikeApiKey(name) || looksLikeApiKey(value)) throw credentialInUrl();
    }
  }
  if (pathCarriesKey(ctx.path)) throw credentialInUrl();
}
