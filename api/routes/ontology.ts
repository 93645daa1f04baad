import type { Collection } from '../../ontology/definition';
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
import { defineRoute, RouteSpec } from '../route-spec';

// The ontology of a project (SPEC 2.6, 4.5): collections edited on branches (each edit a version),
// compile into content-addressed packages, activate one. Methods differ by collection: terms and
// shapes are replaced in place; links, constraints and imports are added and removed.

const BASE = '/api/v1/projects/:project_id/ontology';
const TAG = 'Ontology';
const SINGULAR: Record<Collection, string> = { terms: 'term', links: 'link', shapes: 'shape', constraints: 'constraint', imports: 'import' };

/** The routes of one collection; PUT on an element where the collection's elements are replaced in place. */
function collectionRoutes(collection: Collection): RouteSpec[] {
  const operations = ontologyCollectionOperations[collection];
  const one = SINGULAR[collection];
  // Element ids are local names, not UUIDs: the parameter is named after the element (:term).
  const param = one;
  const routes: RouteSpec[] = [
    defineRoute({
      method: 'get',
      path: `${BASE}/${collection}`,
      operation: operations.list,
      tag: TAG,
    }),
    defineRoute({
      method: 'post',
      path: `${BASE}/${collection}`,
      operation: operations.add,
      tag: TAG,
    }),
    defineRoute({
      method: 'get',
      path: `${BASE}/${collection}/:${param}`,
      operation: operations.get,
      tag: TAG,
    }),
    defineRoute({
      method: 'delete',
      path: `${BASE}/${collection}/:${param}`,
      operation: operations.remove,
      tag: TAG,
    }),
  ];
  if ('replace' in operations) {
    routes.push(
      defineRoute({
        method: 'put',
        path: `${BASE}/${collection}/:${param}`,
        operation: operations.replace,
        tag: TAG,
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
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/versions`,
    operation: listOntologyVersionsOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/versions/:version_id`,
    operation: getOntologyVersionOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/branches`,
    operation: listOntologyBranchesOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/branches`,
    operation: createOntologyBranchOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/compare`,
    operation: compareOntologyBranchesOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/compile`,
    operation: compileOntologyOperation,
    description: 'A definition that does not compile is a 422 whose `errors` and `problems` name each element (terms/Customer) and path. Compiling an unchanged definition again returns the same package with 200. Compiling does not activate.',
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/packages`,
    operation: listOntologyPackagesOperation,
    tag: TAG,
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/packages/:package_id`,
    operation: getOntologyPackageOperation,
    tag: TAG,
    errors: [{ status: 406, description: 'The Accept header names none of application/json, text/turtle, application/n-quads.' }],
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/activate`,
    operation: activateOntologyPackageOperation,
    tag: TAG,
  }),
];
