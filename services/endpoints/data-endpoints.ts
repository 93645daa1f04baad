import { endpointReferenceFinders } from './endpoint-references';
import { raw } from 'objection';
import { targetCredentialProblems } from './target-credentials';
import { ConflictError, FieldProblem, InputError, NotFoundError } from '../../core/errors';
import { schemaProblems, summarizeProblems } from '../../core/schema-validator';
import type { Executor } from '../../db/connection';
import { DataEndpoint, PluginInstallation, ReadBinding, SchemaHints } from '../../db/models';
import { dataWritePolicy, guardNamingData } from './data-guard';
import type { CapabilityContext, CapabilityRuntime, CheckResult, DiscoveredSchema } from '../../plugins/capability';
import { findCapability } from '../../plugins';
import { openInstallation } from './plugins';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { presentDataEndpoint, type DataEndpointView } from './presenters';

export interface DataEndpointInput {
  name: string;
  namespace: string;
  role: string;
  pluginCapabilityInstallationId: string;
  contractKind: string;
  target: Record<string, unknown>;
  schemaHints?: SchemaHints;
  freshness?: string;
  ownerTeam?: string;
  trustRank?: string;
  description?: string;
  accepts?: string[];
  emits?: string[];
}

type ClearableField = 'schemaHints' | 'freshness' | 'ownerTeam' | 'trustRank' | 'description';
/** Changed fields; optional descriptive ones may be null to clear them. */
export type DataEndpointPatch = Partial<Omit<DataEndpointInput, 'role' | 'pluginCapabilityInstallationId' | 'contractKind' | ClearableField>> & {
  [K in ClearableField]?: DataEndpointInput[K] | null;
};

async function requireInstallation(db: Executor, workspaceId: string, installationId: string): Promise<PluginInstallation> {
  const installation = await PluginInstallation.query(db).findOne({ id: installationId, workspaceId });
  if (!installation) {
    throw new InputError('unknown_installation', 'pluginCapabilityInstallationId is not a plugin installed in this workspace.', [
      { path: '/pluginCapabilityInstallationId', message: 'is not installed in this workspace' },
    ]);
  }
  return installation;
}

/** Every rule of SPEC 2.2 that depends on the capability: role, contract, formats, target contract. */
function endpointProblems(runtime: CapabilityRuntime, installation: PluginInstallation, encryptionKey: Buffer, input: Pick<DataEndpointInput, 'role' | 'contractKind' | 'target' | 'accepts' | 'emits'>): FieldProblem[] {
  const { definition } = runtime;
  const problems: FieldProblem[] = [];
  const roleEntry = definition.roles.find((r) => r.role === input.role);
  if (!roleEntry) {
    problems.push({ path: '/role', message: `${definition.name} supports the roles ${definition.roles.map((r) => r.role).join(', ')}` });
  } else if (roleEntry.contractKind !== input.contractKind) {
    problems.push({ path: '/contractKind', message: `must be ${roleEntry.contractKind} for a ${input.role} of ${definition.name}` });
  }
  for (const [field, allowed] of [['accepts', definition.accepts], ['emits', definition.emits]] as const) {
    (input[field] ?? []).forEach((format, index) => {
      if (!allowed.includes(format)) problems.push({ path: `/${field}/${index}`, message: `${definition.name} ${field} ${allowed.join(', ') || 'no formats'}` });
    });
  }
  const connectionProblems = targetCredentialProblems(input.target, definition.targetSchema).map((p) => ({ ...p, path: `/target${p.path}` }));
  if (connectionProblems.length) return [...problems, ...connectionProblems];
  const contractProblems = schemaProblems(definition.targetSchema, input.target, { prefix: '/target' });
  if (contractProblems.length) return [...problems, ...contractProblems];
  const semantic = runtime.validateTarget?.(input.target, openInstallation(installation, encryptionKey)) ?? [];
  return [...problems, ...semantic.map((p) => ({ ...p, path: `/target${p.path}` }))];
}

function assertValid(problems: FieldProblem[]): void {
  if (problems.length) {
    throw new InputError('endpoint_invalid', `The data endpoint does not match its capability contract: ${summarizeProblems(problems)}`, problems);
  }
}

