import { defineRoute, RouteSpec } from '../route-spec';
import type { PageRequest } from '../../services/shared/pagination';
import {
  activatePackage,
  addItem,
  compareBranches,
  compileOntology,
  createBranch,
  getItem,
  getOntology,
  getVersion,
  importDocument,
  listBranches,
  listItems,
  listPackages,
  listVersions,
  MAX_DOCUMENT_BYTES,
  presentPackage,
  RDF_UPLOAD_TYPES,
  removeItem,
  replaceItem,
  requirePackage,
} from '../../services/ontology/ontology';
import { Collection, collectionSchemas, definitionSchema, LOCAL_NAME_PATTERN } from '../../ontology/definition';
import { idParams, listQuery, nullableTimestamp, timestamp, uuid } from '../schemas/common';
import { paginationSchema } from '../../services/shared/pagination';
import type { JsonSchema } from '../../core/schema-validator';
import { NotAcceptableError } from '../../core/errors';

// The ontology of a project (SPEC 2.6, 4.5): collections edited on branches (each edit a version),
// compile into content-addressed packages, activate one. Methods differ by collection: terms and
// shapes are replaced in place; links, constraints and imports are added and removed.

const BASE = '/api/v1/projects/:project_id/ontology';
const TAG = 'Ontology';
const READ = { scopes: ['ontologies:read'] as const, projectParam: 'project_id' };
const WRITE = { scopes: ['ontologies:write'] as const, projectParam: 'project_id', accountableActor: true };
const BRANCH_NAME: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,100}$' };
const branchQuery: JsonSchema = { type: 'object', additionalProperties: false, properties: { branch: { ...BRANCH_NAME, default: 'main', description: 'The branch to read or edit (default main).' } } };
const elementParams = (name: string): JsonSchema => ({
  type: 'object',
  required: ['project_id', name],
  properties: { project_id: uuid, [name]: { type: 'string', pattern: LOCAL_NAME_PATTERN } },
});
const versionRef: JsonSchema = {
  type: 'object',
  properties: { id: uuid, number: { type: 'integer' }, branchName: { type: 'string' }, parentVersionId: { anyOf: [uuid, { type: 'null' }] }, message: { type: 'string' }, createdAt: timestamp },
};
const packageSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'contentHash', 'versionId', 'tripleCount', 'counts', 'compiledAt'],
  properties: {
    id: uuid,
    contentHash: { type: 'string', description: 'sha256 of the package’s sorted N-Quads: equal definitions and imports give equal hashes.' },
    versionId: uuid,
    baseIri: { type: 'string' },
    tripleCount: { type: 'integer' },
    counts: { type: 'object', additionalProperties: { type: 'integer' } },
    compiledByMemberId: uuid,
    compiledAt: timestamp,
  },
};

type ProjectParams = { project_id: string };
type ElementParams = ProjectParams & Record<string, string>;

const SINGULAR: Record<Collection, string> = { terms: 'term', links: 'link', shapes: 'shape', constraints: 'constraint', imports: 'import' };

