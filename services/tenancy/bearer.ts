import { AuthenticationError } from '../../core/errors';
import type { ServiceDependencies } from '../operations/context';
import { authenticateRequest, Authentication } from './request-authentication';

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
 */
export async function authenticateBearer(deps: ServiceDependencies, exchange: BearerExchange): Promise<Authentication> {
  const header = exchange.get('Authorization');
  if (!header) throw new AuthenticationError('missing_credential', 'Send an API key in the header Authorization: Bearer <API_KEY>.');
  const match = BEARER.exec(header);
  if (!match) throw new AuthenticationError('invalid_credential', 'The Authorization header must have the form "Bearer <API_KEY>".');
  try {
    const authentication = await authenticateRequest(deps.db, match[1]);
    exchange.state.principal = authentication.principal;
    deps.keyUsage?.record(authentication.principal.apiKeyId);
    setLimitHeaders(exchange, authentication.limit.limit, authentication.limit.remaining, authentication.limit.resetSeconds);
    return authentication;
  } catch (error) {
    const limit = (error as { limit?: { limit: number; remaining: number; resetSeconds: number } }).limit;
    if (limit) setLimitHeaders(exchange, limit.limit, limit.remaining, limit.resetSeconds);
    throw error;
  }
}

function setLimitHeaders(exchange: BearerExchange, limit: number, remaining: number, resetSeconds: number): void {
  exchange.set('X-RateLimit-Limit', String(limit));
  exchange.set('X-RateLimit-Remaining', String(Math.max(0, remaining)));
  exchange.set('X-RateLimit-Reset', String(resetSeconds));
}
