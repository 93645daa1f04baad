import { randomBytes } from 'node:crypto';
import { raw } from 'objection';
import { AuthenticationError, InputError, NotFoundError } from '../../core/errors';
import { SCOPES, Scope, isScope } from '../../core/scopes';
import { constantTimeEqualHex, sha256Hex } from '../../core/secrets';
import type { Executor } from '../../db/connection';
import { ApiKey } from '../../db/models';
import { assertProjectsInWorkspace } from './projects';
import { admitRequest, ApiLimits, DEFAULT_API_KEY_REQUESTS, DEFAULT_WORKSPACE_REQUESTS, LimitHeaders, limitsFrom, WINDOW_SECONDS } from './api-limits';
import type { Principal } from './access';
import { PageRequest, pageOf } from '../shared/pagination';

/**
 * Key format: weft_sk_<12-char public id>_<43-char secret>. The fixed "weft_sk_" prefix lets
 * secret scanners recognise a leaked key; the public id (stored in clear as `prefix`) finds the
 * row; the secret carries 256 random bits and is stored only as a SHA-256 digest.
 */
const KEY_PATTERN = /^(weft_sk_[A-Za-z0-9]{12})_([A-Za-z0-9_-]{43})$/;
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function publicId(): string {
  // 62 is not a power of two: reject bytes past the last full multiple to keep the draw uniform.
  let id = '';
  while (id.length < 12) {
    for (const byte of randomBytes(16)) {
      if (byte < 248 && id.length < 12) id += ALPHANUMERIC[byte % 62];
    }
  }
  return id;
}

function generateKeySecret(): { prefix: string; secret: string; hash: string } {
  const prefix = `weft_sk_${publicId()}`;
  const secret = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { prefix, secret, hash: sha256Hex(secret) };
}

export const looksLikeApiKey = (value: string): boolean => /weft_sk_[A-Za-z0-9]{12}/.test(value);

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  readPermissions: string[];
  writePermissions: string[];
  projectIds: string[];
  workspaceResources: boolean;
  expiresAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
  createdByMemberId: string;
}

function presentApiKey(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    readPermissions: key.readPermissions,
    writePermissions: key.writePermissions,
    projectIds: key.projectIds,
    workspaceResources: key.workspaceResources,
    expiresAt: key.expiresAt ? key.expiresAt.toISOString() : null,
    lastUsedAt: key.lastUsedAt ? key.lastUsedAt.toISOString() : null,
    createdAt: key.createdAt.toISOString(),
    createdByMemberId: key.createdByMemberId,
  };
}

export interface CreateApiKeyInput {
  name: string;
  scopes: string[];
  readPermissions?: string[];
  writePermissions?: string[];
  projectIds?: string[];
  workspaceResources?: boolean;
  expiresAt?: string;
}

function assertNoManageRestriction(scopes: string[], projectIds: string[]): void {
  if (scopes.includes('org:manage') && projectIds.length > 0) {
    throw new InputError('manage_key_restricted', 'A key holding org:manage cannot have a project restriction.', [{ path: '/projectIds', message: 'must be empty for a key with org:manage' }]);
  }
}