/** Configures an endpoint. Starts no ingestion and grants no database permission. */
export async function createDataEndpoint(ctx: OperationContext, input: DataEndpointInput): Promise<DataEndpointView> {
  const { db, deps: { encryptionKey }, principal: actor } = ctx;
  const installation = await requireInstallation(db, actor.workspaceId, input.pluginCapabilityInstallationId);
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  // A target may leave defaulted fields out; store the validated form with defaults filled in.
  const target = structuredClone(input.target);
  assertValid(endpointProblems(runtime, installation, encryptionKey, { ...input, target }));
  await assertNameFree(db, actor.workspaceId, input.namespace, input.name);
  const dataIdentity = runtime.dataIdentity(target, installation.settings);
  await guardNamingData(db, actor, input, dataIdentity);
  const endpoint = await DataEndpoint.query(db).insertAndFetch({
    workspaceId: actor.workspaceId,
    pluginInstallationId: installation.id,
    name: input.name,
    namespace: input.namespace,
    role: input.role,
    contractKind: input.contractKind,
    target,
    dataIdentity,
    schemaHints: input.schemaHints ?? null,
    freshness: input.freshness ?? null,
    ownerTeam: input.ownerTeam ?? null,
    trustRank: input.trustRank ?? null,
    description: input.description ?? null,
    accepts: input.accepts ?? [],
    emits: input.emits ?? [],
    createdByMemberId: actor.memberId,
  });
  return presentDataEndpoint(endpoint, installation);
}

async function assertNameFree(db: Executor, workspaceId: string, namespace: string, name: string, exceptId?: string): Promise<void> {
  const query = DataEndpoint.query(db).findOne({ workspaceId, namespace, name });
  if (exceptId) query.whereNot('id', exceptId);
  if (await query) throw new ConflictError('endpoint_name_taken', `An endpoint named ${namespace}/${name} already exists in this workspace.`);
}

/**
 * A lookup (deps, db, workspaceId, …): pipeline runs, previews and governed writes call it on the executor they hold;
 * outside a transaction the runtime's definition cache (deps.definitions) answers.
 * `use`: true locks the rows (FOR UPDATE); `{ shared: true }`, for callers that only read the
 * endpoint (records reads), hands out the definition cache's own instance outside a transaction,
 * not a copy: it must not be changed.
 */
export async function requireDataEndpoint(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, workspaceId: string, endpointId: string, use: boolean | { shared: true } = false): Promise<{ endpoint: DataEndpoint; installation: PluginInstallation }> {
  // One round trip: every data-endpoint route starts here.
  const query = () => DataEndpoint.query(db)
    .withGraphJoined('installation', { joinOperation: 'innerJoin' })
    .findOne({ 'data_endpoints.id': endpointId, 'data_endpoints.workspaceId': workspaceId });
  // Locks the installation row too, harmlessly: the public API never changes installations. Reads
  // outside a transaction come from the definition cache, as a copy (callers may patch theirs).
  const cached = async () => (await deps.definitions.get(workspaceId, `endpoint:${endpointId}`, async () => (await query()) ?? null)) ?? undefined;
  const endpoint = use === true ? await query().forUpdate()
    : db.isTransaction ? await query()
      : use ? await cached() : (await cached())?.$clone();
  if (!endpoint?.installation) throw new NotFoundError('data_endpoint', 'No data endpoint with this id in this workspace.');
  return { endpoint, installation: endpoint.installation };
}

export async function getDataEndpoint(ctx: OperationContext, endpointId: string): Promise<DataEndpointView> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  return presentDataEndpoint(endpoint, installation);
}

export async function listDataEndpoints(ctx: OperationContext, page: PageRequest, filter: { name?: string; namespace?: string; role?: string }) {
  const { db, principal: { workspaceId } } = ctx;
  const base = DataEndpoint.query(db).where({ workspaceId });
  if (filter.name) base.where('name', filter.name);
  if (filter.namespace) base.where('namespace', filter.namespace);
  if (filter.role) base.where('role', filter.role);
  const { rows, pagination } = await pageOf(base, page);
  const installations = await PluginInstallation.query(db).where({ workspaceId }).whereIn('id', [...new Set(rows.map((r) => r.pluginInstallationId))]);
  const byId = new Map(installations.map((i) => [i.id, i]));
  return { dataEndpoints: rows.map((r) => presentDataEndpoint(r, byId.get(r.pluginInstallationId)!)), pagination };
}

export async function updateDataEndpoint(ctx: OperationContext, endpointId: string, patch: DataEndpointPatch): Promise<DataEndpointView> {
  const { db, deps: { encryptionKey }, principal } = ctx;
  const { workspaceId } = principal;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId, true);
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  const next = { ...endpoint, ...patch, target: structuredClone(patch.target ?? endpoint.target) };
  // The target is revalidated on every change, as are formats against the installed contract.
  assertValid(endpointProblems(runtime, installation, encryptionKey, next));
  if (patch.name !== undefined || patch.namespace !== undefined) await assertNameFree(db, workspaceId, next.namespace, next.name, endpoint.id);
  // Only a new target can move the endpoint to other data.
  const dataIdentity = patch.target === undefined ? endpoint.dataIdentity : runtime.dataIdentity(next.target, installation.settings);
  if (dataIdentity !== endpoint.dataIdentity) await guardRetarget(ctx, endpoint, next, dataIdentity);
  const updated = await endpoint.$query(db).patchAndFetch({ ...patch, target: next.target, dataIdentity, updatedAt: raw('now()') as unknown as Date });
  return presentDataEndpoint(updated, installation);
}

