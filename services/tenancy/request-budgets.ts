import type { Clock } from '../../core/clock';
import type { Executor } from '../../db/connection';
import { leaseIdleMs } from '../../core/config';
import { RateLimitError } from '../../core/errors';
import { logger } from '../../core/logger';
import type { DefinitionCache } from '../shared/definition-cache';
import type { Principal } from './access';
import type { RequestAdmission } from './request-authentication';
import { admitRequest, ApiLimits, LimitHeaders, WINDOW_SECONDS } from './api-limits';

// Request limits without a round trip per request. A process leases a share of what remains of a
// key's and its workspace's buckets in the current window (weft_lease_requests: a sixteenth of the
// smaller remainder, at most MAX_LEASE) and spends it locally; one lease at a time per key, so
// requests that arrive together do not each take one. Leased is counted as used in PostgreSQL, so
// across every process no bucket admits more than its limit. A bucket with less than
// MIN_REMAINING left is not leased from: until its window turns, its requests are counted one by
// one with the key's check (weft_authenticate_requests), exactly as without leases, so small
// buckets and the last stretch of large ones stay exact to the request. What a process does not
// spend goes back after REQUEST_LEASE_IDLE_MS (or WEFT_LEASE_IDLE_MS, if shorter) without use,
// when the workspace's keys or limits change, or when the process stops, so another process, or
// another key of the workspace, is not refused for long while budget lies idle here. Time comes
// from the process's clock: the database's decides the window (clock.databaseTime(), null in
// production), this process's when its leases end and idle (sweep() looks them over at once).

/** What counts a runtime's requests: its pool, its clock, its definition cache (keys and limits kept) and its leases (all from its dependencies). */
export interface RequestCounting {
  db: Executor;
  clock: Clock;
  definitions: DefinitionCache;
  requests: RequestAdmission;
}

const SHARE = 16;
const MAX_LEASE = 1000;
const MIN_REMAINING = 256;
/** How often leases are looked over: ended windows dropped, idle leases handed back. */
const SWEEP_MS = 500;
/**
 * The longest a request lease is kept unused. Shorter than a charge lease's: every key of a
 * workspace leases from the one workspace bucket (ten keys that each lease once hold half of what
 * was left), and a key's next burst pays one lease statement, not a round trip per request.
 */
const REQUEST_LEASE_IDLE_MS = 2000;

interface Lease {
  workspaceId: string;
  keyId: string;
  limits: ApiLimits;
  /** The database's window the lease belongs to, and when it ends here. */
  windowStart: number;
  endsAt: number;
  left: number;
  /** The buckets' counts after the last lease (what others had used then, and what we hold). */
  usedKey: number;
  usedWorkspace: number;
  lastUsedAt: number;
}

interface LeaseRow {
  outcome: 'ok' | 'small';
  granted: number;
  used_workspace: number;
  used_key: number;
  window_start: number;
  reset_ms: number;
}

const sameLimits = (a: ApiLimits, b: ApiLimits) => a.workspaceRequests === b.workspaceRequests && a.apiKeyRequests === b.apiKeyRequests;

/** The request budgets one runtime leases through its pool, timed by its clock (RequestAdmission.budgets). */
export class RequestBudgets {
  private readonly leases = new Map<string, Lease>();
  /** The lease statement in flight per key: requests that find no lease wait for it. */
  private readonly leasing = new Map<string, Promise<void>>();
  /** Keys whose buckets are counted one by one until their window turns (too little left to lease). */
  private readonly oneByOne = new Map<string, { workspaceId: string; limits: ApiLimits; until: number }>();
  private readonly returning = new Set<Promise<void>>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly stopListening: () => void;

  constructor(private readonly db: Executor, readonly clock: Clock, definitions: DefinitionCache) {
    this.sweeper = setInterval(() => this.returnIdle(), SWEEP_MS);
    this.sweeper.unref();
    // A change to a workspace's keys or limits ends its leases: the next request of each key is
    // checked and counted afresh, under the limits as they are now.
    this.stopListening = definitions.onChange((workspaceId) => {
      for (const [keyId, lease] of this.leases) {
        if (workspaceId !== undefined && lease.workspaceId !== workspaceId) continue;
        this.leases.delete(keyId);
        void this.giveBack(lease);
      }
      for (const [keyId, counted] of this.oneByOne) if (workspaceId === undefined || counted.workspaceId === workspaceId) this.oneByOne.delete(keyId);
    });
  }

  /** Waits for the returns under way (a request counted afresh must not count what is being returned). */
  async settled(): Promise<void> {
    while (this.returning.size) await Promise.all([...this.returning]);
  }

