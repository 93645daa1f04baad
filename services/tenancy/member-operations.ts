import { PermissionError } from '../../core/errors';
import type { JsonSchema } from '../../core/schema-validator';
import { Member } from '../../db/models';
import { idParams, listQuery, listResponse } from '../../schemas/common';
import { invitationSchema, memberRole as role, memberSchema } from '../../schemas/workspace';
import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { pageOf } from '../shared/pagination';
import type { Principal } from './access';
import { inviteMember, removeMember, setMemberGrants, setMemberRole } from './members';
import { presentMember } from './presenters';

// Members administered from the console's Members page by an owner or admin: the same rules as the
// operator CLI's (members.ts), with the caller's standing on top: making or unmaking an owner is an
// owner's to do. No /api/v1 route reaches these (SPEC 4 has no members resource); the console door does.

const ADMINISTER = { scopes: { anyOf: ['org:manage'] }, unrestrictedKey: true, actor: 'administrator' } as const;
const grants: JsonSchema = { type: 'array', uniqueItems: true, maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 200 } };

function refuseOwnerChangeByAdmin(principal: Principal, ...roles: Array<Member['role'] | undefined>): void {
  if (roles.includes('owner') && principal.memberRole !== 'owner') throw new PermissionError('owner_required', 'Only an owner may make, unmake or remove an owner.');
}

export const listMembersOperation = defineOperation({
  name: 'listMembers',
  summary: 'List the workspace’s current members, with their roles and named grants.',
  access: { scopes: { anyOf: ['org:manage'] }, unrestrictedKey: true },
  effect: 'read',
  input: { query: listQuery() },
  output: { 200: { description: 'A page of the workspace’s members, oldest first', schema: listResponse('members', memberSchema) } },
  async run({ db, principal }: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest, undefined>): Promise<Reply> {
    const { rows, pagination } = await pageOf(Member.query(db).where({ workspaceId: principal.workspaceId }).whereNull('removedAt'), query, { column: 'createdAt', order: 'asc' });
    return { body: { members: rows.map(presentMember), pagination } };
  },
});

export const createMemberInviteOperation = defineOperation({
  name: 'createMemberInvite',
  summary: 'Invite a person by email (a new member), or a member again (memberId): a one-use link, good for 7 days.',
  access: ADMINISTER,
  effect: 'write',
  input: { body: { type: 'object', additionalProperties: false, properties: { email: { type: 'string', minLength: 3, maxLength: 320 }, role, memberId: { type: 'string', format: 'uuid' }, name: { type: 'string', minLength: 1, maxLength: 200 } } } },
  output: { 201: { description: 'The invited member and their link', schema: invitationSchema } },
  async run({ db, principal }: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { email?: string; role?: Member['role']; memberId?: string; name?: string }>): Promise<Reply> {
    const existing = body.memberId ? await Member.query(db).findOne({ id: body.memberId, workspaceId: principal.workspaceId }) : undefined;
    refuseOwnerChangeByAdmin(principal, body.role, body.role !== undefined ? existing?.role : undefined);
    return { status: 201, body: await inviteMember(db, principal.workspaceId, body) };
  },
});

export const updateMemberOperation = defineOperation({
  name: 'updateMember',
  summary: 'Change a member’s role or named grants; their sessions narrow or widen from the next request. The last owner keeps the role.',
  access: ADMINISTER,
  effect: 'write',
  input: { params: idParams('member_id'), body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { role, readPermissions: grants, writePermissions: grants } } },
  output: { 200: { description: 'The member, changed', schema: { type: 'object', required: ['member'], properties: { member: memberSchema } } } },
  async run({ db, principal }: OperationContext, { params, body }: RequestInput<{ member_id: string }, Record<string, never>, { role?: Member['role']; readPermissions?: string[]; writePermissions?: string[] }>): Promise<Reply> {
    const current = await Member.query(db).findOne({ id: params.member_id, workspaceId: principal.workspaceId });
    if (body.role !== undefined && current && current.role !== body.role) {
      refuseOwnerChangeByAdmin(principal, body.role, current.role);
      await setMemberRole(db, principal.workspaceId, params.member_id, body.role);
    }
    const member = await setMemberGrants(db, principal.workspaceId, params.member_id, body);
    return { body: { member: presentMember(member) } };
  },
});

export const deleteMemberOperation = defineOperation({
  name: 'deleteMember',
  summary: 'Remove a member: their sessions end, their keys keep reading but can no longer change anything. Not the last owner.',
  access: ADMINISTER,
  effect: 'write',
  input: { params: idParams('member_id') },
  output: { 204: { description: 'The member is removed' } },
  async run({ db, principal }: OperationContext, { params }: RequestInput<{ member_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    const member = await Member.query(db).findOne({ id: params.member_id, workspaceId: principal.workspaceId });
    refuseOwnerChangeByAdmin(principal, member?.role);
    await removeMember(db, principal.workspaceId, params.member_id);
    return { status: 204 };
  },
});

export const memberOperations = [listMembersOperation, createMemberInviteOperation, updateMemberOperation, deleteMemberOperation];