/** Creates a key for the caller's workspace, made by the caller's accountable member. Returns the raw secret once. */
export async function createApiKey(db: Executor, creator: { workspaceId: string; memberId: string }, input: CreateApiKeyInput): Promise<{ key: ApiKeyView; secret: string }> {
  const scopes = [...new Set(input.scopes)];
  const invalid = scopes.filter((s) => !isScope(s));
  if (invalid.length) throw new InputError('unknown_scope', `Unknown scopes: ${invalid.join(', ')}. Accepted: ${SCOPES.join(', ')}.`);
  const projectIds = [...new Set(input.projectIds ?? [])];
  assertNoManageRestriction(scopes, projectIds);
  if (input.expiresAt && new Date(input.expiresAt).getTime() <= Date.now()) {
    throw new InputError('expiry_in_past', 'expiresAt must be in the future.', [{ path: '/expiresAt', message: 'must be in the future' }]);
  }
  await assertProjectsInWorkspace(db, creator.workspaceId, projectIds);

  const { prefix, secret, hash } = generateKeySecret();
  const key = await ApiKey.query(db).insertAndFetch({
    workspaceId: creator.workspaceId,
    createdByMemberId: creator.memberId,
    name: input.name,
    prefix,
    secretHash: hash,
    scopes: scopes as Scope[],
    readPermissions: [...new Set(input.readPermissions ?? [])],
    writePermissions: [...new Set(input.writePermissions ?? [])],
    projectIds,
    workspaceResources: input.workspaceResources ?? false,
    expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
  });
  return { key: presentApiKey(key), secret };
}

export async function listApiKeys(db: Executor, workspaceId: string, page: PageRequest) {
  const { rows, pagination } = await pageOf(ApiKey.query(db).where({ workspaceId }).whereNull('revokedAt'), page, { column: 'createdAt', order: 'desc' });
  return { keys: rows.map(presentApiKey), pagination };
}

async function findActiveKey(db: Executor, workspaceId: string, keyId: string, forUpdate = false): Promise<ApiKey> {
  const query = ApiKey.query(db).findOne({ id: keyId, workspaceId }).whereNull('revokedAt');
  const key = await (forUpdate ? query.forUpdate() : query);
  if (!key) throw new NotFoundError('api_key', 'No API key with this id in this workspace.');
  return key;
}

export interface UpdateApiKeyInput {
  projectIds?: string[];
  workspaceResources?: boolean;
  readPermissions?: string[];
  writePermissions?: string[];
}

export async function updateApiKey(db: Executor, workspaceId: string, keyId: string, input: UpdateApiKeyInput): Promise<ApiKeyView> {
  const key = await findActiveKey(db, workspaceId, keyId, true);
  const patch: Partial<ApiKey> = {};
  if (input.projectIds !== undefined) {
    const projectIds = [...new Set(input.projectIds)];
    assertNoManageRestriction(key.scopes, projectIds);
    await assertProjectsInWorkspace(db, workspaceId, projectIds);
    patch.projectIds = projectIds;
  }
  if (input.workspaceResources !== undefined) patch.workspaceResources = input.workspaceResources;
  if (input.readPermissions !== undefined) patch.readPermissions = [...new Set(input.readPermissions)];
  if (input.writePermissions !== undefined) patch.writePermissions = [...new Set(input.writePermissions)];
  const updated = await key.$query(db).patchAndFetch(patch);
  return presentApiKey(updated);
}

/** Irreversible. Earlier writes and run history stay; only new authentication fails. */
export async function revokeApiKey(db: Executor, workspaceId: string, keyId: string): Promise<void> {
  const key = await findActiveKey(db, workspaceId, keyId, true);
  await key.$query(db).patch({ revokedAt: raw('now()') as unknown as Date });
}

const invalidCredential = () => new AuthenticationError('invalid_credential', 'The API key is not valid: it is unknown, malformed, revoked or expired.');

export interface Authentication {
  principal: Principal;
  /** The workspace's request limits (saved settings, else defaults), read in the same query. */
  limits: ApiLimits;
}

/**
 * Resolves a raw Bearer secret to its principal and the workspace's request limits, or throws an
 * AuthenticationError. One query: it runs before every authenticated request.
 */
