import { AuthenticationError } from '../../core/errors';
import { sha256Hex } from '../../core/secrets';
import type { Clock } from '../../core/clock';
import type { Executor } from '../../db/connection';
import { principalFrom, type Principal } from './access';
import { admitRequest, ApiLimits, DEFAULT_API_KEY_REQUESTS, DEFAULT_WORKSPACE_REQUESTS, LimitHeaders, limitsFrom, WINDOW_SECONDS } from './api-limits';
import { RequestBudgets, type RequestCounting } from './request-budgets';
import type { DefinitionCache } from '../shared/definition-cache';

// The request path: a key this process knows is taken from memory and counted against a leased
// budget; any other Bearer key is checked and counted against both request-limit buckets in one
// statement, with the requests that arrive while one is in flight sent together in the next.

const KEY_PATTERN = /^(weft_sk_[A-Za-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

const invalidCredential = () => new AuthenticationError('invalid_credential', 'The API key is not valid: it is unknown, malformed, revoked or expired.');

export interface Authentication {
  principal: Principal;
  /** The workspace's request limits (saved settings, else defaults), read in the same query. */
  limits: ApiLimits;
}

/** One row of weft_authenticate_request(s): see the request_counters migrations. */
interface RequestPathRow {
  outcome: 'ok' | 'invalid' | 'expired' | 'key_limited' | 'workspace_limited';
  key_id: string;
  workspace_id: string;
  member_id: string;
  scopes: string[];
  read_permissions: string[];
  write_permissions: string[] | null;
  project_ids: string[];
  workspace_resources: boolean;
  member_active: boolean | null;
  member_role: Principal['memberRole'] | null;
  limit_workspace: number;
  limit_key: number;
  used_key: number;
  used_workspace: number | null;
  reset_ms: string;
  expires_at: Date | null;
}

/** How many batches one process keeps in flight, and how many requests one batch carries at most. */
const BATCHES_IN_FLIGHT = 2;
const MAX_BATCH = 128;

interface WaitingRequest {
  prefix: string;
  secretHash: string;
  resolve(row: RequestPathRow | undefined): void;
  reject(error: unknown): void;
}

/**
 * Sends the requests that arrive while batches are in flight together, in one statement
 * (weft_authenticate_requests, which counts each in turn): a lone request goes at once, and under
 * load one round trip and one commit serve many requests. Each is still checked and counted in the
 * database, so limits stay exact across processes and a revoked key fails at once.
 */
class RequestAuthenticator {
  private readonly waiting: WaitingRequest[] = [];
  private inFlight = 0;

  constructor(private readonly db: Executor, private readonly clock: Clock) {}

  authenticate(prefix: string, secretHash: string): Promise<RequestPathRow | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ prefix, secretHash, resolve, reject });
      this.send();
    });
  }

  private send(): void {
    if (this.inFlight >= BATCHES_IN_FLIGHT || this.waiting.length === 0) return;
    const batch = this.waiting.splice(0, MAX_BATCH);
    this.inFlight += 1;
    this.db
      .raw('SELECT * FROM weft_authenticate_requests(?::text[], ?::text[], ?, ?, ?, ?::timestamptz)', [
        batch.map((request) => request.prefix), batch.map((request) => request.secretHash), WINDOW_SECONDS, DEFAULT_WORKSPACE_REQUESTS, DEFAULT_API_KEY_REQUESTS, this.clock.databaseTime(),
      ])
      .then(
        ({ rows }: { rows: Array<RequestPathRow & { request: number }> }) => {
          const byRequest = new Map(rows.map((row) => [row.request, row]));
          batch.forEach((request, i) => request.resolve(byRequest.get(i + 1)));
        },
        (error: unknown) => batch.forEach((request) => request.reject(error)),
      )
      .finally(() => {
        this.inFlight -= 1;
        this.send();
      });
  }
}

/**
 * What one runtime keeps on the request path: its request budgets (request-budgets.ts), its
 * batcher of key checks, and which keys it keeps. The runtime builds it (ServiceDependencies.requests)
 * and returns its leases on shutdown (close()), so two runtimes in one process share no lease, no
 * batch and no kept key.
 */
export class RequestAdmission {
  readonly authenticator: RequestAuthenticator;
  /** Secret digest → workspace of the keys kept in the definition cache (the cache is per workspace). */
  readonly keptKeyWorkspaces = new Map<string, string>();
  /** Built on first use: a runtime that serves no request (the worker) holds no sweep timer. */
  private heldBudgets?: RequestBudgets;

  /** `definitions`: the runtime's cache, whose changes end the leases of the workspaces they name. */
  constructor(private readonly db: Executor, private readonly clock: Clock, private readonly definitions: DefinitionCache) {
    this.authenticator = new RequestAuthenticator(db, clock);
  }

  get budgets(): RequestBudgets {
    return (this.heldBudgets ??= new RequestBudgets(this.db, this.clock, this.definitions));
  }

  /** Returns every unspent lease; call before destroying the pool. */
  async close(): Promise<void> {
    await this.heldBudgets?.close();
  }
}

