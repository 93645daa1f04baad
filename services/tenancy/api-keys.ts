import { randomBytes } from 'node:crypto';
import { raw } from 'objection';
import { AuthenticationError, InputError, NotFoundError } from '../../core/errors';
import { SCOPES, Scope, isScope } from '../../core/scopes';
import { sha256Hex } from '../../core/secrets';
import type { Executor } from '../../db/connection';
import { ApiKey } from '../../db/models';
import { assertProjectsInWorkspace } from './projects';
import { principalFrom, type Principal } from './access';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { presentApiKey, type ApiKeyView } from './presenters';

// Key lifecycle: create, list, narrow, revoke, and the principal of a key by its id. Checking a
// Bearer key on a request lives in request-authentication.ts.

/**
 * Key format: weft_sk_<12-char public id>_<43-char secret>. The fixed "weft_sk_" prefix lets
 * secret scanners recognise a leaked key; the public id (stored in clear as `prefix`) finds the
 * row; the secret carries 256 random bits and is stored only as a SHA-256 digest.
 */
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

/**
 * Creates a key for the caller's workspace, made by the caller's accountable member. Returns the raw
 * secret once. Takes the creator rather than a context: the admin CLI creates keys as no key. An
 * expiresAt must be after now on the runtime's clock.
 */
export async function createApiKey({ clock }: Pick<ServiceDependencies, 'clock'>, db: Executor, creator: { workspaceId: string; memberId: string }, input: CreateApiKeyInput): Promise<{ key: ApiKeyView; secret: string }> {
  const scopes = [...new Set(input.scopes)];
  const invalid = scopes.filter((s) => !isScope(s));
  if (invalid.length) throw new InputError('unknown_scope', `Unknown scopes: ${invalid.join(', ')}. Accepted: ${SCOPES.join(', ')}.`);
  const projectIds = [...new Set(input.projectIds ?? [])];
  assertNoManageRestriction(scopes, projectIds);
  if (input.expiresAt && new Date(input.expiresAt).getTime() <= clock.now()) {
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

export async function listApiKeys(ctx: OperationContext, page: PageRequest) {
  const { db, principal: { workspaceId } } = ctx;
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

export async function updateApiKey(ctx: OperationContext, keyId: string, input: UpdateApiKeyInput): Promise<ApiKeyView> {
  const { db, principal: { workspaceId } } = ctx;
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
export async function revokeApiKey(ctx: OperationContext, keyId: string): Promise<void> {
  const { db, principal: { workspaceId } } = ctx;
  const key = await findActiveKey(db, workspaceId, keyId, true);
  await key.$query(db).patch({ revokedAt: raw('now()') as unknown as Date });
}

/**
 * The principal of a key by its id, as it stands now: what work started by a key (an async query
 * job, an approved write, a run's commit) acts as when it runs later. A key revoked or expired
 * since (by the runtime's clock) refuses the work; the member's standing and the key's current
 * restrictions apply.
 */
export async function principalOfKey({ clock }: Pick<ServiceDependencies, 'clock'>, db: Executor, workspaceId: string, apiKeyId: string): Promise<Principal> {
  const row = await db('apiKeys as k')
    .leftJoin('members as m', (join) => join.on('m.workspaceId', 'k.workspaceId').andOn('m.id', 'k.createdByMemberId'))
    .where({ 'k.id': apiKeyId, 'k.workspaceId': workspaceId })
    .first('k.*', db.raw('(m.id IS NOT NULL AND m.removed_at IS NULL) AS member_active'), 'm.role as memberRole');
  if (!row) throw new AuthenticationError('credential_unknown', 'The API key that started this work no longer exists.');
  if (row.revokedAt) throw new AuthenticationError('credential_revoked', 'The API key that started this work has been revoked since, so the work does not go on.');
  if (row.expiresAt && new Date(row.expiresAt).getTime() <= clock.now()) {
    throw new AuthenticationError('credential_expired', 'The API key that started this work has expired since, so the work does not go on.');
  }
  return principalFrom({
    workspaceId: row.workspaceId,
    apiKeyId: row.id,
    memberId: row.createdByMemberId,
    memberActive: row.memberActive,
    memberRole: row.memberRole,
    scopes: row.scopes,
    projectIds: row.projectIds,
    workspaceResources: row.workspaceResources,
    readPermissions: row.readPermissions,
    writePermissions: row.writePermissions,
  });
}