export async function authenticateApiKey(db: Executor, rawKey: string): Promise<Authentication> {
  const match = KEY_PATTERN.exec(rawKey);
  if (!match) throw invalidCredential();
  const row = await db('apiKeys as k')
    .leftJoin('members as m', (join) => join.on('m.workspaceId', 'k.workspaceId').andOn('m.id', 'k.createdByMemberId'))
    .leftJoin('apiLimitSettings as l', 'l.workspaceId', 'k.workspaceId')
    .where('k.prefix', match[1])
    .first(
      'k.*',
      db.raw('(m.id IS NOT NULL AND m.removed_at IS NULL) AS member_active'),
      'm.role as memberRole',
      'l.workspaceRequests as limitWorkspaceRequests',
      'l.apiKeyRequests as limitApiKeyRequests',
    );
  // Compare even when no row matched, so timing does not reveal which prefixes exist.
  const matches = constantTimeEqualHex(sha256Hex(rawKey), row?.secretHash ?? sha256Hex('absent'));
  if (!row || !matches || row.revokedAt) throw invalidCredential();
  if (row.expiresAt && new Date(row.expiresAt).getTime() <= Date.now()) {
    throw new AuthenticationError('credential_expired', 'The API key has expired. Create a new key.');
  }
  return {
    principal: {
      workspaceId: row.workspaceId,
      apiKeyId: row.id,
      memberId: row.createdByMemberId,
      memberActive: row.memberActive === true,
      memberRole: row.memberRole ?? undefined,
      scopes: new Set((row.scopes as string[]).filter(isScope)),
      projectIds: row.projectIds,
      workspaceResources: row.workspaceResources,
      readPermissions: row.readPermissions,
      writePermissions: row.writePermissions ?? [],
    },
    limits: limitsFrom(row.limitWorkspaceRequests, row.limitApiKeyRequests),
  };
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

  constructor(private readonly db: Executor) {}

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
      .raw('SELECT * FROM weft_authenticate_requests(?::text[], ?::text[], ?, ?, ?)', [
        batch.map((request) => request.prefix), batch.map((request) => request.secretHash), WINDOW_SECONDS, DEFAULT_WORKSPACE_REQUESTS, DEFAULT_API_KEY_REQUESTS,
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

const authenticators = new WeakMap<Executor, RequestAuthenticator>();

export interface AuthenticatedRequest extends Authentication {
  /** The tighter of the key's and the workspace's buckets after counting this request. */
  limit: LimitHeaders;
}

/**
 * The request path's one database round trip: resolves the Bearer secret to its principal and
 * counts the request against both request-limit buckets (weft_authenticate_request, see its
 * migration). Throws AuthenticationError for a bad, revoked or expired key (never counted) and
 * RateLimitError when a bucket is spent. Nothing is cached, so a revoked key fails at once in every
 * process, and only the secret's digest leaves this function.
 */
export async function authenticateRequest(db: Executor, rawKey: string): Promise<AuthenticatedRequest> {
  const match = KEY_PATTERN.exec(rawKey);
  if (!match) throw invalidCredential();
  let authenticator = authenticators.get(db);
  if (!authenticator) authenticators.set(db, (authenticator = new RequestAuthenticator(db)));
  const row = await authenticator.authenticate(match[1], sha256Hex(rawKey));
  if (!row || row.outcome === 'invalid') throw invalidCredential();
  if (row.outcome === 'expired') throw new AuthenticationError('credential_expired', 'The API key has expired. Create a new key.');
  const limit = admitRequest({
    outcome: row.outcome,
    limitKey: row.limit_key,
    limitWorkspace: row.limit_workspace,
    usedKey: row.used_key,
    usedWorkspace: row.used_workspace,
    resetMs: Number(row.reset_ms),
  });
  return {
    principal: {
      workspaceId: row.workspace_id,
      apiKeyId: row.key_id,
      memberId: row.member_id,
      memberActive: row.member_active === true,
      memberRole: row.member_role ?? undefined,
      scopes: new Set((row.scopes as string[]).filter(isScope)),
      projectIds: row.project_ids,
      workspaceResources: row.workspace_resources,
      readPermissions: row.read_permissions,
      writePermissions: row.write_permissions ?? [],
    },
    limits: limitsFrom(row.limit_workspace, row.limit_key),
    limit,
  };
}
