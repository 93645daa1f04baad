import type { JsonSchema } from './schema-validator';
import { DomainError, ErrorKind, RateLimitError } from './errors';

/**
 * The one error body (RFC 9457 problem+json with extension members): `code` is stable and
 * machine-readable, `message` is for people, `requestId` ties the answer to the logs.
 */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  message: string;
  requestId: string;
  errors?: Array<{ path: string; message: string }>;
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const statusByKind: Record<ErrorKind, number> = {
  bad_request: 400,
  unsupported_media_type: 415,
  not_acceptable: 406,
  payload_too_large: 413,
  invalid_input: 422,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  gone: 410,
  payment_required: 402,
  rate_limited: 429,
  upstream_failed: 502,
  unavailable: 503,
};

const titles: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthenticated',
  402: 'Payment required',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  408: 'Request timeout',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload too large',
  415: 'Unsupported media type',
  422: 'Validation failed',
  429: 'Too many requests',
  431: 'Request header fields too large',
  500: 'Internal server error',
  501: 'Not implemented',
  502: 'Bad gateway',
  503: 'Service unavailable',
};

export function problem(status: number, code: string, message: string, requestId: string, extra: Record<string, unknown> = {}): Problem {
  // Details first: a detail named like a standard member (an upstream's `status`) must never replace it.
  return { ...extra, type: `https://weft.dev/problems/${code}`, title: titles[status] ?? 'Error', status, code, message, requestId };
}

export function problemFromDomainError(error: DomainError, requestId: string): Problem {
  const status = statusByKind[error.kind];
  const { status: upstreamStatus, ...rest } = error.details ?? {};
  const extra: Record<string, unknown> = upstreamStatus === undefined ? rest : { ...rest, upstreamStatus };
  if (error instanceof RateLimitError) extra.retryAfterSeconds = error.limit.resetSeconds;
  return problem(status, error.code, error.message, requestId, extra);
}

export const problemSchema: JsonSchema = {
  type: 'object',
  description: 'Every error response has this shape (application/problem+json).',
  required: ['type', 'title', 'status', 'code', 'message', 'requestId'],
  properties: {
    type: { type: 'string', format: 'uri', description: 'Identifies the problem kind; ends with the code.' },
    title: { type: 'string', description: 'Short summary of the HTTP status.' },
    status: { type: 'integer' },
    code: { type: 'string', description: 'Stable machine-readable code, e.g. validation_failed, insufficient_scope, usage_limit_reached.' },
    message: { type: 'string', description: 'What went wrong and what to do, for people.' },
    requestId: { type: 'string', description: 'Also sent as the X-Request-Id header; quote it when reporting a problem.' },
    errors: {
      type: 'array',
      description: 'Field-level problems of a validation failure.',
      items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } },
    },
  },
  additionalProperties: true,
};
