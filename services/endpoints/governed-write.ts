import { NotFoundError, PermissionError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { DataEndpoint, PluginInstallation, Project, WriteAction, WritePolicy } from '../../db/models';
import type { CapabilityRuntime, WriteRequest, WriteResult } from '../../plugins/capability';
import type { WriteActionRequest } from '../../schemas/source-writes';
import { authorizeProject, hasScope, Principal } from '../tenancy/access';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { dataWritePolicy, guardEndpointData, ReadScope, requirePolicyGrants } from './data-guard';
import { capabilityContext, requireDataEndpoint } from './data-endpoints';
import { governedWriteRuntime } from './write-policies';

// What every governed write goes through, at the dry run, at proposal and again at apply: the
// checks (endpoint, project, data guard — with the read guard when the answer shows existing
// records —, write policy), the capability request, the write itself and the metering of an applied one.

export interface PreparedWrite {
  endpoint: DataEndpoint;
  installation: PluginInstallation;
  runtime: CapabilityRuntime;
  policy: WritePolicy;
}

/** The capability request an action makes; provenance is the caller's actionId, stored with each record. */
export function writeRequestOf(input: WriteActionRequest['input'], actionId: string, extra: Pick<WriteRequest, 'dryRun'> = {}): WriteRequest {
  return {
    operation: input.operation,
    rows: input.rows,
    where: input.where,
    set: input.set,
    provenance: { kind: 'write', id: actionId },
    expectedSnapshot: input.expectedSourceSnapshot,
    ...extra,
  };
}

/** Every policy layer of SPEC 5.2, in the order a caller would fix them. */
function authorizeByPolicy(principal: Principal, endpoint: DataEndpoint, policy: WritePolicy | undefined, request: WriteActionRequest): WritePolicy {
  if (!policy) {
    throw new PermissionError('write_policy_missing', `Endpoint ${endpoint.namespace}/${endpoint.name} has no write policy, so it takes no governed writes. A policy:manage key can create one.`);
  }
  const { operation } = request.input;
  if (!policy.allowedOperations.includes(operation)) {
    throw new PermissionError('operation_not_allowed', `The write policy of this endpoint's data allows ${policy.allowedOperations.join(', ')}, not ${operation}.`, { allowedOperations: policy.allowedOperations });
  }
  if (policy.projectIds.length && !policy.projectIds.includes(request.projectId)) {
    throw new PermissionError('project_not_allowed', "The write policy of this endpoint's data does not let this project write to it.", { projectId: request.projectId });
  }
  requirePolicyGrants(principal, policy, 'The write policy');
  if (policy.approvalRequired && !hasScope(principal, 'policy:propose')) {
    throw new PermissionError('insufficient_scope', 'Writes to this endpoint need approval, and proposing one needs the policy:propose scope.', { requiredScopes: ['policy:propose'] });
  }
  return policy;
}

async function requireProjectOf(db: Executor, principal: Principal, projectId: string): Promise<void> {
  const project = await Project.query(db).findOne({ id: projectId, workspaceId: principal.workspaceId });
  if (!project) throw new NotFoundError('project', 'No project with this projectId in this workspace.');
  authorizeProject(principal, projectId);
}

export interface WriteOrigin {
  /** A dry run: its answer is the change set, rows before included. */
  dryRun?: boolean;
  /** The scope that reads the records where the write came from (sparql:query for a SPARQL update). */
  readScope?: ReadScope;
}

/**
 * Does this write's answer show existing record values? A dry run's change set does (rows before),
 * and updates and deletes select records by their values (what they match, and how many, is an
 * answer about the data). Appends and upserts only add what the caller sent.
 */
export const showsRecords = (request: WriteActionRequest, origin: WriteOrigin = {}): boolean =>
  Boolean(origin.dryRun) || request.input.operation === 'update' || request.input.operation === 'delete';

export async function prepareWrite(ctx: OperationContext, endpointId: string, request: WriteActionRequest, origin: WriteOrigin = {}): Promise<PreparedWrite> {
  const { db, principal } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, principal.workspaceId, endpointId);
  const runtime = governedWriteRuntime(endpoint, installation);
  await requireProjectOf(db, principal, request.projectId);
  await guardEndpointData(ctx.deps, db, principal, endpoint, {
    channel: 'governed',
    mode: request.input.operation === 'delete' ? 'delete' : 'write',
    projectId: request.projectId,
    reads: showsRecords(request, origin) ? (origin.readScope ?? 'data:read') : undefined,
  });
  const policy = authorizeByPolicy(principal, endpoint, await dataWritePolicy(db, principal.workspaceId, endpoint.dataIdentity), request);
  return { endpoint, installation, runtime, policy };
}

/** Writes through the capability: inside `ctx.db`'s transaction for stores in Weft's database (as a savepoint), remotely for others. */
export function writeThrough(ctx: OperationContext, prepared: Pick<PreparedWrite, 'endpoint' | 'installation' | 'runtime'>, request: WriteRequest): Promise<WriteResult> {
  return prepared.runtime.writeRecords!(capabilityContext(ctx.db, prepared.installation, ctx.deps), prepared.endpoint.target, request);
}

/** An applied action is metered in its own transaction, keyed by the action: once, however often it is retried. */
export function meterWrite(deps: Pick<ServiceDependencies, 'metering'>, db: Executor, action: WriteAction, actor: { memberId: string | null; apiKeyId: string | null }) {
  return deps.metering.meter(db, { workspaceId: action.workspaceId, projectId: action.projectId, kind: 'governed_write', ref: action.id, actor, quantities: { action: 1, row: action.affected ?? 0 } });
}
