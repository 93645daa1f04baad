import { raw } from 'objection';
import { ConflictError, FieldProblem, InputError, NotFoundError } from '../../core/errors';
import { schemaProblems, summarizeProblems } from '../../core/schema-validator';
import type { Executor } from '../../db/connection';
import { OntologyPackage, Project, PublishedQuery, QueryDefinition, QueryJob, QueryRelease, QueryVersion, ReadBinding } from '../../db/models';
import { analyzeTemplate, TemplateFacts } from '../../ontology/query-template';
import { activePackage } from './ontology';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';
import { presentQuery, type QueryView } from './presenters';

// Published queries (SPEC 2.5, 3.1, 3.4, 4.5): a SPARQL template with input and output contracts;
// every edit a version (UUID). Numeric releases pin a version (query-releases.ts); execution answers
// within a short budget or continues as a Temporal job (query-execution.ts, query-jobs.ts).

export interface QueryInput {
  name: string;
  description?: string;
  sparql: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
}

async function viewOf(db: Executor, query: PublishedQuery): Promise<QueryView> {
  const version = query.currentVersionId ? await QueryVersion.query(db).findById(query.currentVersionId) : undefined;
  return presentQuery(query, version, await selectedRelease(db, query.id));
}

/**
 * Authoring checks against the active ontology, its bindings and the contracts; returns the grants
 * the query needs. (db, project, …): the release workflow's validate step calls it with no key.
 */
export async function validateDefinition(db: Executor, project: Project, input: QueryInput): Promise<{ facts: TemplateFacts; requiredReadPermissions: string[] }> {
  const pkg = await activePackage(db, project);
  if (!pkg) throw new InputError('ontology_required', 'Queries run over the ontology: compile and activate a package first.');
  const problems: FieldProblem[] = [];
  const { facts, problems: templateProblems } = analyzeTemplate(input.sparql, pkg.baseIri);
  problems.push(...templateProblems);
  const inputProps = (input.inputSchema.properties ?? {}) as Record<string, { type?: string }>;
  const outputProps = (input.outputSchema.properties ?? {}) as Record<string, unknown>;
  if (input.inputSchema.type !== 'object') problems.push({ path: '/inputSchema/type', message: 'must be "object"' });
  if (input.outputSchema.type !== 'object') problems.push({ path: '/outputSchema/type', message: 'must be "object" (the schema of one result row)' });
  for (const [name, schema] of Object.entries(inputProps)) {
    if (!['string', 'integer', 'number', 'boolean'].includes(schema.type ?? '')) problems.push({ path: `/inputSchema/properties/${name}/type`, message: 'input parameters are strings, integers, numbers or booleans' });
  }
  if (facts) {
    for (const name of Object.keys(inputProps)) {
      if (!facts.variables.has(name)) problems.push({ path: `/inputSchema/properties/${name}`, message: `the query has no variable $${name} to bind it to` });
      if (facts.projected.includes(name)) problems.push({ path: `/inputSchema/properties/${name}`, message: 'an input parameter cannot also be a result variable' });
    }
    for (const name of Object.keys(outputProps)) {
      if (!facts.projected.includes(name)) problems.push({ path: `/outputSchema/properties/${name}`, message: `the query does not select ?${name}` });
    }
    for (const name of facts.projected) {
      if (!(name in outputProps)) problems.push({ path: '/outputSchema/properties', message: `describe the selected variable ?${name}` });
    }
    const known = new Set([...pkg.terms.classes, ...Object.keys(pkg.terms.properties), ...Object.keys(pkg.terms.links)]);
    for (const term of facts.terms) if (!known.has(term)) problems.push({ path: '/sparql', message: `:${term} is not a term of the active ontology package` });
  }
  for (const [part, schema] of [['inputSchema', input.inputSchema], ['outputSchema', input.outputSchema]] as const) {
    try {
      schemaProblems(schema, {});
    } catch (error) {
      problems.push({ path: `/${part}`, message: `is not a usable JSON Schema: ${(error as Error).message}` });
    }
  }
  if (problems.length) throw new InputError('query_invalid', `The query is invalid: ${summarizeProblems(problems)}`, problems);
  // The grants of every binding of a term the query names: execution needs them all.
  const bindings = await queryTermBindings(db, project, pkg, facts!);
  return { facts: facts!, requiredReadPermissions: [...new Set(bindings.flatMap((b) => b.requiredReadPermissions))].sort() };
}

