import { NotFoundError, PermissionError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import type { ServiceDependencies } from '../operations/context';
import { DataEndpoint, WritePolicy } from '../../db/models';
import type { WriteMode } from '../../pipelines/document';
import { checkingGrants } from '../operations/current-operation';
import { authorizeProject, hasScope, isUnrestricted, missingReadPermissions, Principal } from '../tenancy/access';

// The one data guard (SPEC 5.2): every path that reads an endpoint's records or writes them asks
// here whether this key may, with the endpoint in hand. Operations declare the scopes of their
// family (sparql:query, queries:execute, pipelines:execute…); this guard adds what depends on the
// data: the workspace, shared-resource access, the project, the data scopes of direct reads and
// writes, and the endpoint's named read grants.

/**
 * How the data is reached:
 * - records: a direct records read (GET …/records): data:read.
 * - pipeline: a pipeline's source or destination, at validation, preview, launch and commit.
 * - ontology: through a read binding (term reads, the SPARQL dataset, published queries).
 * - bind: creating, replacing or deleting a read binding over the endpoint (a binding's grants
 *   protect the endpoint, so removing or moving one needs them as much as adding one).
 * - governed: a governed write (POST …/source-writes, a SPARQL update), at proposal and at apply:
 *   data:write, and data:delete for deletes; with `reads`, the read guard as well.
 */
export type DataChannel = 'records' | 'pipeline' | 'ontology' | 'bind' | 'governed';

/**
 * The scope that reads the records where a governed write came from: data:read through the records
 * door, sparql:query for a SPARQL update (the scope that reads the same records there).
 */
export type ReadScope = 'data:read' | 'sparql:query';

export interface DataUse {
  channel: DataChannel;
  mode: 'read' | 'write' | 'delete';
  /** A pipeline destination's write mode: what its run's commit does to the data. */
  writeMode?: WriteMode;
  /** The project the data is used in (a pipeline's, a binding's, a write's). */
  projectId?: string;
  /**
   * Governed writes whose answer shows existing record values (a dry run's change set, an update or
   * delete, which select records by their values): the read guard too, the read scope and the
   * endpoint's named read grants.
   */
  reads?: ReadScope;
}

/** Does this use read the endpoint's records, so that its named read grants apply? */
const readsRecords = (use: DataUse): boolean => use.mode === 'read' || use.channel === 'bind' || (use.channel === 'governed' && use.reads !== undefined);

// Guards belong to the data, not to the name a caller uses for it: every endpoint records the data
// its target reaches (data_endpoints.data_identity, from its capability's dataIdentity), and the
// named read grants of the data are those of every read binding of any endpoint over it. A second
// endpoint over a table, or one retargeted onto it, is guarded as the first one is.

/**
 * The named read grants of each endpoint's data: the union over every read binding, in the
 * workspace, of any endpoint over the same data. An ungated second binding or endpoint cannot open
 * what another binding gates.
 */
export async function endpointReadGrants(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, workspaceId: string, endpointIds: readonly string[]): Promise<Map<string, string[]>> {
  const grants = new Map<string, string[]>(endpointIds.map((id) => [id, []]));
  if (endpointIds.length === 0) return grants;
  // Outside a transaction, each endpoint's grants come from the definition cache: read_bindings and
  // data_endpoints notify, so a new binding or a retarget drops them in every process.
  const cache = db.isTransaction ? undefined : deps.definitions;
  const missing = endpointIds.filter((id) => {
    const kept = cache?.peek<string[]>(workspaceId, `endpoint-grants:${id}`);
    if (kept) grants.set(id, kept);
    return !kept;
  });
  if (!missing.length) return grants;
  cache?.start();
  const ticket = cache?.ticket(workspaceId);
  const rows = await db.raw<{ rows: Array<{ data_endpoint_id: string; grants: string[] }> }>(
    `SELECT e.id AS data_endpoint_id, array_agg(DISTINCT grant_name ORDER BY grant_name) AS grants
       FROM data_endpoints e
       JOIN data_endpoints over_data ON over_data.workspace_id = e.workspace_id AND over_data.data_identity = e.data_identity
       JOIN read_bindings b ON b.workspace_id = over_data.workspace_id AND b.data_endpoint_id = over_data.id,
            unnest(b.required_read_permissions) AS grant_name
      WHERE e.workspace_id = ? AND e.id = ANY(?::uuid[])
      GROUP BY e.id`,
    [workspaceId, missing],
  );
  for (const row of rows.rows) grants.set(row.data_endpoint_id, row.grants);
  if (cache && ticket) for (const id of missing) cache.keep(workspaceId, `endpoint-grants:${id}`, grants.get(id)!, ticket);
  return grants;
}

/** The named read grants of data by its identity (an endpoint about to be made or retargeted onto it). */
export async function dataReadGrants(db: Executor, workspaceId: string, dataIdentity: string): Promise<string[]> {
  const { rows } = await db.raw<{ rows: Array<{ grants: string[] | null }> }>(
    `SELECT array_agg(DISTINCT grant_name ORDER BY grant_name) AS grants
       FROM data_endpoints e
       JOIN read_bindings b ON b.workspace_id = e.workspace_id AND b.data_endpoint_id = e.id,
            unnest(b.required_read_permissions) AS grant_name
      WHERE e.workspace_id = ? AND e.data_identity = ?`,
    [workspaceId, dataIdentity],
  );
  return rows[0]?.grants ?? [];
}

/** The write policy of the data, by identity: one per data, whichever endpoint set it. */
export async function dataWritePolicy(db: Executor, workspaceId: string, dataIdentity: string, forUpdate = false): Promise<WritePolicy | undefined> {
  const query = WritePolicy.query(db).findOne({ workspaceId, dataIdentity });
  return forUpdate ? query.forUpdate() : query;
}

/** The endpoints a guard of this data now guards: every endpoint over it, oldest first. */
export async function endpointsOverData(db: Executor, workspaceId: string, dataIdentity: string): Promise<string[]> {
  const rows = await DataEndpoint.query(db).where({ workspaceId, dataIdentity }).orderBy([{ column: 'createdAt' }, { column: 'id' }]).select('id');
  return rows.map((row) => row.id);
}

/** For each endpoint, every endpoint over the same data (itself included), oldest first: what a guard on its data guards. */
export async function endpointsSharingData(db: Executor, workspaceId: string, endpointIds: readonly string[]): Promise<Map<string, string[]>> {
  const shared = new Map<string, string[]>(endpointIds.map((id) => [id, []]));
  if (!endpointIds.length) return shared;
  const { rows } = await db.raw<{ rows: Array<{ id: string; guarded: string[] }> }>(
    `SELECT e.id, array_agg(over_data.id ORDER BY over_data.created_at, over_data.id) AS guarded
       FROM data_endpoints e
       JOIN data_endpoints over_data ON over_data.workspace_id = e.workspace_id AND over_data.data_identity = e.data_identity
      WHERE e.workspace_id = ? AND e.id = ANY(?::uuid[])
      GROUP BY e.id`,
    [workspaceId, [...new Set(endpointIds)]],
  );
  for (const row of rows) shared.set(row.id, row.guarded);
  return shared;
}

/** What a pipeline run's commit does to a destination, as write-policy operations (replace swaps the table: it deletes). */
const POLICY_OPERATIONS: Record<WriteMode, Array<WritePolicy['allowedOperations'][number]>> = { append: ['append'], upsert: ['upsert'], replace: ['append', 'delete'] };

/**
 * A pipeline run writing data that has a write policy (SPEC 5.2, accountable actor and policy): the
 * policy must let runs write (allowPipelineRuns), and then the launching key needs data:write (and
 * data:delete to replace), the policy's project, operations and named grants. A run cannot wait for
 * approvals: a policy that lets runs write lets them write without.
 */
export function authorizeRunWrite(principal: Principal, endpoint: DataEndpoint, policy: WritePolicy, use: DataUse): void {
  if (!policy.allowPipelineRuns) {
    throw new PermissionError('write_policy_forbids_runs', `The records of ${label(endpoint)} have a write policy that takes governed writes only, not pipeline runs; a policy:manage key can allow runs with allowPipelineRuns.`, { writePolicyId: policy.id });
  }
  const operations = POLICY_OPERATIONS[use.writeMode ?? 'append'];
  const scopes = ['data:write' as const, ...(operations.includes('delete') ? ['data:delete' as const] : [])].filter((scope) => !hasScope(principal, scope));
  if (scopes.length) {
    throw new PermissionError('insufficient_scope', `A run writing ${label(endpoint)}, whose write policy lets runs write, needs the scope${scopes.length > 1 ? 's' : ''} ${scopes.join(' and ')}.`, { requiredScopes: scopes, writePolicyId: policy.id });
  }
  const refused = operations.filter((operation) => !policy.allowedOperations.includes(operation));
  if (refused.length) {
    throw new PermissionError('operation_not_allowed', `The write policy of ${label(endpoint)} allows ${policy.allowedOperations.join(', ') || 'no operation'}; a ${use.writeMode ?? 'append'} run needs ${operations.join(' and ')}.`, { allowedOperations: policy.allowedOperations, writePolicyId: policy.id });
  }
  if (use.projectId !== undefined && policy.projectIds.length && !policy.projectIds.includes(use.projectId)) {
    throw new PermissionError('project_not_allowed', `The write policy of ${label(endpoint)} does not let this project write to it.`, { writePolicyId: policy.id });
  }
  requirePolicyGrants(principal, policy, `The write policy of ${label(endpoint)}`);
}

/** The named grants a write policy asks of every writer: its read grants and its write grants. `whose` starts the refusal's sentence. */
export function requirePolicyGrants(principal: Principal, policy: WritePolicy, whose: string): void {
  checkingGrants(principal, 'write');
  const missingRead = missingReadPermissions(principal, policy.requiredReadPermissions);
  const missingWrite = policy.requiredWritePermissions.filter((grant) => !principal.writePermissions.includes(grant));
  if (missingRead.length || missingWrite.length) {
    throw new PermissionError('missing_grants', `${whose} needs named grants this API key lacks: ${[...missingRead.map((g) => `read ${g}`), ...missingWrite.map((g) => `write ${g}`)].join(', ')}.`, {
      missingReadPermissions: missingRead,
      missingWritePermissions: missingWrite,
      writePolicyId: policy.id,
    });
  }
}

const label = (endpoint: DataEndpoint) => `${endpoint.namespace}/${endpoint.name}`;

/** Does this use write the data as a pipeline run, so that the data's write policy applies? */
const runWrites = (use: DataUse): boolean => use.channel === 'pipeline' && use.mode !== 'read';

/** The checks that need no database: with the endpoint's grants (and, for a run's write, the data's write policy) already loaded. */
export function authorizeDataUse(principal: Principal, endpoint: DataEndpoint, use: DataUse, grants: readonly string[], policy?: WritePolicy): void {
  // Another workspace's endpoint does not exist for this key.
  if (endpoint.workspaceId !== principal.workspaceId) throw new NotFoundError('data_endpoint', 'No data endpoint with this id in this workspace.');
  const needed = use.channel === 'records' ? ['data:read' as const]
    : use.channel === 'governed' ? [...(use.mode === 'delete' ? ['data:write', 'data:delete'] as const : ['data:write'] as const), ...(use.reads ? [use.reads] : [])]
      : [];
  const missing = needed.filter((scope) => !hasScope(principal, scope));
  if (missing.length) {
    throw new PermissionError('insufficient_scope', `Using the records of ${label(endpoint)} this way needs the scope${missing.length > 1 ? 's' : ''} ${missing.join(' and ')}.`, { requiredScopes: missing });
  }
  // Endpoints are shared workspace resources. Reading through an existing binding of the key's
  // project is the project's own door to that data; every other use needs shared-resource access.
  if (use.channel !== 'ontology' && !isUnrestricted(principal) && !principal.workspaceResources) {
    throw new PermissionError('workspace_resources_denied', `This project-restricted API key has no access to shared workspace resources (workspaceResources is false), so it cannot use the records of ${label(endpoint)}.`);
  }
  if (use.projectId !== undefined) authorizeProject(principal, use.projectId, { named: false });
  if (readsRecords(use)) {
    checkingGrants(principal, 'read');
    const lacking = missingReadPermissions(principal, grants);
    if (lacking.length) {
      throw new PermissionError('read_grant_required', `The records of ${label(endpoint)} need named read grants this API key lacks: ${lacking.join(', ')}.`, { missingReadPermissions: lacking });
    }
  }
  if (policy && runWrites(use)) authorizeRunWrite(principal, endpoint, policy, use);
}

/** May this key use this endpoint's records this way? Throws the refusal; loads the endpoint's grants. */
export async function guardEndpointData(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, principal: Principal, endpoint: DataEndpoint, use: DataUse): Promise<void> {
  const grants = readsRecords(use) ? (await endpointReadGrants(deps, db, principal.workspaceId, [endpoint.id])).get(endpoint.id)! : [];
  const policy = runWrites(use) ? await dataWritePolicy(db, principal.workspaceId, endpoint.dataIdentity) : undefined;
  authorizeDataUse(principal, endpoint, use, grants, policy);
}

/**
 * Would this key pass the read guard on this endpoint's records (the read scope, shared-resource
 * access, the named read grants)? For answers that show record values to keys that may read them
 * and withhold them from others instead of refusing the whole answer (write actions' change sets).
 */
export async function mayReadEndpointRecords(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, principal: Principal, endpoint: DataEndpoint, readScope: ReadScope = 'data:read'): Promise<boolean> {
  if (endpoint.workspaceId !== principal.workspaceId || !hasScope(principal, readScope)) return false;
  if (!isUnrestricted(principal) && !principal.workspaceResources) return false;
  checkingGrants(principal, 'read');
  const grants = (await endpointReadGrants(deps, db, principal.workspaceId, [endpoint.id])).get(endpoint.id)!;
  return missingReadPermissions(principal, grants).length === 0;
}

/** The same for several endpoints at once (a pipeline's sources and destinations), one grant query. */
export async function guardEndpointsData(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, principal: Principal, uses: ReadonlyArray<{ endpoint: DataEndpoint } & DataUse>): Promise<void> {
  const grants = await endpointReadGrants(deps, db, principal.workspaceId, [...new Set(uses.map((use) => use.endpoint.id))]);
  const written = [...new Set(uses.filter(runWrites).map((use) => use.endpoint.dataIdentity))];
  const policies = written.length ? await WritePolicy.query(db).where({ workspaceId: principal.workspaceId }).whereIn('dataIdentity', written) : [];
  const policyOf = new Map(policies.map((policy) => [policy.dataIdentity, policy]));
  for (const use of uses) authorizeDataUse(principal, use.endpoint, use, grants.get(use.endpoint.id) ?? [], policyOf.get(use.endpoint.dataIdentity));
}

/**
 * Making an endpoint over data, or retargeting one onto it, names that data anew: the key needs
 * what reading it needs (its named read grants), and for a destination over data with a write
 * policy, what writing it under the policy needs (data:write and the policy's grants). Data that
 * nothing guards asks nothing more than the endpoint operation does.
 */
export async function guardNamingData(db: Executor, principal: Principal, name: { namespace: string; name: string; role: string }, dataIdentity: string): Promise<void> {
  const label = `${name.namespace}/${name.name}`;
  const grants = await dataReadGrants(db, principal.workspaceId, dataIdentity);
  if (grants.length) {
    checkingGrants(principal, 'read');
    const lacking = missingReadPermissions(principal, grants);
    if (lacking.length) {
      throw new PermissionError('read_grant_required', `The data ${label} would reach is guarded by named read grants this API key lacks: ${lacking.join(', ')}. An endpoint over it needs what reading it needs.`, { missingReadPermissions: lacking });
    }
  }
  if (name.role !== 'destination') return;
  const policy = await dataWritePolicy(db, principal.workspaceId, dataIdentity);
  if (!policy) return;
  if (!hasScope(principal, 'data:write')) {
    throw new PermissionError('insufficient_scope', `The data ${label} would write has a write policy: a destination over it needs the scope data:write.`, { requiredScopes: ['data:write'], writePolicyId: policy.id });
  }
  requirePolicyGrants(principal, policy, `The write policy of the data ${label} would write`);
}

/**
 * Of these endpoints, the ones whose records this key may read through the project's read bindings
 * (term reads, the SPARQL dataset, published queries): it must hold every named grant of each.
 */
export async function endpointsReadableThroughBindings(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, principal: Principal, endpointIds: readonly string[]): Promise<Set<string>> {
  const grants = await endpointReadGrants(deps, db, principal.workspaceId, [...new Set(endpointIds)]);
  return readableThroughBindings(principal, [...grants].map(([endpointId, required]) => ({ endpointId, grants: required })));
}

/** The same rule with the endpoints' grants already loaded (the SPARQL dataset's catalog reads them with the bindings). */
export function readableThroughBindings(principal: Principal, endpoints: ReadonlyArray<{ endpointId: string; grants: readonly string[] }>): Set<string> {
  checkingGrants(principal, 'read');
  return new Set(endpoints.filter((endpoint) => missingReadPermissions(principal, endpoint.grants).length === 0).map((endpoint) => endpoint.endpointId));
}