  /**
   * Admits one request of a known key from its lease, or from a new one; undefined when its buckets
   * are too small (or too near their limits) to lease from: the caller counts it one by one.
   */
  async admit(principal: Principal, limits: ApiLimits): Promise<LimitHeaders | undefined> {
    const keyId = principal.apiKeyId;
    for (;;) {
      const spent = this.spend(keyId, limits);
      if (spent) return spent;
      const oneByOne = this.oneByOne.get(keyId);
      if (oneByOne && this.clock.now() < oneByOne.until && sameLimits(oneByOne.limits, limits)) return undefined;
      const leasing = this.leasing.get(keyId);
      if (!leasing) break;
      await leasing;
    }
    let admitted!: (headers: LimitHeaders | undefined) => void;
    const answer = new Promise<LimitHeaders | undefined>((resolve) => (admitted = resolve));
    const leasing = this.lease(principal, limits)
      .then(admitted, (error: unknown) => {
        admitted(undefined);
        logger.warn({ err: error, apiKeyId: keyId }, 'a request lease failed; the request is counted on its own');
      })
      .finally(() => this.leasing.delete(keyId));
    this.leasing.set(keyId, leasing);
    return answer;
  }

  /** One request from the key's lease, if it has one with budget left (admit's first step, without a promise). */
  spendNow(principal: Principal, limits: ApiLimits): LimitHeaders | undefined {
    return this.spend(principal.apiKeyId, limits);
  }

  /** One lease statement for the key; the request that asked for it is admitted from it. */
  private async lease(principal: Principal, limits: ApiLimits): Promise<LimitHeaders | undefined> {
    const keyId = principal.apiKeyId;
    // A lease taken under other limits goes back first: under lowered limits it may be all there is.
    const stale = this.leases.get(keyId);
    if (stale && !sameLimits(stale.limits, limits)) {
      this.leases.delete(keyId);
      await this.giveBack(stale);
    }
    const { rows } = await this.db.raw<{ rows: LeaseRow[] }>('SELECT * FROM weft_lease_requests(?, ?, ?, ?, ?, ?, ?, ?, ?::timestamptz)', [
      principal.workspaceId, keyId, WINDOW_SECONDS, limits.workspaceRequests, limits.apiKeyRequests, SHARE, MAX_LEASE, MIN_REMAINING, this.clock.databaseTime(),
    ]);
    const row = rows[0];
    const now = this.clock.now();
    if (row.outcome === 'small') {
      this.oneByOne.set(keyId, { workspaceId: principal.workspaceId, limits, until: now + Number(row.reset_ms) });
      return undefined;
    }
    const spare = row.granted - 1;
    const current = this.leases.get(keyId);
    if (current) void this.giveBack(current);
    this.leases.set(keyId, {
      workspaceId: principal.workspaceId, keyId, limits, windowStart: Number(row.window_start), endsAt: now + Number(row.reset_ms), left: spare, usedKey: row.used_key, usedWorkspace: row.used_workspace, lastUsedAt: now,
    });
    return admitRequest({ outcome: 'ok', limitKey: limits.apiKeyRequests, limitWorkspace: limits.workspaceRequests, usedKey: row.used_key - spare, usedWorkspace: row.used_workspace - spare, resetMs: Number(row.reset_ms) });
  }

