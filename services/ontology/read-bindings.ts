import { raw } from 'objection';
import { FieldProblem, InputError, NotFoundError, PermissionError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { BindingMapping, DataEndpoint, OntologyPackage, PackageTerms, Project, ReadBinding } from '../../db/models';
import { findCapability } from '../../plugins';
import { bindingFields, templateFields } from '../../ontology/term-records';
import { hasScope, Principal } from '../tenancy/access';
import { capabilityContext, type CapabilityDependencies, type EndpointReferenceFinder } from '../endpoints/data-endpoints';
import { endpointsReadableThroughBindings, endpointsSharingData, guardEndpointData } from '../endpoints/data-guard';
import { activePackage, requirePackage } from './packages';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';
import { presentBinding, type BindingView } from './presenters';

// Read bindings (SPEC 2.6): a term of a compiled package read from a workspace endpoint through a
// field mapping. Saving one copies no records; reads and SPARQL go through it at query time.

export interface BindingInput {
  ontologyPackageId: string;
  termId: string;
  dataEndpointId: string;
  mapping: BindingMapping;
  requiredReadPermissions?: string[];
}

/** Bindings as answers, with what each guards: one query for all of them. */
export async function bindingViews(db: Executor, workspaceId: string, bindings: ReadBinding[]): Promise<BindingView[]> {
  const guarded = await endpointsSharingData(db, workspaceId, bindings.map((binding) => binding.dataEndpointId));
  return bindings.map((binding) => presentBinding(binding, guarded.get(binding.dataEndpointId) ?? [binding.dataEndpointId]));
}

const bindingView = async (db: Executor, binding: ReadBinding): Promise<BindingView> => (await bindingViews(db, binding.workspaceId, [binding]))[0];

/** Whether a package still defines the term and everything a mapping names (a newer package may not). */
export function mappingProblems(terms: PackageTerms, termId: string, mapping: BindingMapping): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (!terms.classes.includes(termId)) {
    problems.push({ path: '/termId', message: `"${termId}" is not a class of this package` });
    return problems;
  }
  for (const property of Object.keys(mapping.properties)) {
    const defined = terms.properties[property];
    if (!defined) problems.push({ path: `/mapping/properties/${property}`, message: `"${property}" is not a property of this package` });
    else if (defined.domain !== termId) problems.push({ path: `/mapping/properties/${property}`, message: `"${property}" describes ${defined.domain}, not ${termId}` });
  }
  for (const link of Object.keys(mapping.links ?? {})) {
    const defined = terms.links[link];
    if (!defined) problems.push({ path: `/mapping/links/${link}`, message: `"${link}" is not a link of this package` });
    else if (defined.from !== termId) problems.push({ path: `/mapping/links/${link}`, message: `"${link}" starts at ${defined.from}, not ${termId}` });
  }
  return problems;
}

/** The endpoint's field names: its declared columns, or what the capability discovers. */
async function endpointFields(db: Executor, deps: CapabilityDependencies, endpoint: DataEndpoint): Promise<string[] | { error: string }> {
  if (endpoint.schemaHints?.columns?.length) return endpoint.schemaHints.columns.map((c) => c.name);
  const runtime = findCapability(endpoint.installation!.capability, endpoint.installation!.capabilityVersion);
  try {
    const discovered = await runtime.discoverSchema(capabilityContext(db, endpoint.installation!, deps), endpoint.target);
    return discovered.fields.map((f) => f.name);
  } catch (error) {
    return { error: (error as Error).message };
  }
}

