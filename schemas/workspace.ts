import type { JsonSchema } from '../core/schema-validator';
import { SCOPES } from '../core/scopes';
import { MAX_LIMIT_VALUE } from '../services/tenancy/api-limits';
import { nullableTimestamp, timestamp, uuid } from './common';

export const organizationSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'plan', 'createdAt', 'projectCount', 'memberCount'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    plan: { type: 'string' },
    createdAt: timestamp,
    projectCount: { type: 'integer' },
    memberCount: { type: 'integer' },
    settings: { type: 'object', properties: { semanticConsumerMode: { type: 'string', enum: ['off', 'read', 'write'] } } },
  },
};

const readPermission: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' };

export const apiKeySchema: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'prefix', 'scopes', 'readPermissions', 'writePermissions', 'projectIds', 'workspaceResources', 'expiresAt', 'lastUsedAt', 'createdAt'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    prefix: { type: 'string', description: 'Public part of the key, shown to tell keys apart. Never the secret.' },
    scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } },
    readPermissions: { type: 'array', items: { type: 'string' } },
    writePermissions: { type: 'array', items: { type: 'string' }, description: 'Named write grants that write policies can require.' },
    projectIds: { type: 'array', items: uuid, description: 'Empty: all current and future projects.' },
    workspaceResources: { type: 'boolean' },
    expiresAt: nullableTimestamp,
    lastUsedAt: { ...nullableTimestamp, description: 'Approximate: recorded in batches every few seconds.' },
    createdAt: timestamp,
    createdByMemberId: uuid,
  },
};

export const createApiKeyBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'scopes'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    scopes: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: [...SCOPES] } },
    readPermissions: { type: 'array', uniqueItems: true, maxItems: 100, items: readPermission, default: [] },
    writePermissions: { type: 'array', uniqueItems: true, maxItems: 100, items: readPermission, default: [], description: 'Named write grants that write policies can require.' },
    projectIds: { type: 'array', uniqueItems: true, maxItems: 1000, items: uuid, default: [], description: 'Empty means all projects. Not allowed with org:manage.' },
    workspaceResources: { type: 'boolean', default: false },
    expiresAt: { ...timestamp, description: 'Optional future expiry. Cannot be changed later.' },
  },
};

export const updateApiKeyBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  description: 'Only these fields are editable. To change name, scopes or expiry, create a new key.',
  properties: {
    projectIds: { type: 'array', uniqueItems: true, maxItems: 1000, items: uuid },
    workspaceResources: { type: 'boolean' },
    readPermissions: { type: 'array', uniqueItems: true, maxItems: 100, items: readPermission },
    writePermissions: { type: 'array', uniqueItems: true, maxItems: 100, items: readPermission },
  },
  errorMessage: {
    additionalProperties: 'Only projectIds, workspaceResources, readPermissions and writePermissions can be changed. Name, scopes and expiresAt are fixed at creation: create a new key instead.',
  },
};

export const memberRole: JsonSchema = { type: 'string', enum: ['owner', 'admin', 'member'] };

/** A member of the workspace, as the console's Members page lists it. */
export const memberSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'email', 'role', 'readPermissions', 'writePermissions', 'canSignIn', 'createdAt'],
  properties: {
    id: uuid,
    name: { type: 'string' },
    email: { type: ['string', 'null'] },
    role: memberRole,
    readPermissions: { type: 'array', items: { type: 'string' } },
    writePermissions: { type: 'array', items: { type: 'string' } },
    canSignIn: { type: 'boolean', description: 'Has set a password through an invite.' },
    createdAt: timestamp,
  },
};

/** An invitation to the console: the invited member and their one-use link, good for 7 days. */
export const invitationSchema: JsonSchema = {
  type: 'object',
  required: ['memberId', 'inviteUrl'],
  properties: { memberId: uuid, inviteUrl: { type: 'string', 'x-weft-secret': true, description: 'Signs its holder in as the member once: hand it to them alone.' } },
};

export const projectSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'createdAt', 'updatedAt'],
  properties: { id: uuid, name: { type: 'string' }, description: { type: 'string' }, createdAt: timestamp, updatedAt: timestamp },
};

const projectName: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' };
const projectDescription: JsonSchema = { type: 'string', maxLength: 2000 };

export const createProjectBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: projectName, description: projectDescription },
};

export const updateProjectBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name: projectName, description: projectDescription },
};

const limitValue: JsonSchema = { type: 'integer', minimum: 1, maximum: MAX_LIMIT_VALUE };

export const apiLimitsSchema: JsonSchema = {
  type: 'object',
  required: ['workspaceRequests', 'apiKeyRequests', 'windowSeconds'],
  properties: {
    workspaceRequests: { ...limitValue, description: 'Requests per window shared by every key of the workspace. Default 600.' },
    apiKeyRequests: { ...limitValue, description: 'Requests per window for each key. Default 120.' },
    windowSeconds: { type: 'integer', const: 60, readOnly: true },
  },
};

export const putApiLimitsBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['workspaceRequests', 'apiKeyRequests'],
  properties: {
    workspaceRequests: limitValue,
    apiKeyRequests: limitValue,
    // GET answers windowSeconds too: echoing that body back is a valid PUT, but the window is fixed.
    windowSeconds: { const: 60, description: 'The fixed 60-second window, as GET answers it. Optional; any other value is a 422.' },
  },
};

export const workspaceSettingsSchema = {
  type: 'object',
  required: ['semanticConsumerMode'],
  properties: {
    semanticConsumerMode: {
      type: 'string',
      enum: ['off', 'read', 'write'],
      description: 'The SPARQL endpoint: off (default; it answers 403 semantic_mode_off), read (queries), write (queries and updates, which go through governed writes).',
    },
  },
} as const;

export const updateWorkspaceSettingsBody: JsonSchema = { type: 'object', additionalProperties: false, minProperties: 1, properties: { semanticConsumerMode: workspaceSettingsSchema.properties.semanticConsumerMode } };
