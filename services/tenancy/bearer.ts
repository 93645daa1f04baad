import { AuthenticationError } from '../../core/errors';
import type { ServiceDependencies } from '../operations/context';
import type { LimitHeaders } from './api-limits';
import { admitKeptRequest, authenticateRequest, Authentication, AuthenticatedRequest } from './request-authentication';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The parts of an HTTP exchange authentication reads and writes (a Koa context fits). */
export interface BearerExchange {
  get(header: string): string;
  set(header: string, value: string): void;
  state: Record<string, unknown>;
}

/**
 * Authenticates the Bearer key of an HTTP request (REST or MCP) and counts the request against its
 * request limits, in one database round trip; sets the limit headers on every answer, a 429 included.
 * A key this process keeps, with budget left in its lease, is answered at once, without a promise
 * (admitKeptRequest): most requests under load, and each promise is a tick and an allocation.
 */
export function authenticateBearer(deps: ServiceDependencies, exchange: BearerExchange): Authentication | Promise<Authentication> {
  const header = exchange.get('Authorization');
  if (!header) throw new AuthenticationError('missing_credential', 'Send an API key in the header Authorization: Bearer <API_KEY>.');
  const match = BEARER.exec(header);
  if (!match) throw new AuthenticationError('invalid_credential', 'The Authorization header must have the form "Bearer <API_KEY>".');
  const kept = admitKeptRequest(deps, match[1]);
  if (kept) return accepted(deps, exchange, kept);
  return authenticateAnyKey(deps, exchange, match[1]);
}

async function authenticateAnyKey(deps: ServiceDependencies, exchange: BearerExchange, rawKey: string): Promise<Authentication> {
  try {
    return accepted(deps, exchange, await authenticateRequest(deps, rawKey));
  } catch (error) {
    const limit = (error as { limit?: LimitCounts }).limit;
    if (limit) setLimitHeaders(exchange, limit);
    throw error;
  }
}

function accepted(deps: ServiceDependencies, exchange: BearerExchange, authentication: AuthenticatedRequest): Authentication {
  exchange.state.principal = authentication.principal;
  deps.keyUsage?.record(authentication.principal.apiKeyId);
  setLimitHeaders(exchange, authentication.limit);
  return authentication;
}

type LimitCounts = Pick<LimitHeaders, 'limit' | 'remaining' | 'resetSeconds'>;

function setLimitHeaders(exchange: BearerExchange, limit: LimitCounts): void {
  exchange.set('X-RateLimit-Limit', `${limit.limit}`);
  exchange.set('X-RateLimit-Remaining', `${Math.max(0, limit.remaining)}`);
  exchange.set('X-RateLimit-Reset', `${limit.resetSeconds}`);
}