/** Every problem of a binding at once: package, term, endpoint and role, mapping, fields. */
async function bindingProblems(db: Executor, deps: CapabilityDependencies, project: Project, input: BindingInput): Promise<{ problems: FieldProblem[]; pkg?: OntologyPackage }> {
  const problems: FieldProblem[] = [];
  let pkg: OntologyPackage | undefined;
  try {
    pkg = await requirePackage(db, project, input.ontologyPackageId);
  } catch {
    problems.push({ path: '/ontologyPackageId', message: 'is not a compiled package of this project’s ontology' });
  }
  if (pkg) problems.push(...mappingProblems(pkg.terms, input.termId, input.mapping));
  if (!templateFields(input.mapping.subjectTemplate).length) problems.push({ path: '/mapping/subjectTemplate', message: 'must name at least one field, e.g. https://example.com/customers/{id}' });
  const endpoint = await DataEndpoint.query(db).withGraphJoined('installation', { joinOperation: 'innerJoin' }).findOne({ 'data_endpoints.id': input.dataEndpointId, 'data_endpoints.workspaceId': project.workspaceId });
  if (!endpoint) {
    problems.push({ path: '/dataEndpointId', message: 'is not a data endpoint of this workspace' });
  } else if (endpoint.role !== 'source') {
    problems.push({ path: '/dataEndpointId', message: `has role ${endpoint.role}; bindings read from endpoints with role source` });
  } else if (!findCapability(endpoint.installation!.capability, endpoint.installation!.capabilityVersion).definition.supports.recordsRead) {
    problems.push({ path: '/dataEndpointId', message: `${endpoint.installation!.capability} endpoints cannot be read` });
  } else {
    const fields = await endpointFields(db, deps, endpoint);
    if (!Array.isArray(fields)) {
      problems.push({ path: '/dataEndpointId', message: `its fields could not be discovered to check the mapping (${fields.error}); declare schemaHints.columns on the endpoint` });
    } else {
      const known = new Set(fields);
      const check = (path: string, field: string) => {
        if (!known.has(field)) problems.push({ path, message: `the endpoint has no field "${field}"` });
      };
      templateFields(input.mapping.subjectTemplate).forEach((field) => check('/mapping/subjectTemplate', field));
      Object.entries(input.mapping.properties).forEach(([property, field]) => check(`/mapping/properties/${property}`, field));
      Object.entries(input.mapping.links ?? {}).forEach(([link, target]) => {
        check(`/mapping/links/${link}/field`, target.field);
        templateFields(target.targetTemplate).filter((field) => field !== target.field).forEach((field) => check(`/mapping/links/${link}/targetTemplate`, field));
      });
    }
  }
  return { problems, pkg };
}

async function statusFor(db: Executor, project: Project, input: Pick<BindingInput, 'ontologyPackageId' | 'termId' | 'mapping'>): Promise<'active' | 'incompatible'> {
  const active = await activePackage(db, project);
  if (!active || active.id === input.ontologyPackageId) return 'active';
  return mappingProblems(active.terms, input.termId, input.mapping).length ? 'incompatible' : 'active';
}

async function validated(db: Executor, deps: CapabilityDependencies, project: Project, input: BindingInput) {
  const { problems } = await bindingProblems(db, deps, project, input);
  if (problems.length) {
    throw new InputError('binding_invalid', `The read binding is invalid: ${problems.slice(0, 3).map((p) => `${p.path} ${p.message}`).join('; ')}${problems.length > 3 ? '; …' : ''}`, problems);
  }
  return {
    ontologyPackageId: input.ontologyPackageId,
    termId: input.termId,
    dataEndpointId: input.dataEndpointId,
    mapping: input.mapping,
    requiredReadPermissions: [...new Set(input.requiredReadPermissions ?? [])],
    status: await statusFor(db, project, input),
  };
}

/**
 * Binding an endpoint exposes its records to the project's ontology readers, and unbinding it may
 * remove the grant that protects them: both are the data guard's 'bind' use of that endpoint.
 */
async function guardBinding(ctx: OperationContext, dataEndpointId: string): Promise<void> {
  const { db, principal, project } = ctx;
  const endpoint = await DataEndpoint.query(db).findOne({ id: dataEndpointId, workspaceId: project.workspaceId });
  // An unknown endpoint is a validation problem of the binding.
  if (endpoint) await guardEndpointData(ctx.deps, db, principal, endpoint, { channel: 'bind', mode: 'read', projectId: project.id });
}

export async function createBinding(ctx: OperationContext, input: BindingInput): Promise<BindingView> {
  const { db, deps, principal, project } = ctx;
  await guardBinding(ctx, input.dataEndpointId);
  const fields = await validated(db, deps, project, input);
  const binding = await ReadBinding.query(db).insertAndFetch({ ...fields, workspaceId: project.workspaceId, projectId: project.id, createdByMemberId: principal.memberId });
  return bindingView(db, binding);
}

