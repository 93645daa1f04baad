import { defineRoute } from '../route-spec';
import type { PageRequest } from '../../services/shared/pagination';
import { currentSourceSnapshot, decideSourceWrite, dryRunSourceWrite, getSourceWrite, listSourceWrites, listWriteLog, submitSourceWrite } from '../../services/endpoints/source-writes';
import { deleteWritePolicy, getWritePolicy, putWritePolicy } from '../../services/endpoints/write-policies';
import { idParams, listQuery, listResponse, nullableTimestamp, uuid } from '../schemas/common';
import {
  decisionBodySchema,
  dryRunResultSchema,
  WriteActionRequest,
  writeActionRequestSchema,
  writeActionSchema,
  writeLogEntrySchema,
  WritePolicyInput,
  writePolicyInputSchema,
  writePolicySchema,
} from '../schemas/source-writes';

// Governed source writes under a data endpoint (SPEC 2.9, 4.4): its write policy, the write
// route, the actions it creates with their approvals, and the action log.

const BASE = '/api/v1/data-endpoints/:endpoint_id';
const TAG = 'Governed writes';
const endpointParams = idParams('endpoint_id');
const actionParams = idParams('endpoint_id', 'action_id');
const policyResponse = { type: 'object', required: ['writePolicy'], properties: { writePolicy: writePolicySchema } };
const actionResponse = { type: 'object', required: ['writeAction'], properties: { writeAction: writeActionSchema } };
/** Who can read actions: approvers and policy readers see every one, writers and proposers their own. */
const ACTION_READERS = ['policy:read', 'policy:approve', 'policy:propose', 'data:write'] as const;

type EndpointParams = { endpoint_id: string };
type ActionParams = { endpoint_id: string; action_id: string };

function decisionRoute(decision: 'approve' | 'reject') {
  return defineRoute<ActionParams, Record<string, never>, { comment?: string }>({
    method: 'post',
    path: `${BASE}/writes/:action_id/${decision}`,
    operationId: decision === 'approve' ? 'approveSourceWrite' : 'rejectSourceWrite',
    summary: decision === 'approve' ? 'Approve a write that waits for approval.' : 'Reject a write that waits for approval.',
    description:
      decision === 'approve'
        ? 'Needs policy:approve and a member other than the proposer; each member approves once. The approval that completes the count applies the write, and the answer shows the outcome (applied, or failed with its error).'
        : 'Needs policy:approve and a member other than the proposer. One rejection ends the action; nothing is written.',
    tag: TAG,
    auth: { scopes: ['policy:approve'], workspaceResources: true, accountableActor: true },
    transaction: false,
    params: actionParams,
    body: decisionBodySchema,
    errors: [{ status: 409, description: 'The action no longer waits for decisions, or this member already decided.' }, { status: 503 }],
    responses: { 200: { description: 'The action after the decision', schema: actionResponse } },
    async handler({ principal, params, body, deps }) {
      return { body: { writeAction: await decideSourceWrite(deps, principal, params.endpoint_id, params.action_id, decision, body?.comment ?? null) } };
    },
  });
}

