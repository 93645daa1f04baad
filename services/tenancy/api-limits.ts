import { InputError, RateLimitError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import type { ServiceDependencies } from '../operations/context';
import { ApiLimitSettings } from '../../db/models';

export const WINDOW_SECONDS = 60;
export const DEFAULT_WORKSPACE_REQUESTS = 600;
export const DEFAULT_API_KEY_REQUESTS = 120;
export const MAX_LIMIT_VALUE = 2_147_483_646;

export interface ApiLimits {
  workspaceRequests: number;
  apiKeyRequests: number;
  windowSeconds: number;
}

/** Saved settings win over the defaults. */
export function limitsFrom(workspaceRequests: number | null | undefined, apiKeyRequests: number | null | undefined): ApiLimits {
  return {
    workspaceRequests: workspaceRequests ?? DEFAULT_WORKSPACE_REQUESTS,
    apiKeyRequests: apiKeyRequests ?? DEFAULT_API_KEY_REQUESTS,
    windowSeconds: WINDOW_SECONDS,
  };
}

/**
 * The workspace's saved settings, or the defaults. Also backs the MCP tool organization_api_limits_get.
 * (db, workspaceId), as putApiLimits: records of the workspace by id, which tests set as no key.
 */
export async function getApiLimits(db: Executor, workspaceId: string): Promise<ApiLimits> {
  const saved = await ApiLimitSettings.query(db).findById(workspaceId);
  return limitsFrom(saved?.workspaceRequests, saved?.apiKeyRequests);
}

function checkLimitValue(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIMIT_VALUE) {
    throw new InputError('invalid_limit', `${name} must be a whole number from 1 to ${MAX_LIMIT_VALUE}.`, [{ path: `/${name}`, message: `must be a whole number from 1 to ${MAX_LIMIT_VALUE}` }]);
  }
  return value;
}

/** Saves both settings. The current window's usage is kept: only the ceiling changes. */
export async function putApiLimits(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, workspaceId: string, input: { workspaceRequests: number; apiKeyRequests: number }): Promise<ApiLimits> {
  const workspaceRequests = checkLimitValue('workspaceRequests', input.workspaceRequests);
  const apiKeyRequests = checkLimitValue('apiKeyRequests', input.apiKeyRequests);
  await db('api_limit_settings')
    .insert({ workspaceId, workspaceRequests, apiKeyRequests, updatedAt: db.fn.now() })
    .onConflict('workspaceId')
    .merge();
  // Committed already outside a transaction: this runtime's kept keys carry the old limits (within
  // one, invoke drops them once it commits).
  if (!db.isTransaction) deps.definitions.changed(workspaceId);
  return { workspaceRequests, apiKeyRequests, windowSeconds: WINDOW_SECONDS };
}

export interface LimitHeaders {
  limit: number;
  remaining: number;
  resetSeconds: number;
  dimension: 'workspace' | 'api_key';
}

/** The counting half of authenticateRequest's one query, as the limit headers and the refusal. */
export interface CountedRequest {
  outcome: 'ok' | 'key_limited' | 'workspace_limited';
  limitKey: number;
  limitWorkspace: number;
  usedKey: number;
  usedWorkspace: number | null;
  resetMs: number;
}

/**
 * The headers of the tighter bucket for an admitted request; throws RateLimitError (with the
 * refusing bucket's headers) for a refused one. Counting itself happens in the database, in the
 * same statement as authentication (weft_authenticate_request): fixed 60-second windows shared by
 * every API process, a request must fit both the key's and the workspace's bucket, and a refused
 * request spends neither.
 */
export function admitRequest(counted: CountedRequest): LimitHeaders {
  const resetSeconds = Math.max(1, Math.ceil(counted.resetMs / 1000));
  if (counted.outcome !== 'ok') {
    const dimension = counted.outcome === 'key_limited' ? 'api_key' : 'workspace';
    const limit = dimension === 'api_key' ? counted.limitKey : counted.limitWorkspace;
    const scope = dimension === 'workspace' ? 'The workspace' : 'This API key';
    throw new RateLimitError(`${scope} has used its ${limit} requests for this ${WINDOW_SECONDS}-second window. Retry after ${resetSeconds} seconds.`, {
      limit,
      remaining: 0,
      resetSeconds,
      dimension,
    });
  }
  const keyRemaining = counted.limitKey - counted.usedKey;
  const workspaceRemaining = counted.limitWorkspace - (counted.usedWorkspace ?? 0);
  return keyRemaining <= workspaceRemaining
    ? { limit: counted.limitKey, remaining: keyRemaining, resetSeconds, dimension: 'api_key' }
    : { limit: counted.limitWorkspace, remaining: workspaceRemaining, resetSeconds, dimension: 'workspace' };
}