/** The routes of one collection; `replace` adds PUT on an element. */
function collectionRoutes(collection: Collection, title: string, options: { replace: boolean }): RouteSpec[] {
  const one = SINGULAR[collection];
  // Element ids are local names, not UUIDs: the parameter is named after the element.
  const param = one;
  const itemSchema = collectionSchemas[collection];
  const itemResponse = (description: string) => ({ description, schema: { type: 'object', required: [one], properties: { [one]: itemSchema, version: versionRef } } });
  const routes: RouteSpec[] = [
    defineRoute<ProjectParams, PageRequest & { branch: string }>({
      method: 'get',
      path: `${BASE}/${collection}`,
      operationId: `listOntology${title}s`,
      summary: `The ${collection} of the ontology on a branch.`,
      tag: TAG,
      auth: READ,
      params: idParams('project_id'),
      query: listQuery({ branch: { ...BRANCH_NAME, default: 'main' } }),
      responses: { 200: { description: `A page of ${collection}`, schema: { type: 'object', required: [collection, 'pagination'], properties: { [collection]: { type: 'array', items: itemSchema }, pagination: paginationSchema } } } },
      async handler({ db, project, query }) {
        const { branch, limit, offset } = query;
        return { body: await listItems(db, project, collection, branch, { limit, offset }) };
      },
    }) as RouteSpec,
    defineRoute<ProjectParams, { branch: string }, never>({
      method: 'post',
      path: `${BASE}/${collection}`,
      operationId: `addOntology${title}`,
      summary: `Add a ${one} on a branch: a new version of the definition.`,
      tag: TAG,
      auth: WRITE,
      params: idParams('project_id'),
      query: branchQuery,
      body: itemSchema,
      responses: { 201: itemResponse(`The ${one} and the version it made`) },
      async handler({ db, principal, project, query, body }) {
        return { status: 201, body: mapItem(one, await addItem(db, principal, project, collection, query.branch, body)) };
      },
    }) as RouteSpec,
    defineRoute<ElementParams, { branch: string }>({
      method: 'get',
      path: `${BASE}/${collection}/:${param}`,
      operationId: `getOntology${title}`,
      summary: `One ${one} on a branch.`,
      tag: TAG,
      auth: READ,
      params: elementParams(param),
      query: branchQuery,
      responses: { 200: { description: `The ${one}`, schema: { type: 'object', required: [one], properties: { [one]: itemSchema } } } },
      async handler({ db, project, params, query }) {
        return { body: { [one]: await getItem(db, project, collection, query.branch, params[param]) } };
      },
    }) as RouteSpec,
    defineRoute<ElementParams, { branch: string }>({
      method: 'delete',
      path: `${BASE}/${collection}/:${param}`,
      operationId: `removeOntology${title}`,
      summary: `Remove a ${one} on a branch: a new version of the definition.`,
      tag: TAG,
      auth: WRITE,
      params: elementParams(param),
      query: branchQuery,
      responses: { 204: { description: 'Removed' } },
      async handler({ db, principal, project, params, query }) {
        await removeItem(db, principal, project, collection, query.branch, params[param]);
        return { status: 204 };
      },
    }) as RouteSpec,
  ];
  if (options.replace) {
    routes.push(
      defineRoute<ElementParams, { branch: string }, never>({
        method: 'put',
        path: `${BASE}/${collection}/:${param}`,
        operationId: `replaceOntology${title}`,
        summary: `Replace a ${one} on a branch (its id stays): a new version of the definition.`,
        tag: TAG,
        auth: WRITE,
        params: elementParams(param),
        query: branchQuery,
        body: itemSchema,
        responses: { 200: itemResponse(`The ${one} and the version it made`) },
        async handler({ db, principal, project, params, query, body }) {
          return { body: mapItem(one, await replaceItem(db, principal, project, collection, query.branch, params[param], body)) };
        },
      }) as RouteSpec,
    );
  }
  return routes;
}

const mapItem = (one: string, result: { item: unknown; version: unknown }) => ({ [one]: result.item, version: result.version });

