import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { currentSourceSnapshot, dryRunSourceWrite, submitSourceWrite } from './source-writes';
import { getSourceWrite, listSourceWrites } from './write-actions';
import { decideSourceWrite } from './write-approvals';
import { listWriteLog } from './write-log';
import { deleteWritePolicy, getWritePolicy, putWritePolicy } from './write-policies';
import { decisionBodySchema, dryRunResultSchema, listWritesQuery, submitWriteQuery, writeActionSchema, WriteActionRequest, writeActionRequestSchema, writeLogEntrySchema, WritePolicyInput, writePolicyInputSchema, writePolicySchema, writeLogQuery } from '../../schemas/source-writes';
import { idParams, listResponse, nullableTimestamp } from '../../schemas/common';

/** Who can read actions: approvers and policy readers see every one, writers and proposers their own. */
const ACTION_READERS = ['policy:read', 'policy:approve', 'policy:propose', 'data:write'] as const;

const policyResponse = { type: 'object', required: ['writePolicy'], properties: { writePolicy: writePolicySchema } };
const actionResponse = { type: 'object', required: ['writeAction'], properties: { writeAction: writeActionSchema } };

type EndpointParams = { endpoint_id: string };
type ActionParams = { endpoint_id: string; action_id: string };

/** Approving and rejecting: one operation each, built alike. */
function decisionOperation(decision: 'approve' | 'reject') {
  return defineOperation({
    name: decision === 'approve' ? 'approveSourceWrite' : 'rejectSourceWrite',
    summary: decision === 'approve' ? 'Approve a write that waits for approval.' : 'Reject a write that waits for approval.',
    access: { scopes: { anyOf: ['policy:approve'] }, workspaceResources: true, actor: 'accountable' as const, grants: 'read' as const },
    effect: 'external',
    input: { params: idParams('endpoint_id', 'action_id'), body: decisionBodySchema },
    output: { 200: { description: 'The action after the decision', schema: actionResponse } },
    async run(ctx: OperationContext, { params, body }: RequestInput<ActionParams, Record<string, never>, { comment?: string }>): Promise<Reply> {
      return { body: { writeAction: await decideSourceWrite(ctx, params.endpoint_id, params.action_id, decision, body?.comment ?? null) } };
    },
  });
}

export const approveSourceWriteOperation = decisionOperation('approve');
export const rejectSourceWriteOperation = decisionOperation('reject');

export const getWritePolicyOperation = defineOperation({
  name: 'getWritePolicy',
  summary: 'The write policy of an endpoint. 404 while it has none (it then takes no governed writes).',
  access: { scopes: { anyOf: ['policy:read'] }, workspaceResources: true },
  effect: 'read',
  input: { params: idParams('endpoint_id') },
  output: { 200: { description: 'The policy', schema: policyResponse } },
  async run(ctx: OperationContext, { params }: RequestInput<EndpointParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { writePolicy: await getWritePolicy(ctx, params.endpoint_id) } };
  },
});

export const putWritePolicyOperation = defineOperation({
  name: 'putWritePolicy',
  summary: 'Create or replace the write policy of an endpoint.',
  access: { scopes: { anyOf: ['policy:manage'] }, workspaceResources: true, actor: 'accountable' as const },
  effect: 'write',
  input: { params: idParams('endpoint_id'), body: writePolicyInputSchema },
  output: { 200: { description: 'The replaced policy', schema: policyResponse }, 201: { description: 'The new policy', schema: policyResponse } },
  async run(ctx: OperationContext, { params, body }: RequestInput<EndpointParams, Record<string, never>, WritePolicyInput>): Promise<Reply> {
    const { policy, created } = await putWritePolicy(ctx, params.endpoint_id, body);
    return { status: created ? 201 : 200, body: { writePolicy: policy } };
  },
});

export const deleteWritePolicyOperation = defineOperation({
  name: 'deleteWritePolicy',
  summary: 'Remove the write policy: the endpoint takes no governed writes until a new one is made.',
  access: { scopes: { anyOf: ['policy:manage'] }, workspaceResources: true, actor: 'accountable' as const },
  effect: 'write',
  input: { params: idParams('endpoint_id') },
  output: { 204: { description: 'Removed' } },
  async run(ctx: OperationContext, { params }: RequestInput<EndpointParams, Record<string, never>, undefined>): Promise<Reply> {
    await deleteWritePolicy(ctx, params.endpoint_id);
    return { status: 204 };
  },
});

