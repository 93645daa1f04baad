import { randomBytes } from 'node:crypto';
import { hash as argon2Hash } from '@node-rs/argon2';
import { raw } from 'objection';
import { ConflictError, InputError, NotFoundError } from '../../core/errors';
import { publicUrl } from '../../core/config';
import { sha256Hex } from '../../core/secrets';
import type { Executor } from '../../db/connection';
import { Member } from '../../db/models';

// Members as people who sign in: an email per membership, a password set through a one-use invite
// (argon2id), a role an owner or admin changes, and the rule that a workspace always keeps an owner.

export const INVITE_DAYS = 7;
export const MIN_PASSWORD_LENGTH = 10;
const MAX_PASSWORD_LENGTH = 1000;

/** argon2id with the OWASP parameters (19 MiB, 2 passes, 1 lane): @node-rs/argon2's defaults. */
const ARGON2ID = 2;
export const hashPassword = (password: string): Promise<string> => argon2Hash(password, { algorithm: ARGON2ID });

export const normalEmail = (email: string): string => email.trim().toLowerCase();
const EMAIL = /^[^\s@]+@[^\s@]+$/;

function checkEmail(email: string): string {
  const trimmed = email.trim();
  if (!EMAIL.test(trimmed) || trimmed.length > 320) throw new InputError('invalid_email', 'The email must look like name@example.com.', [{ path: '/email', message: 'must be an email address' }]);
  return trimmed;
}

export interface Invitation {
  memberId: string;
  inviteUrl: string;
}

async function activeMember(db: Executor, workspaceId: string, memberId: string, forUpdate = false): Promise<Member> {
  const query = Member.query(db).findOne({ id: memberId, workspaceId }).whereNull('removedAt');
  const member = await (forUpdate ? query.forUpdate() : query);
  if (!member) throw new NotFoundError('member', 'No current member with this id in this workspace.');
  return member;
}

/** The workspace's row, locked: changes that could leave it without an owner take turns on it. */
async function lockWorkspace(db: Executor, workspaceId: string): Promise<void> {
  const row = await db('workspaces').where({ id: workspaceId }).forUpdate().first('id');
  if (!row) throw new NotFoundError('workspace', 'No workspace with this id.');
}

async function otherOwners(db: Executor, workspaceId: string, memberId: string): Promise<number> {
  const [{ n }] = await db('members').where({ workspaceId, role: 'owner' }).whereNull('removedAt').whereNot({ id: memberId }).count({ n: '*' });
  return Number(n);
}

async function assertEmailFree(db: Executor, workspaceId: string, email: string, memberId?: string): Promise<void> {
  const taken = await db('members').where({ workspaceId }).whereNull('removedAt').whereRaw('lower(email) = ?', [normalEmail(email)]).modify((q) => (memberId ? q.whereNot({ id: memberId }) : q)).first('id');
  if (taken) throw new ConflictError('email_taken', 'Another member of this workspace has this email: invite that member again instead.', { memberId: taken.id });
}

const lastOwner = () => new ConflictError('last_owner', 'This is the workspace’s last owner: make another member an owner first.');

/**
 * Invites a person: a new member with this email and role, or (memberId) an existing member, whose
 * email and role change when given. The link is good for one use within INVITE_DAYS; a new invite
 * of the member voids the older ones. A forgotten password is reset this way.
 */
export async function inviteMember(db: Executor, workspaceId: string, input: { email?: string; role?: Member['role']; memberId?: string; name?: string }): Promise<Invitation> {
  await lockWorkspace(db, workspaceId);
  const email = input.email === undefined ? undefined : checkEmail(input.email);
  if (email !== undefined) await assertEmailFree(db, workspaceId, email, input.memberId);
  let member: Member;
  if (input.memberId) {
    member = await activeMember(db, workspaceId, input.memberId, true);
    const patch: Partial<Member> = {};
    if (email !== undefined) patch.email = email;
    if (input.role !== undefined && input.role !== member.role) {
      if (member.role === 'owner' && (await otherOwners(db, workspaceId, member.id)) === 0) throw lastOwner();
      patch.role = input.role;
    }
    if (Object.keys(patch).length) member = await member.$query(db).patchAndFetch(patch);
    if (!member.email) throw new InputError('email_required', 'This member has no email yet: invite them with --email.', [{ path: '/email', message: 'is required' }]);
  } else {
    if (email === undefined) throw new InputError('email_required', 'An invite needs the person’s email.', [{ path: '/email', message: 'is required' }]);
    member = await Member.query(db).insertAndFetch({ workspaceId, name: input.name ?? email, email, role: input.role ?? 'member' });
  }
  await db('member_invites').where({ workspaceId, memberId: member.id }).whereNull('usedAt').delete();
  const token = randomBytes(32).toString('base64url');
  await db('member_invites').insert({ workspaceId, memberId: member.id, tokenHash: sha256Hex(token), expiresAt: db.raw(`now() + interval '${INVITE_DAYS} days'`) });
  // The token rides in the fragment: browsers never send it, so no server or proxy logs it.
  return { memberId: member.id, inviteUrl: `${publicUrl()}/console/invite#${token}` };
}

