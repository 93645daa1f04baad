import { NotFoundError, PermissionError } from '../../core/errors';
import type { Db, Executor } from '../../db/connection';
import { definitionCache } from '../shared/definition-cache';
import type { DataEndpoint } from '../../db/models';
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

/**
 * The named read grants of an endpoint: the union over every read binding of it in the workspace.
 * A grant protects the data, not one binding: an ungated second binding cannot open what another gates.
 */
export async function endpointReadGrants(db: Executor, workspaceId: string, endpointIds: readonly string[]): Promise<Map<string, string[]>> {
  const grants = new Map<string, string[]>(endpointIds.map((id) => [id, []]));
  if (endpointIds.length === 0) return grants;
  // Outside a transaction, each endpoint's grants come from the definition cache (read_bindings notifies).
  const cache = db.isTransaction ? undefined : definitionCache();
  const missing = endpointIds.filter((id) => {
    const kept = cache?.peek<string[]>(workspaceId, `endpoint-grants:${id}`);
    if (kept) grants.set(id, kept);
    return !kept;
  });
  if (!missing.length) return grants;
  cache?.start(db as Db);
  const ticket = cache?.ticket(workspaceId);
  const rows = await db.raw<{ rows: Array<{ data_endpoint_id: string; grants: string[] }> }>(
    `SELECT data_endpoint_id, array_agg(DISTINCT grant_name ORDER BY grant_name) AS grants
       FROM read_bindings, unnest(required_read_permissions) AS grant_name
      WHERE workspace_id = ? AND data_endpoint_id = ANY(?::uuid[])
      GROUP BY data_endpoint_id`,
    [workspaceId, missing],
  );
  for (const row of rows.rows) grants.set(row.data_endpoint_id, row.grants);
  if (cache && ticket) for (const id of missing) cache.keep(workspaceId, `endpoint-grants:${id}`, grants.get(id)!, ticket);
  return grants;
}

const label = (endpoint: DataEndpoint) => `${endpoint.namespace}/${endpoint.name}`;

/** The checks that need no database: with the endpoint's grants already loaded. */
export function authorizeDataUse(principal: Principal, endpoint: DataEndpoint, use: DataUse, grants: readonly string[]): void {
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
}

/** May this key use this endpoint's records this way? Throws the refusal; loads the endpoint's grants. */
export async function guardEndpointData(db: Executor, principal: Principal, endpoint: DataEndpoint, use: DataUse): Promise<void> {
  const grants = readsRecords(use) ? (await endpointReadGrants(db, principal.workspaceId, [endpoint.id])).get(endpoint.id)! : [];
  authorizeDataUse(principal, endpoint, use, grants);
}

/**
 * Would this key pass the read guard on this endpoint's records (the read scope, shared-resource
 * access, the named read grants)? For answers that show record values to keys that may read them
 * and withhold them from others instead of refusing the whole answer (write actions' change sets).
 */
export async function mayReadEndpointRecords(db: Executor, principal: Principal, endpoint: DataEndpoint, readScope: ReadScope = 'data:read'): Promise<boolean> {
  if (endpoint.workspaceId !== principal.workspaceId || !hasScope(principal, readScope)) return false;
  if (!isUnrestricted(principal) && !principal.workspaceResources) return false;
  checkingGrants(principal, 'read');
  const grants = (await endpointReadGrants(db, principal.workspaceId, [endpoint.id])).get(endpoint.id)!;
  return missingReadPermissions(principal, grants).length === 0;
}

/** The same for several endpoints at once (a pipeline's sources and destinations), one grant query. */
export async function guardEndpointsData(db: Executor, principal: Principal, uses: ReadonlyArray<{ endpoint: DataEndpoint } & DataUse>): Promise<void> {
  const grants = await endpointReadGrants(db, principal.workspaceId, [...new Set(uses.map((use) => use.endpoint.id))]);
  for (const use of uses) authorizeDataUse(principal, use.endpoint, use, grants.get(use.endpoint.id) ?? []);
}

/**
 * Of these endpoints, the ones whose records this key may read through the project's read bindings
 * (term reads, the SPARQL dataset, published queries): it must hold every named grant of each.
 */
export async function endpointsReadableThroughBindings(db: Executor, principal: Principal, endpointIds: readonly string[]): Promise<Set<string>> {
  const grants = await endpointReadGrants(db, principal.workspaceId, [...new Set(endpointIds)]);
  return readableThroughBindings(principal, [...grants].map(([endpointId, required]) => ({ endpointId, grants: required })));
}

/** The same rule with the endpoints' grants already loaded (the SPARQL dataset's catalog reads them with the bindings). */
export function readableThroughBindings(principal: Principal, endpoints: ReadonlyArray<{ endpointId: string; grants: readonly string[] }>): Set<string> {
  checkingGrants(principal, 'read');
  return new Set(endpoints.filter((endpoint) => missingReadPermissions(principal, endpoint.grants).length === 0).map((endpoint) => endpoint.endpointId));
}