export interface AuthenticatedRequest extends Authentication {
  /** The tighter of the key's and the workspace's buckets after counting this request. */
  limit: LimitHeaders;
}

/** A key this process has authenticated, kept in its workspace's definition cache. */
interface KeptKey {
  principal: Principal;
  limits: ApiLimits;
  expiresAtMs: number | null;
}

function keptKey({ definitions, requests: { keptKeyWorkspaces } }: RequestCounting, secretHash: string): KeptKey | undefined {
  const workspaceId = keptKeyWorkspaces.get(secretHash);
  if (!workspaceId) return undefined;
  const kept = definitions.peek<KeptKey>(workspaceId, `key:${secretHash}`);
  if (!kept) keptKeyWorkspaces.delete(secretHash);
  return kept;
}

/** Keeps an authenticated key, with its expiry, for the next requests of this process. */
function keepKey({ definitions, requests: { keptKeyWorkspaces } }: RequestCounting, secretHash: string, key: KeptKey, ticket: ReturnType<DefinitionCache['ticket']>): void {
  definitions.keep(key.principal.workspaceId, `key:${secretHash}`, key, ticket);
  keptKeyWorkspaces.set(secretHash, key.principal.workspaceId);
}

const expired = () => new AuthenticationError('credential_expired', 'The API key has expired. Create a new key.');

/**
 * A request of a key this process keeps, admitted from the key's lease without waiting on
 * anything: the common case under load, answered with no promise. Undefined when anything needs
 * more (an unknown, expired or malformed key, no lease or a spent one): authenticateRequest then
 * decides, with the same checks and answers.
 */
export function admitKeptRequest(counting: RequestCounting, rawKey: string): AuthenticatedRequest | undefined {
  if (!KEY_PATTERN.test(rawKey)) return undefined;
  const kept = keptKey(counting, sha256Hex(rawKey));
  if (!kept || (kept.expiresAtMs !== null && kept.expiresAtMs <= counting.clock.now())) return undefined;
  const leased = counting.requests.budgets.spendNow(kept.principal, kept.limits);
  return leased && { principal: kept.principal, limits: kept.limits, limit: leased };
}

/**
 * Resolves the Bearer secret to its principal and counts the request against both request-limit
 * buckets. A key this process knows is taken from its workspace's definition cache (dropped by
 * NOTIFY within a second of a revocation, an expiry change, a member's removal or new limits, in
 * every process) and counted against a leased budget (request-budgets.ts): no round trip. Otherwise,
 * and for buckets with too little left to lease, one statement checks the key and counts the
 * request (weft_authenticate_request, see its migration), and the key is kept. Throws AuthenticationError for a bad, revoked or expired key
 * (never counted) and RateLimitError when a bucket is spent. Only the secret's digest leaves this
 * function.
 */
export async function authenticateRequest(counting: RequestCounting, rawKey: string): Promise<AuthenticatedRequest> {
  const { clock, definitions, requests } = counting;
  const match = KEY_PATTERN.exec(rawKey);
  if (!match) throw invalidCredential();
  const secretHash = sha256Hex(rawKey);
  const kept = keptKey(counting, secretHash);
  const { budgets } = requests;
  if (kept) {
    if (kept.expiresAtMs !== null && kept.expiresAtMs <= clock.now()) throw expired();
    const leased = await budgets.admit(kept.principal, kept.limits);
    if (leased) return { principal: kept.principal, limits: kept.limits, limit: leased };
    // Too little left to lease: checked and counted below, one by one.
  }
  definitions.start();
  // Taken before the key is read: a change anywhere meanwhile and the key is not kept.
  const ticket = definitions.ticket();
  // Leases a change ended are still being returned: counting now would count them too.
  await budgets.settled();
  const row = await requests.authenticator.authenticate(match[1], secretHash);
  if (!row || row.outcome === 'invalid') throw invalidCredential();
  if (row.outcome === 'expired') throw expired();
  const principal = principalFrom({
    workspaceId: row.workspace_id,
    apiKeyId: row.key_id,
    memberId: row.member_id,
    memberActive: row.member_active,
    memberRole: row.member_role,
    scopes: row.scopes,
    projectIds: row.project_ids,
    workspaceResources: row.workspace_resources,
    readPermissions: row.read_permissions,
    writePermissions: row.write_permissions,
  });
  const limits = limitsFrom(row.limit_workspace, row.limit_key);
  const admitted = () => admitRequest({
    outcome: row.outcome as 'ok' | 'key_limited' | 'workspace_limited',
    limitKey: row.limit_key,
    limitWorkspace: row.limit_workspace,
    usedKey: row.used_key,
    usedWorkspace: row.used_workspace,
    resetMs: Number(row.reset_ms),
  });
  try {
    return { principal, limits, limit: admitted() };
  } finally {
    // Kept for the next requests (a refused one included: the key itself is good).
    if (!kept) keepKey(counting, secretHash, { principal, limits, expiresAtMs: row.expires_at ? new Date(row.expires_at).getTime() : null }, ticket);
  }
}
