import type { JsonSchema } from '../../core/schema-validator';
import { Member } from '../../db/models';
import { installPlugin } from '../endpoints/plugins';
import type { OperationContext } from '../operations/context';
import { defineOperation, RequestInput } from '../operations/operation';
import { createApiKey } from './api-keys';
import { NotFoundError } from '../../core/errors';
import { addMember, bootstrapWorkspace, removeMember } from './workspaces';
import { inviteMember } from './members';
import { CREDIT_LIMITS, CreditLimit, PLANS, setWorkspacePlan } from '../usage/plans';
import { invitationSchema } from '../../schemas/workspace';

// What the public API deliberately does not do, for the operator of a Weft installation (the admin
// CLI, scripts/admin.ts): no API key asks, so these declare operator access, which invoke() admits
// through the admin door only, and the admin door admits nothing else.

const uuid: JsonSchema = { type: 'string', format: 'uuid' };
const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' };
const grants: JsonSchema = { type: 'array', uniqueItems: true, maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 200 } };
const body = (properties: Record<string, JsonSchema>, required: string[]): JsonSchema => ({ type: 'object', additionalProperties: false, required, properties });
/** What a command prints with --json: these fields, each required. */
const printed = (description: string, properties: Record<string, JsonSchema>) => ({ 200: { description, schema: { type: 'object', required: Object.keys(properties), properties } } });
const secret: JsonSchema = { type: 'string', 'x-weft-secret': true, description: 'Shown once: it cannot be recovered.' };

type Body<B> = RequestInput<Record<string, never>, Record<string, never>, B>;

export const bootstrapWorkspaceOperation = defineOperation({
  name: 'bootstrapWorkspace',
  summary: 'A new workspace with an owner, a default project and an unrestricted org:manage key.',
  access: { operator: 'creates a workspace: no key exists yet' },
  effect: 'write',
  input: { body: body({ workspaceName: name, ownerName: name }, ['workspaceName']) },
  output: printed('The workspace, its owner, its default project and the owner’s key', { workspaceId: uuid, projectId: uuid, memberId: uuid, apiKey: secret }),
  run: ({ db, deps }: OperationContext, { body }: Body<{ workspaceName: string; ownerName?: string }>) => bootstrapWorkspace(deps, db, body),
});

export const installPluginOperation = defineOperation({
  name: 'installPlugin',
  summary: 'Install a capability in a workspace with its configuration (credentials encrypted at rest).',
  access: { operator: 'installs code and its credentials into a workspace' },
  effect: 'write',
  input: { body: body({ workspaceId: uuid, capability: name, config: { type: 'object' } }, ['workspaceId', 'capability']) },
  output: printed('The installation (its credentials are never printed)', { installationId: uuid }),
  async run({ db, deps }: OperationContext, { body }: Body<{ workspaceId: string; capability: string; config?: Record<string, unknown> }>) {
    const installation = await installPlugin(db, deps.encryptionKey, body.workspaceId, body.capability, body.config ?? {});
    return { installationId: installation.id };
  },
});

export const addMemberOperation = defineOperation({
  name: 'addMember',
  summary: 'Add a member to a workspace; members are the accountable actors of keys.',
  access: { operator: 'membership is managed outside the API' },
  effect: 'write',
  input: { body: body({ workspaceId: uuid, name, role: { type: 'string', enum: ['owner', 'admin', 'member'], default: 'member' } }, ['workspaceId', 'name']) },
  output: printed('The new member', { memberId: uuid }),
  async run({ db }: OperationContext, { body }: Body<{ workspaceId: string; name: string; role: Member['role'] }>) {
    const member = await addMember(db, body.workspaceId, { name: body.name, role: body.role });
    return { memberId: member.id };
  },
});