/** A lookup (db, project, …): it runs on whatever executor the caller holds. */
export async function requireBinding(db: Executor, project: Project, bindingId: string, forUpdate = false): Promise<ReadBinding> {
  const query = ReadBinding.query(db).findOne({ id: bindingId, projectId: project.id, workspaceId: project.workspaceId });
  const binding = await (forUpdate ? query.forUpdate() : query);
  if (!binding) throw new NotFoundError('read_binding', 'No read binding with this id in this project.');
  return binding;
}

/**
 * Replacing a binding may take its grants off the endpoint it covered (a new endpoint, or fewer
 * grants): the key must be one that may bind that endpoint as it is now (its grants included),
 * as well as the endpoint it binds next.
 */
export async function replaceBinding(ctx: OperationContext, bindingId: string, input: BindingInput): Promise<BindingView> {
  const { db, deps, project } = ctx;
  const binding = await requireBinding(db, project, bindingId, true);
  await guardBinding(ctx, binding.dataEndpointId);
  if (input.dataEndpointId !== binding.dataEndpointId) await guardBinding(ctx, input.dataEndpointId);
  const fields = await validated(db, deps, project, input);
  return bindingView(db, await binding.$query(db).patchAndFetch({ ...fields, updatedAt: raw('now()') as unknown as Date }));
}

/** Deleting a binding may remove the grant that protects its endpoint: only a key that may bind that endpoint (its grants included) may. */
export async function deleteBinding(ctx: OperationContext, bindingId: string): Promise<void> {
  const { db, project } = ctx;
  const binding = await requireBinding(db, project, bindingId, true);
  await guardBinding(ctx, binding.dataEndpointId);
  await binding.$query(db).delete();
}

export async function listBindings(ctx: OperationContext, page: PageRequest, filter: { ontologyPackageId?: string; dataEndpointId?: string; status?: string }) {
  const { db, project } = ctx;
  const base = ReadBinding.query(db).where({ projectId: project.id, workspaceId: project.workspaceId });
  if (filter.ontologyPackageId) base.where('ontologyPackageId', filter.ontologyPackageId);
  if (filter.dataEndpointId) base.where('dataEndpointId', filter.dataEndpointId);
  if (filter.status) base.where('status', filter.status);
  const { rows, pagination } = await pageOf(base, page);
  return { bindings: await bindingViews(db, project.workspaceId, rows), pagination };
}

/** After a package is activated: each binding of the project is active again, or incompatible with it. (db, project): it runs in the activation's transaction. */
export async function refreshBindingStatuses(db: Executor, project: Project): Promise<void> {
  const bindings = await ReadBinding.query(db).where({ projectId: project.id, workspaceId: project.workspaceId });
  for (const binding of bindings) {
    const status = await statusFor(db, project, binding);
    if (status !== binding.status) await binding.$query(db).patch({ status });
  }
}

/** The active bindings of a term (or of every term) that this caller may read, and how many it may not. */
export async function readableBindings(ctx: OperationContext, termId?: string): Promise<{ readable: ReadBinding[]; withheld: number }> {
  const { db, principal, project } = ctx;
  const query = ReadBinding.query(db).where({ projectId: project.id, workspaceId: project.workspaceId, status: 'active' }).orderBy([{ column: 'createdAt' }, { column: 'id' }]);
  if (termId) query.where('termId', termId);
  const bindings = await query;
  // The grants of the data, not of one binding: a binding without grants over an endpoint that
  // another binding gates reads nothing that other binding withholds.
  const open = await endpointsReadableThroughBindings(ctx.deps, db, principal, bindings.map((b) => b.dataEndpointId));
  const readable = bindings.filter((b) => open.has(b.dataEndpointId));
  return { readable, withheld: bindings.length - readable.length };
}

/** Term reads need data:read; named grants are checked per binding, and no scope stands in for them. */
export function authorizeTermRead(principal: Principal): void {
  if (!hasScope(principal, 'data:read')) throw new PermissionError('insufficient_scope', 'Reading term records needs the data:read scope.', { requiredScopes: ['data:read'] });
}

/** An endpoint with bindings cannot be deleted: the binding would read nothing. */
export const bindingsOverEndpoint: EndpointReferenceFinder = async (db, workspaceId, endpointId) => {
  const rows = await ReadBinding.query(db).where({ workspaceId, dataEndpointId: endpointId }).select('id', 'termId');
  return rows.map((row) => ({ kind: 'read_binding', id: row.id, name: row.termId }));
};

export { bindingFields };
