import type { JsonSchema } from '../core/schema-validator';
import { whereSchema } from '../plugins/condition-schemas';
import { listQuery, nullableTimestamp, timestamp, uuid } from './common';
import { APPROVAL_LAPSES } from '../services/endpoints/approval-standing';

// The governed source-write action of SPEC 2.9 and the write policies that govern it. The request
// schema is exact: every bound of SPEC section 8 is here, and no other field is accepted anywhere.

export const WRITE_OPERATIONS = ['append', 'upsert', 'update', 'delete'] as const;
export type WriteOperation = (typeof WRITE_OPERATIONS)[number];

const fieldName: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };
const snapshotPart: JsonSchema = { type: 'string', minLength: 1, maxLength: 500 };

export const snapshotRefSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'version'],
  properties: { id: snapshotPart, version: snapshotPart },
};

const rowsSchema: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 500,
  items: { type: 'object', propertyNames: fieldName },
  description: '1 to 500 row objects; keys 1 to 200 characters, values of any type.',
};

const setSchema: JsonSchema = { type: 'object', propertyNames: fieldName, description: 'Fields to set; keys 1 to 200 characters.' };

/** One input variant: the three common fields plus the operation's own, and nothing else. */
function inputVariant(operation: WriteOperation, fields: Record<string, JsonSchema>): JsonSchema {
  return {
    type: 'object',
    additionalProperties: false,
    required: ['contractVersion', 'expectedSourceSnapshot', 'operation', ...Object.keys(fields)],
    properties: {
      contractVersion: { const: 1, description: 'The input contract version: always 1.' },
      expectedSourceSnapshot: snapshotRefSchema,
      operation: { const: operation },
      ...fields,
    },
  };
}

export const writeActionInputSchema: JsonSchema = {
  type: 'object',
  required: ['operation'],
  properties: { operation: { type: 'string', enum: [...WRITE_OPERATIONS] } },
  discriminator: { propertyName: 'operation' },
  oneOf: [
    inputVariant('append', { rows: rowsSchema }),
    inputVariant('upsert', { rows: rowsSchema }),
    inputVariant('update', { where: whereSchema, set: setSchema }),
    inputVariant('delete', { where: whereSchema }),
  ],
};

/** SPEC 2.9: the body of POST /api/v1/data-endpoints/{endpoint_id}/writes. */
export const writeActionRequestSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['actionId', 'projectId', 'idempotencyKey', 'input'],
  properties: {
    actionId: { ...uuid, description: 'The caller’s id for this action (unique in the workspace).' },
    projectId: { ...uuid, description: 'The project the write is made for; the policy and the key’s allowlist must admit it.' },
    idempotencyKey: { type: 'string', minLength: 8, maxLength: 200, description: 'Same key and body: the first outcome is returned and nothing is written again. Same key, other body: 409.' },
    input: writeActionInputSchema,
  },
};

export interface WriteActionRequest {
  actionId: string;
  projectId: string;
  idempotencyKey: string;
  input: {
    contractVersion: 1;
    expectedSourceSnapshot: { id: string; version: string };
    operation: WriteOperation;
    rows?: Array<Record<string, unknown>>;
    where?: Array<{ field: string; op: 'eq' | 'ne' | 'in' | 'exists' | 'gt' | 'gte' | 'lt' | 'lte'; value?: unknown; values?: unknown[] }>;
    set?: Record<string, unknown>;
  };
}

const grantName: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' };
const grantList: JsonSchema = { type: 'array', uniqueItems: true, maxItems: 100, items: grantName, default: [] };

export const writePolicyInputSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['allowedOperations'],
  properties: {
    allowedOperations: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: [...WRITE_OPERATIONS] } },
    projectIds: { type: 'array', uniqueItems: true, maxItems: 1000, items: uuid, default: [], description: 'Projects that may write; empty means every project of the workspace.' },
    approval: {
      type: 'object',
      additionalProperties: false,
      required: ['required'],
      default: { required: false },
      properties: {
        required: { type: 'boolean', description: 'Writes wait for approval before they apply.' },
        approvers: { type: 'integer', minimum: 1, maximum: 10, default: 1, description: 'Distinct members, other than the proposer, who must approve.' },
        timeoutSeconds: { type: 'integer', minimum: 5, maximum: 2_592_000, default: 86_400, description: 'An action not approved in this time expires (5 seconds to 30 days).' },
      },
    },
    requiredReadPermissions: { ...grantList, description: 'Named read grants the writer’s key must hold.' },
    requiredWritePermissions: { ...grantList, description: 'Named write grants the writer’s key must hold.' },
    allowPipelineRuns: {
      type: 'boolean',
      default: false,
      description: 'Pipeline runs may write the data (a destination over it), without approval, when their launching key has data:write (and data:delete to replace), the policy’s project, operations and grants. Off: runs writing it are refused at validation and launch (write_policy_forbids_runs).',
    },
  },
};

