import { RateLimitError } from '../../core/errors';
import type { Principal } from './access';
import { admitRequest, ApiLimits, getApiLimits, LimitHeaders, WINDOW_SECONDS } from './api-limits';
import type { RequestCounting } from './request-budgets';

// A signed-in member's console requests count as a caller's (SPEC 8: "each API key or signed-in
// user"): against the workspace's bucket, shared with its keys, and a bucket of the member's own
// of apiKeyRequests, in the same counters and windows. The member's bucket is keyed by the
// member's id, which no key shares.

interface LeaseRow {
  outcome: 'ok' | 'small';
  used_workspace: number;
  used_key: number;
  reset_ms: number;
}

/** Counts one console request of the member, from a lease when the buckets are large, else one by one; 429 when either is spent. */
export async function admitMemberRequest(counting: RequestCounting, principal: Principal): Promise<LimitHeaders> {
  const { db, clock, definitions } = counting;
  const limits = await definitions.get(principal.workspaceId, 'limits', () => getApiLimits(db, principal.workspaceId));
  const caller = { ...principal, apiKeyId: principal.memberId };
  const { budgets } = counting.requests;
  const leased = await budgets.admit(caller, limits);
  if (leased) return leased;
  await budgets.settled();
  // A share of one, at least one left: exactly this request, or 'small' when a bucket is spent.
  const { rows } = await db.raw<{ rows: LeaseRow[] }>('SELECT * FROM weft_lease_requests(?, ?, ?, ?, ?, 1, 1, 1, ?::timestamptz)', [
    principal.workspaceId, principal.memberId, WINDOW_SECONDS, limits.workspaceRequests, limits.apiKeyRequests, clock.databaseTime(),
  ]);
  return counted(rows[0], limits);
}

function counted(row: LeaseRow, limits: ApiLimits): LimitHeaders {
  const resetMs = Number(row.reset_ms);
  if (row.outcome === 'ok') return admitRequest({ outcome: 'ok', limitKey: limits.apiKeyRequests, limitWorkspace: limits.workspaceRequests, usedKey: row.used_key, usedWorkspace: row.used_workspace, resetMs });
  const memberSpent = limits.apiKeyRequests - row.used_key < 1;
  const resetSeconds = Math.max(1, Math.ceil(resetMs / 1000));
  const limit = memberSpent ? limits.apiKeyRequests : limits.workspaceRequests;
  throw new RateLimitError(`${memberSpent ? 'You have' : 'The workspace has'} used ${limit} requests in this ${WINDOW_SECONDS}-second window. Retry after ${resetSeconds} seconds.`, {
    limit, remaining: 0, resetSeconds, dimension: memberSpent ? 'member' : 'workspace',
  });
}