/** The project's active bindings of the classes a query's terms belong to: the data the query reads. */
export async function queryTermBindings(db: Executor, project: Project, pkg: Pick<OntologyPackage, 'terms'>, facts: Pick<TemplateFacts, 'terms'>): Promise<ReadBinding[]> {
  const classes = [...facts.terms].map((term) => pkg.terms.properties[term]?.domain ?? pkg.terms.links[term]?.from ?? term);
  return classes.length ? ReadBinding.query(db).where({ projectId: project.id, workspaceId: project.workspaceId, status: 'active' }).whereIn('termId', classes) : [];
}

/** A lookup (db, project, …): it runs on the executor the caller holds. */
export async function requireQuery(db: Executor, project: Project, queryId: string, forUpdate = false): Promise<PublishedQuery> {
  const q = PublishedQuery.query(db).findOne({ id: queryId, projectId: project.id, workspaceId: project.workspaceId });
  const found = await (forUpdate ? q.forUpdate() : q);
  if (!found) throw new NotFoundError('query', 'No query with this id in this project.');
  return found;
}

async function addVersion(ctx: OperationContext, query: PublishedQuery, input: QueryInput, requiredReadPermissions: string[]): Promise<QueryVersion> {
  const { db, principal } = ctx;
  const last = await QueryVersion.query(db).where({ queryId: query.id }).max('number as max').first() as unknown as { max: number | null };
  const definition: QueryDefinition = { description: input.description, sparql: input.sparql, inputSchema: input.inputSchema, outputSchema: input.outputSchema };
  const version = await QueryVersion.query(db).insertAndFetch({ queryId: query.id, number: (last?.max ?? 0) + 1, definition, requiredReadPermissions, createdByMemberId: principal.memberId });
  await query.$query(db).patch({ currentVersionId: version.id, name: input.name, updatedAt: raw('now()') as unknown as Date });
  return version;
}

export async function createQuery(ctx: OperationContext, input: QueryInput) {
  const { db, principal, project } = ctx;
  const { requiredReadPermissions } = await validateDefinition(db, project, input);
  if (await PublishedQuery.query(db).findOne({ projectId: project.id, name: input.name })) throw new ConflictError('query_name_taken', `This project already has a query named "${input.name}".`);
  const query = await PublishedQuery.query(db).insertAndFetch({ workspaceId: project.workspaceId, projectId: project.id, name: input.name, createdByMemberId: principal.memberId });
  await addVersion(ctx, query, input, requiredReadPermissions);
  return viewOf(db, (await PublishedQuery.query(db).findById(query.id))!);
}

/** Every edit is a new query version (a new UUID); releases keep pointing at theirs. */
export async function replaceQuery(ctx: OperationContext, queryId: string, input: QueryInput) {
  const { db, project } = ctx;
  const query = await requireQuery(db, project, queryId, true);
  const { requiredReadPermissions } = await validateDefinition(db, project, input);
  if (input.name !== query.name && (await PublishedQuery.query(db).findOne({ projectId: project.id, name: input.name }))) throw new ConflictError('query_name_taken', `This project already has a query named "${input.name}".`);
  await addVersion(ctx, query, input, requiredReadPermissions);
  return viewOf(db, (await PublishedQuery.query(db).findById(query.id))!);
}

export async function getQuery(ctx: OperationContext, queryId: string) {
  const { db, project } = ctx;
  return viewOf(db, await requireQuery(db, project, queryId));
}

export async function listQueries(ctx: OperationContext, page: PageRequest) {
  const { db, project } = ctx;
  const { rows, pagination } = await pageOf(PublishedQuery.query(db).where({ projectId: project.id, workspaceId: project.workspaceId }), page);
  return { queries: await Promise.all(rows.map((q) => viewOf(db, q))), pagination };
}

export async function deleteQuery(ctx: OperationContext, queryId: string) {
  const { db, project } = ctx;
  const query = await requireQuery(db, project, queryId, true);
  if (await QueryJob.query(db).findOne({ queryId, status: 'active' })) throw new ConflictError('query_has_active_jobs', 'The query has active result jobs; cancel them or let them finish first.');
  await query.$query(db).delete();
}

/** The release used when no ?version= is given: the newest published (not retired) one. */
export async function selectedRelease(db: Executor, queryId: string): Promise<QueryRelease | undefined> {
  return QueryRelease.query(db).where({ queryId, status: 'published' }).orderBy('version', 'desc').first();
}