export interface WritePolicyInput {
  allowedOperations: WriteOperation[];
  projectIds: string[];
  approval: { required: boolean; approvers: number; timeoutSeconds: number };
  requiredReadPermissions: string[];
  requiredWritePermissions: string[];
  allowPipelineRuns: boolean;
}

export const writePolicySchema: JsonSchema = {
  type: 'object',
  description: 'The write policy of the data an endpoint reaches: one per data (a managed table, a remote table, an HTTP dataset), whichever endpoint it is read or set through, and it governs every endpoint over that data.',
  required: ['id', 'dataEndpointId', 'dataIdentity', 'guardedEndpointIds', 'allowedOperations', 'projectIds', 'approval', 'requiredReadPermissions', 'requiredWritePermissions', 'allowPipelineRuns', 'revision', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    dataEndpointId: { ...uuid, description: 'The endpoint the policy was read or set through.' },
    dataIdentity: { type: 'string', description: 'The data the policy governs (the endpoint’s dataIdentity).' },
    guardedEndpointIds: { type: 'array', items: uuid, description: 'Every endpoint over the data, which the policy governs.' },
    allowPipelineRuns: { type: 'boolean' },
    allowedOperations: { type: 'array', items: { type: 'string', enum: [...WRITE_OPERATIONS] } },
    projectIds: { type: 'array', items: uuid },
    approval: {
      type: 'object',
      properties: { required: { type: 'boolean' }, approvers: { type: 'integer' }, timeoutSeconds: { type: 'integer' } },
    },
    requiredReadPermissions: { type: 'array', items: { type: 'string' } },
    requiredWritePermissions: { type: 'array', items: { type: 'string' } },
    revision: { type: 'integer', description: 'Raised by every change.' },
    createdByMemberId: uuid,
    updatedByMemberId: uuid,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
};

export const snapshotInfoSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'version'],
  properties: { id: { type: 'string' }, version: { type: 'string' }, committedAt: nullableTimestamp },
};

const rowObject: JsonSchema = { type: 'object' };
export const changeSetSchema: JsonSchema = {
  type: 'object',
  required: ['added', 'changed', 'removed', 'counts', 'truncated'],
  properties: {
    added: { type: 'array', items: { type: 'object', properties: { key: { type: ['string', 'null'] }, after: rowObject } } },
    changed: { type: 'array', items: { type: 'object', properties: { key: { type: ['string', 'null'] }, before: rowObject, after: rowObject } } },
    removed: { type: 'array', items: { type: 'object', properties: { key: { type: ['string', 'null'] }, before: rowObject } } },
    counts: { type: 'object', properties: { added: { type: 'integer' }, changed: { type: 'integer' }, removed: { type: 'integer' }, affected: { type: 'integer', description: 'Instead of the split, when recordsWithheld: how many records the action touches.' } } },
    truncated: { type: 'boolean', description: 'A list stops at 500 rows; the counts stay exact.' },
    recordsWithheld: {
      type: 'boolean',
      const: true,
      description: 'Present when the rows that existed before the write were withheld from this key (see the action’s changeSet).',
    },
  },
};