  /**
   * Charges the further messages of a JSON-RPC batch (MCP): `messages` requests in all, the HTTP
   * request that carried them having been counted already (by admit or the key's check), so a batch
   * costs what as many single requests would. All or none: from the key's lease when it holds
   * enough, else the lease goes back and one statement charges exactly the rest if both buckets
   * have that much left (weft_lease_requests asked for a share of 1, no more and no less). When
   * one has less, nothing more is charged, the carrying request is handed back too (a refused
   * request spends neither bucket) and RateLimitError names that bucket and what it has left.
   * `carriedSince`: when the carrying request began to be counted, so it is handed back only to
   * the window that counted it.
   */
  async admitBatch(principal: Principal, limits: ApiLimits, messages: number, carriedSince: number): Promise<LimitHeaders> {
    const keyId = principal.apiKeyId;
    const more = messages - 1;
    for (let leasing = this.leasing.get(keyId); leasing; leasing = this.leasing.get(keyId)) await leasing;
    const spent = this.spend(keyId, limits, more);
    if (spent) return spent;
    const held = this.leases.get(keyId);
    if (held) {
      this.leases.delete(keyId);
      void this.giveBack(held);
    }
    // What this process leased and has not spent belongs to the batch as much as to any request.
    await this.settled();
    const { rows } = await this.db.raw<{ rows: LeaseRow[] }>('SELECT * FROM weft_lease_requests(?, ?, ?, ?, ?, 1, ?, ?, ?::timestamptz)', [
      principal.workspaceId, keyId, WINDOW_SECONDS, limits.workspaceRequests, limits.apiKeyRequests, more, more, this.clock.databaseTime(),
    ]);
    const row = rows[0];
    const counted = { limitKey: limits.apiKeyRequests, limitWorkspace: limits.workspaceRequests, usedKey: row.used_key, usedWorkspace: row.used_workspace, resetMs: Number(row.reset_ms) };
    if (row.outcome === 'ok') return admitRequest({ outcome: 'ok', ...counted });
    // Carried in this window if it began no longer ago than the window did (at its first millisecond included).
    const sameWindow = this.clock.now() - carriedSince <= WINDOW_SECONDS * 1000 - counted.resetMs;
    if (sameWindow) await this.db.raw('SELECT weft_return_requests(?, ?, ?, ?)', [principal.workspaceId, keyId, row.window_start, 1]);
    const handedBack = sameWindow ? 1 : 0;
    const keyLeft = Math.max(0, limits.apiKeyRequests - row.used_key + handedBack);
    const workspaceLeft = Math.max(0, limits.workspaceRequests - row.used_workspace + handedBack);
    const dimension = keyLeft <= workspaceLeft ? 'api_key' : 'workspace';
    const left = Math.min(keyLeft, workspaceLeft);
    const resetSeconds = Math.max(1, Math.ceil(counted.resetMs / 1000));
    const scope = dimension === 'workspace' ? 'the workspace has' : 'this API key has';
    throw new RateLimitError(
      `A batch of ${messages} messages counts as ${messages} requests, and ${scope} ${left} left in this ${WINDOW_SECONDS}-second window; nothing in the batch ran. Retry after ${resetSeconds} seconds, or send fewer messages.`,
      { limit: dimension === 'workspace' ? limits.workspaceRequests : limits.apiKeyRequests, remaining: left, resetSeconds, dimension },
    );
  }

  /** `count` requests from the key's lease, if it holds that many for this window and these limits. */
  private spend(keyId: string, limits: ApiLimits, count = 1): LimitHeaders | undefined {
    const lease = this.leases.get(keyId);
    const now = this.clock.now();
    if (!lease || lease.left < count || now >= lease.endsAt || !sameLimits(lease.limits, limits)) return undefined;
    lease.left -= count;
    lease.lastUsedAt = now;
    return admitRequest({
      outcome: 'ok',
      limitKey: limits.apiKeyRequests,
      limitWorkspace: limits.workspaceRequests,
      usedKey: lease.usedKey - lease.left,
      usedWorkspace: lease.usedWorkspace - lease.left,
      resetMs: lease.endsAt - now,
    });
  }

  /** Hands a lease's unspent requests back (a lease of a window that has turned has nothing to give). */
  private giveBack(lease: Lease): Promise<void> {
    const count = lease.left;
    lease.left = 0;
    if (count < 1 || this.clock.now() >= lease.endsAt) return Promise.resolve();
    const returned: Promise<void> = Promise.resolve(this.db.raw('SELECT weft_return_requests(?, ?, ?, ?)', [lease.workspaceId, lease.keyId, lease.windowStart, count]))
      .then(() => undefined, (error: unknown) => logger.warn({ err: error, apiKeyId: lease.keyId }, 'an unspent request lease could not be returned; it lapses with its window'))
      .finally(() => this.returning.delete(returned));
    this.returning.add(returned);
    return returned;
  }

  /**
   * Looks the leases over now, as the timer does every SWEEP_MS, and waits for what that hands
   * back: a test that moves its clock sweeps at the time it set.
   */
  async sweep(): Promise<void> {
    this.returnIdle();
    await this.settled();
  }

  private returnIdle(): void {
    const now = this.clock.now();
    const idleMs = Math.min(leaseIdleMs(), REQUEST_LEASE_IDLE_MS);
    for (const [keyId, lease] of this.leases) {
      if (now >= lease.endsAt) this.leases.delete(keyId);
      else if (lease.left > 0 && now - lease.lastUsedAt >= idleMs) void this.giveBack(lease);
    }
    for (const [keyId, counted] of this.oneByOne) if (now >= counted.until) this.oneByOne.delete(keyId);
  }

  /** Returns every unspent lease (the process is stopping). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.stopListening();
    await Promise.all([...this.leases.values()].map((lease) => this.giveBack(lease)));
    this.leases.clear();
    await this.settled();
  }
}