export const getDataEndpointSnapshotOperation = defineOperation({
  name: 'getDataEndpointSnapshot',
  summary: 'The current snapshot of an endpoint that takes governed writes: the expectedSourceSnapshot to write against.',
  access: { scopes: { anyOf: ['data:read'] }, workspaceResources: true },
  effect: 'read',
  input: { params: idParams('endpoint_id') },
  output: {
    200: {
      description: 'The current snapshot',
      schema: { type: 'object', required: ['snapshot'], properties: { snapshot: { type: 'object', required: ['id', 'version'], properties: { id: { type: 'string' }, version: { type: 'string' }, committedAt: nullableTimestamp } } } },
    },
  },
  async run(ctx: OperationContext, { params }: RequestInput<EndpointParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { snapshot: await currentSourceSnapshot(ctx, params.endpoint_id) } };
  },
});

/** The SPARQL door adds what a retry of the update repeats (its text), since each attempt derives a new action. */
type SubmitInput = RequestInput<EndpointParams, { dryRun: boolean }, WriteActionRequest> & { requestDigest?: string };

export const submitSourceWriteOperation = defineOperation({
  name: 'submitSourceWrite',
  summary: 'A governed write (SPEC 2.9): applied at once, or held for approval, as the endpoint’s write policy says.',
  access: { scopes: { anyOf: ['data:write'] }, workspaceResources: true, actor: 'accountable' as const, grants: 'read and write' as const },
  effect: 'external',
  input: { params: idParams('endpoint_id'), query: submitWriteQuery, body: writeActionRequestSchema },
  output: {
    200: { description: 'The applied action, or a dry run’s change set', schema: { anyOf: [actionResponse, dryRunResultSchema] } },
    202: { description: 'The action waits for approval', schema: actionResponse },
  },
  async run(ctx: OperationContext, { params, query, body, requestDigest }: SubmitInput): Promise<Reply> {
    if (query.dryRun) return { body: await dryRunSourceWrite(ctx, params.endpoint_id, body) };
    // Reached through the sparql door, the write is a SPARQL update's: applied after approval with
    // sparqlUpdate's access, and replayed by the update text it came from.
    const outcome = await submitSourceWrite(ctx, params.endpoint_id, body, ctx.door === 'sparql' ? { proposedBy: 'sparqlUpdate', requestDigest } : {});
    return { status: outcome.pending ? 202 : 200, body: { writeAction: outcome.writeAction }, headers: outcome.replayed ? { 'Idempotent-Replayed': 'true' } : undefined };
  },
});

export const listSourceWritesOperation = defineOperation({
  name: 'listSourceWrites',
  summary: 'Governed write actions on an endpoint, newest first: every one for approvers and policy readers, a caller’s own otherwise.',
  access: { scopes: { anyOf: ACTION_READERS }, workspaceResources: true, grants: 'read' as const },
  effect: 'read',
  input: { params: idParams('endpoint_id'), query: listWritesQuery },
  output: { 200: { description: 'A page of actions', schema: listResponse('writeActions', writeActionSchema) } },
  async run(ctx: OperationContext, { params, query }: RequestInput<EndpointParams, PageRequest & { status?: string }, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listSourceWrites(ctx, params.endpoint_id, { limit, offset }, filter) };
  },
});

export const getSourceWriteOperation = defineOperation({
  name: 'getSourceWrite',
  summary: 'One governed write action and its status, readable by its proposer and by approvers.',
  access: { scopes: { anyOf: ACTION_READERS }, workspaceResources: true, grants: 'read' as const },
  effect: 'read',
  input: { params: idParams('endpoint_id', 'action_id') },
  output: { 200: { description: 'The action', schema: actionResponse } },
  async run(ctx: OperationContext, { params }: RequestInput<ActionParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { writeAction: await getSourceWrite(ctx, params.endpoint_id, params.action_id) } };
  },
});

export const listWriteLogOperation = defineOperation({
  name: 'listWriteLog',
  summary: 'The action log of an endpoint, newest first: every proposal, approval, rejection, expiry, application and failure; for a project-restricted key, of its projects’ actions only.',
  access: { scopes: { anyOf: ['policy:read'] }, workspaceResources: true },
  effect: 'read',
  input: { params: idParams('endpoint_id'), query: writeLogQuery },
  output: { 200: { description: 'A page of log entries', schema: listResponse('entries', writeLogEntrySchema) } },
  async run(ctx: OperationContext, { params, query }: RequestInput<EndpointParams, PageRequest & { actionId?: string; kind?: string }, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listWriteLog(ctx, params.endpoint_id, { limit, offset }, filter) };
  },
});

export const sourceWriteOperations = [
  approveSourceWriteOperation,
  rejectSourceWriteOperation,
  getWritePolicyOperation,
  putWritePolicyOperation,
  deleteWritePolicyOperation,
  getDataEndpointSnapshotOperation,
  submitSourceWriteOperation,
  listSourceWritesOperation,
  getSourceWriteOperation,
  listWriteLogOperation,
];