export const writeActionSchema: JsonSchema = {
  type: 'object',
  required: ['actionId', 'dataEndpointId', 'projectId', 'idempotencyKey', 'operation', 'status', 'snapshotBefore', 'snapshotAfter', 'createdAt'],
  properties: {
    actionId: uuid,
    dataEndpointId: uuid,
    projectId: uuid,
    idempotencyKey: { type: 'string' },
    operation: { type: 'string', enum: [...WRITE_OPERATIONS] },
    status: {
      type: 'string',
      enum: ['pending_approval', 'applied', 'rejected', 'expired', 'failed'],
      description: 'pending_approval until enough members approve (then applied or failed), one rejects, or the approval time runs out.',
    },
    input: writeActionInputSchema,
    approval: {
      type: 'object',
      properties: {
        required: { type: 'boolean' },
        approvers: { type: 'integer' },
        expiresAt: nullableTimestamp,
        decisions: {
          type: 'array',
          items: { type: 'object', properties: { memberId: uuid, decision: { type: 'string', enum: ['approve', 'reject'] }, comment: { type: ['string', 'null'] }, decidedAt: timestamp } },
        },
        counted: {
          type: 'integer',
          description: 'The approvals that count now: an approval counts while the key that gave it is active (not revoked, not expired) and holds policy:approve, and its member is still in the workspace. The action applies when they reach approvers; short of it, it stays pending_approval until it expires.',
        },
        notCounted: {
          type: 'array',
          description: 'Approvals given that no longer count, and why. A member decides once: an action they no longer count for needs another member’s approval.',
          items: {
            type: 'object',
            required: ['memberId', 'reason', 'decidedAt'],
            properties: { memberId: uuid, reason: { type: 'string', enum: [...APPROVAL_LAPSES] }, decidedAt: timestamp },
          },
        },
      },
    },
    changeSet: {
      anyOf: [changeSetSchema, { type: 'null' }],
      description: [
        'For an action that waited for approval: the change set its dry run at proposal found, for approvers to judge. null for actions applied at once.',
        'Rows that existed before the write are existing record values: a key without data:read and the endpoint’s named read grants (the grants of its read bindings) gets added, changed and removed empty (a changed row’s after values keep the fields the write left alone, and which rows were added says which keys existed), counts as {affected} without the split, and recordsWithheld true.',
      ].join(' '),
    },
    snapshotBefore: { ...snapshotRefSchema, description: 'The expectedSourceSnapshot the action was proposed against.' },
    snapshotAfter: { anyOf: [snapshotInfoSchema, { type: 'null' }], description: 'The snapshot the applied write created.' },
    affected: { type: ['integer', 'null'] },
    error: {
      type: ['object', 'null'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } },
      description: 'Why a failed action failed (for example snapshot_conflict).',
    },
    proposedByMemberId: uuid,
    workflowId: { type: ['string', 'null'], description: 'The Temporal workflow that waits for approval.' },
    createdAt: timestamp,
    endedAt: nullableTimestamp,
  },
};

export const dryRunResultSchema: JsonSchema = {
  type: 'object',
  required: ['dryRun', 'operation', 'expectedSourceSnapshot', 'changeSet'],
  properties: {
    dryRun: { const: true },
    operation: { type: 'string', enum: [...WRITE_OPERATIONS] },
    expectedSourceSnapshot: snapshotRefSchema,
    affected: { type: 'integer' },
    changeSet: { ...changeSetSchema, description: 'What the action would do, row by row, rows before included: a dry run needs data:read and the endpoint’s named read grants.' },
  },
};

export const writeLogEntrySchema: JsonSchema = {
  type: 'object',
  required: ['id', 'actionId', 'kind', 'idempotencyKey', 'createdAt'],
  properties: {
    id: uuid,
    actionId: uuid,
    kind: { type: 'string', enum: ['proposed', 'approved', 'rejected', 'expired', 'applied', 'failed'] },
    actorMemberId: { anyOf: [uuid, { type: 'null' }], description: 'null for expiry, which no member does.' },
    actorApiKeyId: { anyOf: [uuid, { type: 'null' }] },
    idempotencyKey: { type: 'string' },
    snapshotBefore: { anyOf: [snapshotInfoSchema, { type: 'null' }] },
    snapshotAfter: { anyOf: [snapshotInfoSchema, { type: 'null' }] },
    detail: { type: ['object', 'null'] },
    createdAt: timestamp,
  },
};

export const decisionBodySchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { comment: { type: 'string', maxLength: 2000 } },
};

export const submitWriteQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { dryRun: { type: 'boolean', default: false, description: 'Work out the change set and write nothing.' } },
};
export const listWritesQuery = listQuery({ status: { type: 'string', enum: ['pending_approval', 'applied', 'rejected', 'expired', 'failed'] } });
export const writeLogQuery = listQuery({ actionId: uuid, kind: { type: 'string', enum: ['proposed', 'approved', 'rejected', 'expired', 'applied', 'failed'] } });
