import type { JsonSchema } from '../../core/schema-validator';
import { Collection, collectionSchemas, definitionSchema } from '../../ontology/definition';
import { nullableTimestamp, timestamp, uuid } from '../../schemas/common';
import { MAX_DOCUMENT_BYTES, RDF_UPLOAD_TYPES } from '../../services/ontology/ontology';
import {
  activateOntologyPackageOperation,
  compareOntologyBranchesOperation,
  compileOntologyOperation,
  createOntologyBranchOperation,
  getOntologyOperation,
  getOntologyPackageOperation,
  getOntologyVersionOperation,
  importOntologyDocumentOperation,
  listOntologyBranchesOperation,
  listOntologyPackagesOperation,
  listOntologyVersionsOperation,
  ontologyCollectionOperations,
} from '../../services/ontology/operations';
import { paginationSchema } from '../../services/shared/pagination';
import { defineRoute, RouteSpec } from '../route-spec';

// The ontology of a project (SPEC 2.6, 4.5): collections edited on branches (each edit a version),
// compile into content-addressed packages, activate one. Methods differ by collection: terms and
// shapes are replaced in place; links, constraints and imports are added and removed.

const BASE = '/api/v1/projects/:project_id/ontology';
const TAG = 'Ontology';
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

const SINGULAR: Record<Collection, string> = { terms: 'term', links: 'link', shapes: 'shape', constraints: 'constraint', imports: 'import' };

/** The routes of one collection; PUT on an element where the collection's elements are replaced in place. */
function collectionRoutes(collection: Collection): RouteSpec[] {
  const operations = ontologyCollectionOperations[collection];
  const one = SINGULAR[collection];
  // Element ids are local names, not UUIDs: the parameter is named after the element (:term).
  const param = one;
  const itemSchema = collectionSchemas[collection];
  const itemResponse = (description: string) => ({ description, schema: { type: 'object', required: [one], properties: { [one]: itemSchema, version: versionRef } } });
  const routes: RouteSpec[] = [
    defineRoute({
      method: 'get',
      path: `${BASE}/${collection}`,
      operation: operations.list,
      tag: TAG,
      responses: { 200: { description: `A page of ${collection}`, schema: { type: 'object', required: [collection, 'pagination'], properties: { [collection]: { type: 'array', items: itemSchema }, pagination: paginationSchema } } } },
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/${collection}`,
      operation: operations.add,
      tag: TAG,
      responses: { 201: itemResponse(`The ${one} and the version it made`) },
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/${collection}/:${param}`,
      operation: operations.get,
      tag: TAG,
      responses: { 200: { description: `The ${one}`, schema: { type: 'object', required: [one], properties: { [one]: itemSchema } } } },
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/${collection}/:${param}`,
      operation: operations.remove,
      tag: TAG,
      responses: { 204: { description: 'Removed' } },
    }),
  ];
  if ('replace' in operations) {
    routes.push(
      defineRoute({
        method: 'put',
        path: `${BASE}/${collection}/:${param}`,
        operation: operations.replace,
        tag: TAG,
        responses: { 200: itemResponse(`The ${one} and the version it made`) },
      }),
    );
  }
  return routes;
}

export const ontologyRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: getOntologyOperation,
    tag: TAG,
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
  }),
  ...collectionRoutes('terms'),
  ...collectionRoutes('links'),
  ...collectionRoutes('shapes'),
  ...collectionRoutes('constraints'),
  ...collectionRoutes('imports'),
  defineRoute({
    method: 'post',
    path: `${BASE}/imports/documents`,
    operation: importOntologyDocumentOperation,
    description: `The document is parsed (a syntax error is a 422 naming the line), stored as N-Quads, and added as an import with the id given in ?id=; its triples join the package at the next compile. At most ${MAX_DOCUMENT_BYTES} bytes.`,
    tag: TAG,
    rawBody: { mediaTypes: RDF_UPLOAD_TYPES, maxBytes: MAX_DOCUMENT_BYTES, description: 'The RDF document.' },
    responses: {
      201: {
        description: 'The import, its stored document and the version it made',
        schema: { type: 'object', required: ['import', 'document'], properties: { import: collectionSchemas.imports, document: { type: 'object' }, version: versionRef } },
      },
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/versions`,
    operation: listOntologyVersionsOperation,
    tag: TAG,
    responses: { 200: { description: 'A page of versions', schema: { type: 'object', required: ['versions', 'pagination'], properties: { versions: { type: 'array', items: versionRef }, pagination: paginationSchema } } } },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/versions/:version_id`,
    operation: getOntologyVersionOperation,
    tag: TAG,
    responses: { 200: { description: 'The version', schema: { type: 'object', required: ['version'], properties: { version: { ...versionRef, properties: { ...(versionRef.properties as object), definition: definitionSchema } } } } } },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/branches`,
    operation: listOntologyBranchesOperation,
    tag: TAG,
    responses: { 200: { description: 'Branches', schema: { type: 'object', required: ['branches'], properties: { branches: { type: 'array', items: { type: 'object' } } } } } },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/branches`,
    operation: createOntologyBranchOperation,
    tag: TAG,
    responses: { 201: { description: 'The branch', schema: { type: 'object', required: ['branch'], properties: { branch: { type: 'object' } } } } },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/compare`,
    operation: compareOntologyBranchesOperation,
    tag: TAG,
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
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/compile`,
    operation: compileOntologyOperation,
    description: 'A definition that does not compile is a 422 whose `errors` and `problems` name each element (terms/Customer) and path. Compiling an unchanged definition again returns the same package with 200. Compiling does not activate.',
    tag: TAG,
    responses: {
      200: { description: 'The same package as before (nothing changed)', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } } },
      201: { description: 'A new package', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } } },
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/packages`,
    operation: listOntologyPackagesOperation,
    tag: TAG,
    responses: { 200: { description: 'A page of packages', schema: { type: 'object', required: ['packages', 'pagination'], properties: { packages: { type: 'array', items: packageSchema }, pagination: paginationSchema } } } },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/packages/:package_id`,
    operation: getOntologyPackageOperation,
    tag: TAG,
    responses: {
      200: { description: 'The package', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } }, alternatives: ['text/turtle', 'application/n-quads'] },
    },
    errors: [{ status: 406, description: 'The Accept header names none of application/json, text/turtle, application/n-quads.' }],
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/activate`,
    operation: activateOntologyPackageOperation,
    tag: TAG,
    responses: { 200: { description: 'The ontology with its new active package', schema: { type: 'object', required: ['ontology'], properties: { ontology: { type: 'object' } } } } },
  }),
];