export const ontologyRoutes: RouteSpec[] = [
  defineRoute<ProjectParams>({
    method: 'get',
    path: BASE,
    operationId: 'getOntology',
    summary: 'The project’s ontology: the active compiled package and collection counts. 404 while no package is compiled and active.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id'),
    responses: {
      200: {
        description: 'The ontology',
        schema: {
          type: 'object',
          required: ['ontology'],
          properties: {
            ontology: {
              type: 'object',
              required: ['projectId', 'baseIri', 'package', 'counts'],
              properties: {
                projectId: uuid,
                baseIri: { type: 'string', description: 'Term IRIs are this plus the local name.' },
                package: { ...packageSchema, properties: { ...(packageSchema.properties as object), versionNumber: { type: ['integer', 'null'] }, branchName: { type: ['string', 'null'] } } },
                counts: { type: 'object', description: 'terms, links, shapes, constraints, imports and triples of the active package.', additionalProperties: { type: 'integer' } },
                updatedAt: nullableTimestamp,
              },
            },
          },
        },
      },
    },
    async handler({ db, project }) {
      return { body: { ontology: await getOntology(db, project) } };
    },
  }) as RouteSpec,
  ...collectionRoutes('terms', 'Term', { replace: true }),
  ...collectionRoutes('links', 'Link', { replace: false }),
  ...collectionRoutes('shapes', 'Shape', { replace: true }),
  ...collectionRoutes('constraints', 'Constraint', { replace: false }),
  ...collectionRoutes('imports', 'Import', { replace: false }),
  defineRoute<ProjectParams, { branch: string; id: string }, string>({
    method: 'post',
    path: `${BASE}/imports/documents`,
    operationId: 'importOntologyDocument',
    summary: 'Upload an RDF document (Turtle, N-Triples, N-Quads or JSON-LD) and import it whole.',
    description: `The document is parsed (a syntax error is a 422 naming the line), stored as N-Quads, and added as an import with the id given in ?id=; its triples join the package at the next compile. At most ${MAX_DOCUMENT_BYTES} bytes.`,
    tag: TAG,
    auth: WRITE,
    params: idParams('project_id'),
    query: {
      type: 'object',
      additionalProperties: false,
      required: ['id'],
      properties: { id: { type: 'string', pattern: LOCAL_NAME_PATTERN, description: 'The import’s id.' }, branch: { ...BRANCH_NAME, default: 'main' } },
    },
    rawBody: { mediaTypes: RDF_UPLOAD_TYPES, maxBytes: MAX_DOCUMENT_BYTES, description: 'The RDF document.' },
    responses: {
      201: {
        description: 'The import, its stored document and the version it made',
        schema: { type: 'object', required: ['import', 'document'], properties: { import: collectionSchemas.imports, document: { type: 'object' }, version: versionRef } },
      },
    },
    async handler({ db, principal, project, query, body, bodyType }) {
      const result = await importDocument(db, principal, project, query.branch, query.id, bodyType!, body);
      return { status: 201, body: { import: result.item, document: result.document, version: result.version } };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, PageRequest & { branch?: string }>({
    method: 'get',
    path: `${BASE}/versions`,
    operationId: 'listOntologyVersions',
    summary: 'Version history of the ontology, newest first; every edit is a version.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id'),
    query: listQuery({ branch: BRANCH_NAME }),
    responses: { 200: { description: 'A page of versions', schema: { type: 'object', required: ['versions', 'pagination'], properties: { versions: { type: 'array', items: versionRef }, pagination: paginationSchema } } } },
    async handler({ db, project, query }) {
      const { branch, limit, offset } = query;
      return { body: await listVersions(db, project, { limit, offset }, branch) };
    },
  }) as RouteSpec,
  defineRoute<{ project_id: string; version_id: string }>({
    method: 'get',
    path: `${BASE}/versions/:version_id`,
    operationId: 'getOntologyVersion',
    summary: 'One version with its whole definition.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id', 'version_id'),
    responses: { 200: { description: 'The version', schema: { type: 'object', required: ['version'], properties: { version: { ...versionRef, properties: { ...(versionRef.properties as object), definition: definitionSchema } } } } } },
    async handler({ db, project, params }) {
      return { body: { version: await getVersion(db, project, params.version_id) } };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams>({
    method: 'get',
    path: `${BASE}/branches`,
    operationId: 'listOntologyBranches',
    summary: 'The ontology’s branches and their head versions.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id'),
    responses: { 200: { description: 'Branches', schema: { type: 'object', required: ['branches'], properties: { branches: { type: 'array', items: { type: 'object' } } } } } },
    async handler({ db, project }) {
      return { body: await listBranches(db, project) };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, Record<string, never>, { name: string; fromVersionId?: string }>({
    method: 'post',
    path: `${BASE}/branches`,
    operationId: 'createOntologyBranch',
    summary: 'Start a branch at a version (default: the head of main).',
    tag: TAG,
    auth: WRITE,
    params: idParams('project_id'),
    body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: BRANCH_NAME, fromVersionId: uuid } },
    responses: { 201: { description: 'The branch', schema: { type: 'object', required: ['branch'], properties: { branch: { type: 'object' } } } } },
    async handler({ db, principal, project, body }) {
      return { status: 201, body: { branch: await createBranch(db, principal, project, body) } };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, { base: string; head: string }>({
    method: 'get',
    path: `${BASE}/compare`,
    operationId: 'compareOntologyBranches',
    summary: 'What changed from the head of one branch to another: added, removed and changed elements per collection.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id'),
    query: { type: 'object', additionalProperties: false, required: ['head'], properties: { base: { ...BRANCH_NAME, default: 'main' }, head: BRANCH_NAME } },
    responses: {
      200: {
        description: 'A structured diff',
        schema: {
          type: 'object',
          required: ['base', 'head', 'added', 'removed', 'changed'],
          properties: {
            base: { type: 'string' },
            head: { type: 'string' },
            added: { type: 'object', description: 'Per collection, elements only the head has.' },
            removed: { type: 'object', description: 'Per collection, elements only the base has.' },
            changed: { type: 'object', description: 'Per collection, {id, before, after} of elements both have, changed.' },
          },
        },
      },
    },
    async handler({ db, project, query }) {
      return { body: await compareBranches(db, project, query.base, query.head) };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, Record<string, never>, { branch?: string }>({
    method: 'post',
    path: `${BASE}/compile`,
    operationId: 'compileOntology',
    summary: 'Compile a branch head into a content-addressed package (Turtle and N-Quads). Every problem is listed with its element.',
    description: 'A definition that does not compile is a 422 whose `errors` and `problems` name each element (terms/Customer) and path. Compiling an unchanged definition again returns the same package with 200. Compiling does not activate.',
    tag: TAG,
    auth: WRITE,
    params: idParams('project_id'),
    body: { type: 'object', additionalProperties: false, properties: { branch: { ...BRANCH_NAME, default: 'main' } } },
    responses: {
      200: { description: 'The same package as before (nothing changed)', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } } },
      201: { description: 'A new package', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } } },
    },
    async handler({ db, principal, project, body }) {
      const result = await compileOntology(db, principal, project, body.branch ?? 'main');
      return { status: result.created ? 201 : 200, body: { package: result.package } };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, PageRequest>({
    method: 'get',
    path: `${BASE}/packages`,
    operationId: 'listOntologyPackages',
    summary: 'Compiled packages, newest first.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id'),
    query: listQuery(),
    responses: { 200: { description: 'A page of packages', schema: { type: 'object', required: ['packages', 'pagination'], properties: { packages: { type: 'array', items: packageSchema }, pagination: paginationSchema } } } },
    async handler({ db, project, query }) {
      return { body: await listPackages(db, project, query) };
    },
  }) as RouteSpec,
  defineRoute<{ project_id: string; package_id: string }>({
    method: 'get',
    path: `${BASE}/packages/:package_id`,
    operationId: 'getOntologyPackage',
    summary: 'A compiled package: metadata as JSON, or its triples with Accept: text/turtle or application/n-quads.',
    tag: TAG,
    auth: READ,
    params: idParams('project_id', 'package_id'),
    responses: {
      200: { description: 'The package', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } }, alternatives: ['text/turtle', 'application/n-quads'] },
    },
    errors: [{ status: 406, description: 'The Accept header names none of application/json, text/turtle, application/n-quads.' }],
    async handler({ db, project, params, koa }) {
      const pkg = await requirePackage(db, project, params.package_id);
      const wanted = koa.accepts('application/json', 'text/turtle', 'application/n-quads');
      if (wanted === 'text/turtle') return { body: pkg.turtle, contentType: 'text/turtle; charset=utf-8' };
      if (wanted === 'application/n-quads') return { body: pkg.nquads, contentType: 'application/n-quads; charset=utf-8' };
      // No representation the caller accepts is a 406 (it was a 404 that named no missing resource).
      if (!wanted) throw new NotAcceptableError('not_acceptable', 'Ask for application/json, text/turtle or application/n-quads.');
      return { body: { package: presentPackage(pkg) } };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, Record<string, never>, { packageId: string }>({
    method: 'post',
    path: `${BASE}/activate`,
    operationId: 'activateOntologyPackage',
    summary: 'Make a compiled package the active one: SPARQL and term-record reads use it.',
    tag: TAG,
    auth: WRITE,
    params: idParams('project_id'),
    body: { type: 'object', additionalProperties: false, required: ['packageId'], properties: { packageId: uuid } },
    responses: { 200: { description: 'The ontology with its new active package', schema: { type: 'object', required: ['ontology'], properties: { ontology: { type: 'object' } } } } },
    async handler({ db, project, body }) {
      return { body: { ontology: await activatePackage(db, project, body.packageId) } };
    },
  }) as RouteSpec,
];