export const removeMemberOperation = defineOperation({
  name: 'removeMember',
  summary: 'Remove a member: every key it created stops acting at once (no accountable actor).',
  access: { operator: 'membership is managed outside the API' },
  effect: 'write',
  input: { body: body({ workspaceId: uuid, memberId: uuid }, ['workspaceId', 'memberId']) },
  output: printed('The member removed', { removed: uuid }),
  async run({ db }: OperationContext, { body }: Body<{ workspaceId: string; memberId: string }>) {
    await removeMember(db, body.workspaceId, body.memberId);
    return { removed: body.memberId };
  },
});

export const inviteMemberOperation = defineOperation({
  name: 'inviteMember',
  summary: 'Invite a person to the console: a new member with this email and role, or (memberId) an existing one; a one-use link, good for 7 days.',
  access: { operator: 'membership is managed outside the API' },
  effect: 'write',
  input: {
    // A new member needs an email, an existing one is named by memberId (inviteMember says so).
    body: body({ workspaceId: uuid, email: { type: 'string', minLength: 3, maxLength: 320 }, role: { type: 'string', enum: ['owner', 'admin', 'member'] }, memberId: uuid, name }, ['workspaceId']),
  },
  output: { 200: { description: 'The invited member and their link', schema: invitationSchema } },
  run: ({ db }: OperationContext, { body }: Body<{ workspaceId: string; email?: string; role?: Member['role']; memberId?: string; name?: string }>) => inviteMember(db, body.workspaceId, body),
});

export const createMemberKeyOperation = defineOperation({
  name: 'createMemberKey',
  summary: 'A key that acts for a given member (what a member does in a workspace UI).',
  access: { operator: 'creates a key for a member other than the caller’s' },
  effect: 'write',
  input: { body: body({ workspaceId: uuid, memberId: uuid, name, scopes: { ...grants, minItems: 1 }, readPermissions: grants, writePermissions: grants }, ['workspaceId', 'memberId', 'name', 'scopes']) },
  output: printed('The key and its secret', { keyId: uuid, secret }),
  async run({ db, deps }: OperationContext, { body }: Body<{ workspaceId: string; memberId: string; name: string; scopes: string[]; readPermissions?: string[]; writePermissions?: string[] }>) {
    const member = await Member.query(db).findOne({ id: body.memberId, workspaceId: body.workspaceId }).whereNull('removedAt');
    if (!member) throw new NotFoundError('member', `No active member ${body.memberId} in workspace ${body.workspaceId}.`);
    const { key, secret } = await createApiKey(deps, db, { workspaceId: body.workspaceId, memberId: body.memberId }, { name: body.name, scopes: body.scopes, readPermissions: body.readPermissions ?? [], writePermissions: body.writePermissions ?? [] });
    return { keyId: key.id, secret };
  },
});

export const setWorkspacePlanOperation = defineOperation({
  name: 'setWorkspacePlan',
  summary: 'Set a workspace’s plan and whether its credit pauses paid work (none: metered, never paused; default: the installation’s WEFT_CREDIT_LIMIT).',
  access: { operator: 'plans are sold through Stripe, or set by the operator of an installation without it' },
  effect: 'write',
  input: {
    body: {
      ...body({ workspaceId: uuid, plan: { type: 'string', enum: Object.keys(PLANS) }, creditLimit: { type: 'string', enum: [...CREDIT_LIMITS, 'default'] } }, ['workspaceId']),
      // workspaceId and at least one of plan and creditLimit.
      minProperties: 2,
    },
  },
  output: printed('The workspace’s plan and credit limit now', {
    workspaceId: uuid,
    plan: { type: 'string', enum: Object.keys(PLANS) },
    creditLimit: { type: 'string', enum: [...CREDIT_LIMITS, 'default'] },
    pausesPaidWork: { type: 'boolean', description: 'Whether running out of credit pauses its paid work.' },
  }),
  run: ({ db }: OperationContext, { body }: Body<{ workspaceId: string; plan?: string; creditLimit?: CreditLimit | 'default' }>) => setWorkspacePlan(db, body),
});

export const operatorOperations = [bootstrapWorkspaceOperation, installPluginOperation, addMemberOperation, inviteMemberOperation, removeMemberOperation, createMemberKeyOperation, setWorkspacePlanOperation];
