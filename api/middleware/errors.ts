import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { DomainError } from '../../core/errors';
import { domainErrorFromDatabase } from '../../services/operations/database-errors';
import { logger } from '../../core/logger';
import { PROBLEM_CONTENT_TYPE, Problem, problem, problemFromDomainError } from '../../core/problem';

/** A database error the service layer maps (services/operations/database-errors.ts), as a problem. */
export function problemFromDatabaseError(error: unknown, requestId: string): Problem | undefined {
  const known = domainErrorFromDatabase(error);
  return known ? problemFromDomainError(known, requestId) : undefined;
}

/** Koa's and the router's own errors (405 from methodNotAllowed in router.ts, for unknown methods too). */
function problemFromHttpError(error: { status?: number; expose?: boolean; message?: string; allow?: string[] }, requestId: string, method: string, path: string): Problem | undefined {
  switch (error.status) {
    case 405:
      return problem(405, 'method_not_allowed', `${method} is not allowed on ${path}${error.allow ? `; it serves ${error.allow.join(', ')}` : ''}.`, requestId);
    default:
      if (typeof error.status !== 'number' || error.status < 400 || error.status >= 500) return undefined;
      return problem(error.status, 'bad_request', error.expose && error.message ? error.message : 'The request could not be read.', requestId);
  }
}

/** An API key's public id and its secret part, as found anywhere in a text. */
const API_KEY_IN_TEXT = /(weft_sk_[A-Za-z0-9]{12})_[A-Za-z0-9_-]{43}/g;

/**
 * A problem never repeats an API key's secret. A key a client put in a body by mistake (a field
 * name, a value a message quotes) would otherwise travel back into the client's error logs and
 * whatever collects them, like a key sent in a URL. The public id stays, so the key can be found
 * and revoked.
 */
export function withholdApiKeys(body: Problem): Problem {
  const text = JSON.stringify(body);
  // Keys are [A-Za-z0-9_-] only, so the replacement cannot break the JSON text.
  const withheld = text.replace(API_KEY_IN_TEXT, '$1_[withheld]');
  return withheld === text ? body : (JSON.parse(withheld) as Problem);
}

/** A 404 no layer answered: the route is not found (the request frame's answer to an unmatched path). */
export const routeNotFound = (): Error => Object.assign(new Error('route not found'), { routeNotFound: true });

/** Answers a failure in the one problem+json format; an unexpected one is logged and becomes a 500 that reveals nothing. */
export function answerError(ctx: Koa.Context, error: unknown): void {
  const requestId = String(ctx.state.requestId ?? '');
  let body: Problem | undefined;
  if (error instanceof DomainError) body = problemFromDomainError(error, requestId);
  else if ((error as { routeNotFound?: boolean }).routeNotFound) body = problem(404, 'route_not_found', `No route ${ctx.method} ${ctx.path}.`, requestId);
  else body = problemFromDatabaseError(error, requestId) ?? problemFromHttpError(error as never, requestId, ctx.method, ctx.path);

  if (!body) {
    logger.error({ requestId, err: { message: (error as Error).message, stack: (error as Error).stack } }, 'unhandled error');
    body = problem(500, 'internal_error', 'Something went wrong on our side. The request id identifies it in our logs.', requestId);
  }
  ctx.status = body.status;
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = withholdApiKeys(body);
  // RFC 9110: a 405 names the methods the resource does serve.
  const allow = (error as { allow?: unknown }).allow;
  if (body.status === 405 && Array.isArray(allow)) ctx.set('Allow', allow.join(', '));
  if ((body.status === 429 || body.status === 503) && typeof body.retryAfterSeconds === 'number') ctx.set('Retry-After', String(body.retryAfterSeconds));
}

/**
 * Requests node's HTTP parser refuses before Koa sees them — a request line or headers over the
 * size limit (431), a malformed request line or an unknown method (400), a request too slow to
 * arrive (408) — get the one problem format too, with a request id; node's own answer has no body.
 * Wire it with server.on('clientError', answerClientError).
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A peer that is gone (or a response already under way) cannot be answered.
  if (error.code === 'ECONNRESET' || !socket.writable || (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
    socket.destroy();
    return;
  }
  const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const requestId = randomUUID();
  const message = status === 431
    ? 'The request line and headers are larger than this server accepts (16 KB): shorten the URL or the headers.'
    : status === 408
      ? 'The request did not arrive in time.'
      : 'The request is not valid HTTP/1.1 (malformed request line or headers, or a method this server cannot read).';
  const body = JSON.stringify(problem(status, status === 431 ? 'headers_too_large' : status === 408 ? 'request_timeout' : 'malformed_request', message, requestId));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}