/** What an invite link opens, for its page: the workspace and email, or nothing for a spent or unknown one. */
export async function describeInvite(db: Executor, token: string): Promise<{ email: string; workspaceName: string } | undefined> {
  const row = await db('member_invites as i')
    .join('members as m', 'm.id', 'i.memberId')
    .join('workspaces as w', 'w.id', 'i.workspaceId')
    .where({ 'i.tokenHash': sha256Hex(token) })
    .whereNull('i.usedAt')
    .whereNull('m.removedAt')
    .where('i.expiresAt', '>', db.fn.now())
    .first('m.email', 'w.name as workspaceName');
  return row ? { email: row.email, workspaceName: row.workspaceName } : undefined;
}

export function checkPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new InputError('weak_password', `The password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`, [{ path: '/password', message: `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters` }]);
  }
  return password;
}

/**
 * Spends an invite: the member's password becomes this one (argon2id) and the member's sessions
 * end, so a reset password signs out whoever held the old one. Throws for a spent, expired or
 * unknown invite.
 */
export async function acceptInvite(db: Executor, token: string, password: string): Promise<{ memberId: string; workspaceId: string; email: string }> {
  checkPassword(password);
  const passwordHash = await hashPassword(password);
  const invite = await db('member_invites').where({ tokenHash: sha256Hex(token) }).whereNull('usedAt').where('expiresAt', '>', db.fn.now()).forUpdate().first();
  if (!invite) throw new NotFoundError('invite', 'This invite link is unknown, used or expired: ask an owner or admin for a new one.');
  const member = await activeMember(db, invite.workspaceId, invite.memberId, true);
  await db('member_invites').where({ id: invite.id }).update({ usedAt: db.fn.now() });
  await member.$query(db).patch({ passwordHash });
  await endSessionsOf(db, member.id);
  return { memberId: member.id, workspaceId: member.workspaceId, email: member.email ?? '' };
}

/** Ends every console session that could act as the member (a removal, a new password). */
export async function endSessionsOf(db: Executor, memberId: string): Promise<void> {
  await db('console_sessions').whereRaw('? = ANY(member_ids)', [memberId]).delete();
}

/**
 * Changes a member's role. Their sessions narrow or widen at once in every process: each console
 * request reads its member's role afresh. The last owner cannot be demoted.
 */
export async function setMemberRole(db: Executor, workspaceId: string, memberId: string, role: Member['role']): Promise<Member> {
  await lockWorkspace(db, workspaceId);
  const member = await activeMember(db, workspaceId, memberId, true);
  if (member.role === role) return member;
  if (member.role === 'owner' && (await otherOwners(db, workspaceId, memberId)) === 0) throw lastOwner();
  return member.$query(db).patchAndFetch({ role });
}

/**
 * Removes a member. Their keys keep authenticating for reads their scopes allow, but they are no
 * longer an accountable actor, so public mutations and run access fail (SPEC 5.1); their console
 * sessions end. The last owner cannot be removed.
 */
export async function removeMember(db: Executor, workspaceId: string, memberId: string): Promise<void> {
  await lockWorkspace(db, workspaceId);
  const member = await activeMember(db, workspaceId, memberId, true);
  if (member.role === 'owner' && (await otherOwners(db, workspaceId, memberId)) === 0) throw lastOwner();
  await member.$query(db).patch({ removedAt: raw('now()') as unknown as Date });
  await endSessionsOf(db, memberId);
}

/** Gives a member named grants (never implied by a role); their sessions use them from the next request. */
export async function setMemberGrants(db: Executor, workspaceId: string, memberId: string, grants: { readPermissions?: string[]; writePermissions?: string[] }): Promise<Member> {
  const member = await activeMember(db, workspaceId, memberId, true);
  const patch: Partial<Member> = {};
  if (grants.readPermissions !== undefined) patch.readPermissions = [...new Set(grants.readPermissions)];
  if (grants.writePermissions !== undefined) patch.writePermissions = [...new Set(grants.writePermissions)];
  return Object.keys(patch).length ? member.$query(db).patchAndFetch(patch) : member;
}