export const sourceWriteRoutes = [
  defineRoute<EndpointParams>({
    method: 'get',
    path: `${BASE}/write-policy`,
    operationId: 'getWritePolicy',
    summary: 'The write policy of an endpoint. 404 while it has none (it then takes no governed writes).',
    tag: TAG,
    auth: { scopes: ['policy:read'], workspaceResources: true },
    params: endpointParams,
    responses: { 200: { description: 'The policy', schema: policyResponse } },
    async handler({ db, principal, params }) {
      return { body: { writePolicy: await getWritePolicy(db, principal.workspaceId, params.endpoint_id) } };
    },
  }),
  defineRoute<EndpointParams, Record<string, never>, WritePolicyInput>({
    method: 'put',
    path: `${BASE}/write-policy`,
    operationId: 'putWritePolicy',
    summary: 'Create or replace the write policy of an endpoint.',
    description:
      'Which operations are allowed, which projects may write (empty: all), whether approval is needed and by how many members, the time limit for approvals, and the named read and write grants a writer’s key must hold. Only endpoints whose capability has transactional writes take a policy. Actions already waiting keep the terms they were proposed under.',
    tag: TAG,
    auth: { scopes: ['policy:manage'], workspaceResources: true, accountableActor: true },
    params: endpointParams,
    body: writePolicyInputSchema,
    responses: { 200: { description: 'The replaced policy', schema: policyResponse }, 201: { description: 'The new policy', schema: policyResponse } },
    async handler({ db, principal, params, body }) {
      const { policy, created } = await putWritePolicy(db, principal, params.endpoint_id, body);
      return { status: created ? 201 : 200, body: { writePolicy: policy } };
    },
  }),
  defineRoute<EndpointParams>({
    method: 'delete',
    path: `${BASE}/write-policy`,
    operationId: 'deleteWritePolicy',
    summary: 'Remove the write policy: the endpoint takes no governed writes until a new one is made.',
    tag: TAG,
    auth: { scopes: ['policy:manage'], workspaceResources: true, accountableActor: true },
    params: endpointParams,
    responses: { 204: { description: 'Removed' } },
    async handler({ db, principal, params }) {
      await deleteWritePolicy(db, principal.workspaceId, params.endpoint_id);
      return { status: 204 };
    },
  }),
  defineRoute<EndpointParams>({
    method: 'get',
    path: `${BASE}/snapshot`,
    operationId: 'getDataEndpointSnapshot',
    summary: 'The current snapshot of an endpoint that takes governed writes: the expectedSourceSnapshot to write against.',
    description:
      'managed_table: the latest committed snapshot ({id: "empty", version: "0"} before the first write). postgres_table: a digest of the table’s contents (id "md5:…", version the row count), so any change by anyone moves it; computing it scans the table.',
    tag: TAG,
    auth: { scopes: ['data:read'], workspaceResources: true },
    params: endpointParams,
    errors: [{ status: 502 }],
    responses: {
      200: {
        description: 'The current snapshot',
        schema: { type: 'object', required: ['snapshot'], properties: { snapshot: { type: 'object', required: ['id', 'version'], properties: { id: { type: 'string' }, version: { type: 'string' }, committedAt: nullableTimestamp } } } },
      },
    },
    async handler({ principal, params, deps }) {
      return { body: { snapshot: await currentSourceSnapshot(deps, principal.workspaceId, params.endpoint_id) } };
    },
  }),
  defineRoute<EndpointParams, { dryRun: boolean }, WriteActionRequest>({
    method: 'post',
    path: `${BASE}/writes`,
    operationId: 'submitSourceWrite',
    summary: 'A governed write (SPEC 2.9): applied at once, or held for approval, as the endpoint’s write policy says.',
    description: [
      'Needs data:write (and data:delete for deletes), the named grants the policy requires, workspaceResources for project-restricted keys, an accountable actor, and policy:propose when the policy requires approval.',
      'The write applies in one transaction only if the endpoint’s current snapshot equals input.expectedSourceSnapshot; otherwise 409 snapshot_conflict names the current snapshot and nothing is written.',
      'Answers 200 with the applied action (snapshotAfter is the new snapshot), or 202 with an action in pending_approval. The same idempotencyKey with the same body returns the first outcome (a failure is returned again) without writing again; with another body it is 409 idempotency_key_reused.',
      'With ?dryRun=true nothing is written and no action is recorded: the answer is the change set the action would make against the expected snapshot.',
    ].join(' '),
    tag: TAG,
    auth: { scopes: ['data:write'], workspaceResources: true, accountableActor: true },
    transaction: false,
    params: endpointParams,
    query: {
      type: 'object',
      additionalProperties: false,
      properties: { dryRun: { type: 'boolean', default: false, description: 'Work out the change set and write nothing.' } },
    },
    body: writeActionRequestSchema,
    errors: [{ status: 409, description: 'snapshot_conflict, idempotency_key_reused, action_id_taken or duplicate_key.' }, { status: 502 }, { status: 503 }],
    responses: {
      200: { description: 'The applied action, or a dry run’s change set', schema: { anyOf: [actionResponse, dryRunResultSchema] } },
      202: { description: 'The action waits for approval', schema: actionResponse },
    },
    async handler({ principal, params, query, body, deps }) {
      if (query.dryRun) return { body: await dryRunSourceWrite(deps, principal, params.endpoint_id, body) };
      const outcome = await submitSourceWrite(deps, principal, params.endpoint_id, body);
      return { status: outcome.pending ? 202 : 200, body: { writeAction: outcome.writeAction }, headers: outcome.replayed ? { 'Idempotent-Replayed': 'true' } : undefined };
    },
  }),
  defineRoute<EndpointParams, PageRequest & { status?: string }>({
    method: 'get',
    path: `${BASE}/writes`,
    operationId: 'listSourceWrites',
    summary: 'Governed write actions on an endpoint, newest first: every one for approvers and policy readers, a caller’s own otherwise.',
    tag: TAG,
    auth: { scopes: ACTION_READERS, workspaceResources: true },
    params: endpointParams,
    query: listQuery({ status: { type: 'string', enum: ['pending_approval', 'applied', 'rejected', 'expired', 'failed'] } }),
    responses: { 200: { description: 'A page of actions', schema: listResponse('writeActions', writeActionSchema) } },
    async handler({ db, principal, params, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listSourceWrites(db, principal, params.endpoint_id, { limit, offset }, filter) };
    },
  }),
  defineRoute<ActionParams>({
    method: 'get',
    path: `${BASE}/writes/:action_id`,
    operationId: 'getSourceWrite',
    summary: 'One governed write action and its status, readable by its proposer and by approvers.',
    tag: TAG,
    auth: { scopes: ACTION_READERS, workspaceResources: true },
    params: actionParams,
    responses: { 200: { description: 'The action', schema: actionResponse } },
    async handler({ db, principal, params }) {
      return { body: { writeAction: await getSourceWrite(db, principal, params.endpoint_id, params.action_id) } };
    },
  }),
  decisionRoute('approve'),
  decisionRoute('reject'),
  defineRoute<EndpointParams, PageRequest & { actionId?: string; kind?: string }>({
    method: 'get',
    path: `${BASE}/write-log`,
    operationId: 'listWriteLog',
    summary: 'The action log of an endpoint, newest first: every proposal, approval, rejection, expiry, application and failure.',
    tag: TAG,
    auth: { scopes: ['policy:read'], workspaceResources: true },
    params: endpointParams,
    query: listQuery({ actionId: uuid, kind: { type: 'string', enum: ['proposed', 'approved', 'rejected', 'expired', 'applied', 'failed'] } }),
    responses: { 200: { description: 'A page of log entries', schema: listResponse('entries', writeLogEntrySchema) } },
    async handler({ db, principal, params, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listWriteLog(db, principal, params.endpoint_id, { limit, offset }, filter) };
    },
  }),
];