/**
 * A target change that moves the endpoint to other data. A guard never stays behind on a name:
 * an endpoint whose bindings or write policy guard the data it reaches cannot leave it (409), and
 * the data it moves onto asks what making an endpoint over it asks.
 */
async function guardRetarget(ctx: OperationContext, endpoint: DataEndpoint, next: { namespace: string; name: string; role: string }, dataIdentity: string): Promise<void> {
  const { db, principal } = ctx;
  const bindings = await ReadBinding.query(db).where({ workspaceId: endpoint.workspaceId, dataEndpointId: endpoint.id }).select('id');
  const policy = await dataWritePolicy(db, endpoint.workspaceId, endpoint.dataIdentity);
  if (bindings.length || policy) {
    const guards = [...(bindings.length ? [`${bindings.length} read binding${bindings.length > 1 ? 's' : ''}`] : []), ...(policy ? ['a write policy'] : [])].join(' and ');
    throw new ConflictError('endpoint_guarded', `Endpoint ${endpoint.namespace}/${endpoint.name} has ${guards} on the data it reaches, so its target cannot move to other data: the guard would stay behind or follow the name. Make a new endpoint for the other data.`, {
      readBindingIds: bindings.map((binding) => binding.id),
      ...(policy ? { writePolicyId: policy.id } : {}),
    });
  }
  await guardNamingData(db, principal, next, dataIdentity);
}

/** Where another resource refers to an endpoint (endpoint-references.ts lists every kind). */
export type EndpointReferenceFinder = (db: Executor, workspaceId: string, endpointId: string) => Promise<Array<{ kind: string; id: string; name?: string }>>;

export async function deleteDataEndpoint(ctx: OperationContext, endpointId: string): Promise<void> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId, true);
  const references = (await Promise.all(endpointReferenceFinders().map((find) => find(db, workspaceId, endpointId)))).flat();
  if (references.length) {
    const names = references.map((r) => `${r.kind} ${r.name ?? r.id}`).join(', ');
    throw new ConflictError('endpoint_referenced', `The endpoint is still referenced by ${names}. Remove those references first.`, { references });
  }
  await endpoint.$query(db).delete();
}

/**
 * What a capability's context takes from the runtime's dependencies: the key that opens an installation's credentials, managed_table's memory, postgres_table's pools and who hears of committed snapshots;
 * and the definition cache, where the SPARQL dataset keeps the snapshots it read.
 */
export type CapabilityDependencies = Pick<ServiceDependencies, 'encryptionKey' | 'managedTables' | 'postgresTablePools' | 'snapshotNotices' | 'definitions'>;

export function capabilityContext(db: Executor, installation: PluginInstallation, deps: CapabilityDependencies): CapabilityContext {
  return { installation: openInstallation(installation, deps.encryptionKey), db: db as CapabilityContext['db'], managedTables: deps.managedTables, postgresTablePools: deps.postgresTablePools, snapshotNotices: deps.snapshotNotices };
}

export async function checkDataEndpoint(ctx: OperationContext, endpointId: string): Promise<CheckResult & { checkedAt: string }> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  const result = await runtime.checkConnection(capabilityContext(db, installation, ctx.deps), endpoint.target);
  return { ...result, checkedAt: new Date().toISOString() };
}

/** Validates the stored configuration against the installed capability's current contract. */
export async function validateDataEndpoint(ctx: OperationContext, endpointId: string): Promise<{ valid: boolean; problems: FieldProblem[] }> {
  const { db, deps: { encryptionKey }, principal: { workspaceId } } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  const problems = endpointProblems(findCapability(installation.capability, installation.capabilityVersion), installation, encryptionKey, { ...endpoint, target: structuredClone(endpoint.target) });
  return { valid: problems.length === 0, problems };
}

export async function discoverEndpointSchema(ctx: OperationContext, endpointId: string): Promise<DiscoveredSchema> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  if (!runtime.definition.supports.schemaDiscovery) throw new InputError('schema_discovery_not_supported', `${runtime.definition.name} does not support schema discovery.`);
  const discovered = await runtime.discoverSchema(capabilityContext(db, installation, ctx.deps), endpoint.target);
  // A key the endpoint declares wins over what the store reports.
  return { fields: discovered.fields, primaryKey: endpoint.schemaHints?.primaryKey ?? discovered.primaryKey };
}
