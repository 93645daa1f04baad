import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { InputError, RateLimitError } from '../core/errors';
import type { Db, Executor } from '../db/connection';
import { ApiLimitSettings } from '../db/models';

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

/** The workspace's saved settings, or the defaults. Also backs the MCP tool organization_api_limits_get. */
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
export async function putApiLimits(db: Executor, workspaceId: string, input: { workspaceRequests: number; apiKeyRequests: number }): Promise<ApiLimits> {
  const workspaceRequests = checkLimitValue('workspaceRequests', input.workspaceRequests);
  const apiKeyRequests = checkLimitValue('apiKeyRequests', input.apiKeyRequests);
  await db('api_limit_settings')
    .insert({ workspaceId, workspaceRequests, apiKeyRequests, updatedAt: db.fn.now() })
    .onConflict('workspaceId')
    .merge();
  return { workspaceRequests, apiKeyRequests, windowSeconds: WINDOW_SECONDS };
}

export interface LimitHeaders {
  limit: number;
  remaining: number;
  resetSeconds: number;
  dimension: 'workspace' | 'api_key';
}

/**
 * Fixed 60-second windows counted in PostgreSQL (rate-limiter-flexible), so every API process
 * shares one budget. A request must fit both the workspace bucket and the key's bucket.
 */
export class RequestLimiter {
  private limiters = new Map<number, RateLimiterPostgres>();

  constructor(private readonly db: Db) {}

  /** One limiter per ceiling: counters live in the table, so a new ceiling keeps the window's usage. */
  private limiterFor(points: number): RateLimiterPostgres {
    let limiter = this.limiters.get(points);
    if (!limiter) {
      // Ceilings are per workspace, so distinct values are few; bound the cache all the same.
      if (this.limiters.size >= 1000) this.limiters.clear();
      limiter = new RateLimiterPostgres({
        storeClient: this.db,
        storeType: 'knex',
        tableName: 'request_limit_counters',
        tableCreated: true,
        // Only the first limiter sweeps expired rows; the rest would repeat its work.
        clearExpiredByTimeout: this.limiters.size === 0,
        keyPrefix: 'req',
        points,
        duration: WINDOW_SECONDS,
      });
      this.limiters.set(points, limiter);
    }
    return limiter;
  }

  /** Counts one request against both buckets; returns the headers of the tighter one, or throws RateLimitError. */
  async consume(workspaceId: string, apiKeyId: string, limits: ApiLimits): Promise<LimitHeaders> {
    const keyBucket = this.limiterFor(limits.apiKeyRequests);
    const workspaceBucket = this.limiterFor(limits.workspaceRequests);
    const keyId = `key:${apiKeyId}`;
    const workspaceKey = `ws:${workspaceId}`;

    const keyResult = await this.take(keyBucket, keyId, limits.apiKeyRequests, 'api_key');
    let workspaceResult: LimitHeaders;
    try {
      workspaceResult = await this.take(workspaceBucket, workspaceKey, limits.workspaceRequests, 'workspace');
    } catch (error) {
      // Refused by the workspace: the request did not run, so it does not spend the key's budget.
      await keyBucket.reward(keyId, 1).catch(() => undefined);
      throw error;
    }
    return keyResult.remaining <= workspaceResult.remaining ? keyResult : workspaceResult;
  }

  private async take(limiter: RateLimiterPostgres, key: string, limit: number, dimension: LimitHeaders['dimension']): Promise<LimitHeaders> {
    try {
      const res = await limiter.consume(key, 1);
      return { limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000), dimension };
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const resetSeconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
        const scope = dimension === 'workspace' ? 'The workspace' : 'This API key';
        throw new RateLimitError(`${scope} has used its ${limit} requests for this ${WINDOW_SECONDS}-second window. Retry after ${resetSeconds} seconds.`, {
          limit,
          remaining: 0,
          resetSeconds,
          dimension,
        });
      }
      throw rejection;
    }
  }
}
