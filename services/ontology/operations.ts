import type { JsonSchema } from '../../core/schema-validator';
import { collectionSchemas, definitionSchema, type Collection, type OntologyDefinition } from '../../ontology/definition';
import { NotAcceptableError } from '../../core/errors';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { paginationSchema, type PageRequest } from '../shared/pagination';
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
  removeItem,
  replaceItem,
  requirePackage,
} from './ontology';
import { presentPackage } from './presenters';
import { idParams, listQuery, nullableTimestamp, timestamp, uuid } from '../../schemas/common';
import { activatePackageBody, branchQuery, collectionListQuery, compareBranchesQuery, compileOntologyBody, createOntologyBranchBody, elementParams, importDocumentQuery, ontologyVersionsQuery } from '../../schemas/ontology';

// The ontology operations (SPEC 2.6, 4.5): collections edited on branches (each edit a version),
// compiled into content-addressed packages, one of them active. Each declares its access once;
// HTTP routes (api/routes/ontology.ts) invoke them (services/operations/invoke.ts).

const read = { scopes: { anyOf: ['ontologies:read'] }, project: true } as const;
const write = { scopes: { anyOf: ['ontologies:write'] }, project: true, actor: 'accountable' } as const;

type InProject = { project_id: string };
type NoQuery = Record<string, never>;
/** The branch read or edited; the query defaults it to main. */
type OnBranch = { branch: string };
type Item = OntologyDefinition[Collection][number];

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

/** An element and the version its edit made. */
const itemResponse = (collection: Collection, description: string) => {
  const one = SINGULAR[collection];
  return { description, schema: { type: 'object', required: [one], properties: { [one]: collectionSchemas[collection], version: versionRef } } };
};

const mapItem = (one: string, result: { item: unknown; version: unknown }) => ({ [one]: result.item, version: result.version });

/**
 * The operations of one collection, one per route and named as the routes were (listOntologyTerms,
 * addOntologyTerm, getOntologyTerm, removeOntologyTerm). Terms and shapes are also replaced in place
 * (replaceOperation); links, constraints and imports are only added and removed. Element ids are
 * local names (terms/Customer), not UUIDs: the path parameter is named after the element (:term).
 */
function collectionOperations(collection: Collection, title: string) {
  const one = SINGULAR[collection];
  type OneElement = InProject & Record<string, string>;
  return {
    list: defineOperation({
      name: `listOntology${title}s`,
      summary: `The ${collection} of the ontology on a branch.`,
      access: read,
      effect: 'read',
      input: { params: idParams('project_id'), query: collectionListQuery },
      output: { 200: { description: `A page of ${collection}`, schema: { type: 'object', required: [collection, 'pagination'], properties: { [collection]: { type: 'array', items: collectionSchemas[collection] }, pagination: paginationSchema } } } },
      async run(ctx, { query }: RequestInput<InProject, OnBranch & PageRequest>): Promise<Reply> {
        const { branch, limit, offset } = query;
        return { body: await listItems(ctx, collection, branch, { limit, offset }) };
      },
    }),
    add: defineOperation({
      name: `addOntology${title}`,
      summary: `Add a ${one} on a branch: a new version of the definition.`,
      access: write,
      effect: 'write',
      // The body is the element itself.
      input: { params: idParams('project_id'), query: branchQuery, body: collectionSchemas[collection] },
      output: { 201: itemResponse(collection, `The ${one} and the version it made`) },
      async run(ctx, { query, body }: RequestInput<InProject, OnBranch, Item>): Promise<Reply> {
        return { status: 201, body: mapItem(one, await addItem(ctx, collection, query.branch, body)) };
      },
    }),
    get: defineOperation({
      name: `getOntology${title}`,
      summary: `One ${one} on a branch.`,
      access: read,
      effect: 'read',
      input: { params: elementParams(one), query: branchQuery },
      output: { 200: { description: `The ${one}`, schema: { type: 'object', required: [one], properties: { [one]: collectionSchemas[collection] } } } },
      async run(ctx, { params, query }: RequestInput<OneElement, OnBranch>): Promise<Reply> {
        return { body: { [one]: await getItem(ctx, collection, query.branch, params[one]) } };
      },
    }),
    remove: defineOperation({
      name: `removeOntology${title}`,
      summary: `Remove a ${one} on a branch: a new version of the definition.`,
      access: write,
      effect: 'write',
      input: { params: elementParams(one), query: branchQuery },
      output: { 204: { description: 'Removed' } },
      async run(ctx, { params, query }: RequestInput<OneElement, OnBranch>): Promise<Reply> {
        await removeItem(ctx, collection, query.branch, params[one]);
        return { status: 204 };
      },
    }),
  };
}

function replaceOperation(collection: Collection, title: string) {
  const one = SINGULAR[collection];
  return defineOperation({
    name: `replaceOntology${title}`,
    summary: `Replace a ${one} on a branch (its id stays): a new version of the definition.`,
    access: write,
    effect: 'write',
    input: { params: elementParams(one), query: branchQuery, body: collectionSchemas[collection] },
    output: { 200: itemResponse(collection, `The ${one} and the version it made`) },
    async run(ctx, { params, query, body }: RequestInput<InProject & Record<string, string>, OnBranch, Item>): Promise<Reply> {
      return { body: mapItem(one, await replaceItem(ctx, collection, query.branch, params[one], body)) };
    },
  });
}

const terms = collectionOperations('terms', 'Term');
const links = collectionOperations('links', 'Link');
const shapes = collectionOperations('shapes', 'Shape');
const constraints = collectionOperations('constraints', 'Constraint');
const imports = collectionOperations('imports', 'Import');

export const {
  list: listOntologyTermsOperation,
  add: addOntologyTermOperation,
  get: getOntologyTermOperation,
  remove: removeOntologyTermOperation,
} = terms;
export const replaceOntologyTermOperation = replaceOperation('terms', 'Term');
export const {
  list: listOntologyLinksOperation,
  add: addOntologyLinkOperation,
  get: getOntologyLinkOperation,
  remove: removeOntologyLinkOperation,
} = links;
export const {
  list: listOntologyShapesOperation,
  add: addOntologyShapeOperation,
  get: getOntologyShapeOperation,
  remove: removeOntologyShapeOperation,
} = shapes;
export const replaceOntologyShapeOperation = replaceOperation('shapes', 'Shape');
export const {
  list: listOntologyConstraintsOperation,
  add: addOntologyConstraintOperation,
  get: getOntologyConstraintOperation,
  remove: removeOntologyConstraintOperation,
} = constraints;
export const {
  list: listOntologyImportsOperation,
  add: addOntologyImportOperation,
  get: getOntologyImportOperation,
  remove: removeOntologyImportOperation,
} = imports;

/** Each collection's operations, for the routes generated per collection; `replace` only where elements are replaced in place. */
export const ontologyCollectionOperations = {
  terms: { ...terms, replace: replaceOntologyTermOperation },
  links,
  shapes: { ...shapes, replace: replaceOntologyShapeOperation },
  constraints,
  imports,
};

export const getOntologyOperation = defineOperation({
  name: 'getOntology',
  summary: 'The project’s ontology: the active compiled package and collection counts. 404 while no package is compiled and active.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id') },
  output: {
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
  async run(ctx, _input: RequestInput<InProject>): Promise<Reply> {
    return { body: { ontology: await getOntology(ctx) } };
  },
});

export const importOntologyDocumentOperation = defineOperation({
  name: 'importOntologyDocument',
  summary: 'Upload an RDF document (Turtle, N-Triples, N-Quads or JSON-LD) and import it whole.',
  access: write,
  effect: 'write',
  input: { params: idParams('project_id'), query: importDocumentQuery },
  // query.id: the import's id; body: the document's text; bodyType: its media type (one of RDF_UPLOAD_TYPES).
  output: {
    201: {
      description: 'The import, its stored document and the version it made',
      schema: { type: 'object', required: ['import', 'document'], properties: { import: collectionSchemas.imports, document: { type: 'object' }, version: versionRef } },
    },
  },
  async run(ctx, { query, body, bodyType }: RequestInput<InProject, OnBranch & { id: string }, string>): Promise<Reply> {
    const result = await importDocument(ctx, query.branch, query.id, bodyType!, body);
    return { status: 201, body: { import: result.item, document: result.document, version: result.version } };
  },
});

export const listOntologyVersionsOperation = defineOperation({
  name: 'listOntologyVersions',
  summary: 'Version history of the ontology, newest first; every edit is a version.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id'), query: ontologyVersionsQuery },
  // Without a branch, the versions of every branch.
  output: { 200: { description: 'A page of versions', schema: { type: 'object', required: ['versions', 'pagination'], properties: { versions: { type: 'array', items: versionRef }, pagination: paginationSchema } } } },
  async run(ctx, { query }: RequestInput<InProject, Partial<OnBranch> & PageRequest>): Promise<Reply> {
    const { branch, limit, offset } = query;
    return { body: await listVersions(ctx, { limit, offset }, branch) };
  },
});

export const getOntologyVersionOperation = defineOperation({
  name: 'getOntologyVersion',
  summary: 'One version with its whole definition.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id', 'version_id') },
  output: { 200: { description: 'The version', schema: { type: 'object', required: ['version'], properties: { version: { ...versionRef, properties: { ...(versionRef.properties as object), definition: definitionSchema } } } } } },
  async run(ctx, { params }: RequestInput<InProject & { version_id: string }>): Promise<Reply> {
    return { body: { version: await getVersion(ctx, params.version_id) } };
  },
});

export const listOntologyBranchesOperation = defineOperation({
  name: 'listOntologyBranches',
  summary: 'The ontology’s branches and their head versions.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id') },
  output: { 200: { description: 'Branches', schema: { type: 'object', required: ['branches'], properties: { branches: { type: 'array', items: { type: 'object' } } } } } },
  async run(ctx, _input: RequestInput<InProject>): Promise<Reply> {
    return { body: await listBranches(ctx) };
  },
});

export const createOntologyBranchOperation = defineOperation({
  name: 'createOntologyBranch',
  summary: 'Start a branch at a version (default: the head of main).',
  access: write,
  effect: 'write',
  input: { params: idParams('project_id'), body: createOntologyBranchBody },
  output: { 201: { description: 'The branch', schema: { type: 'object', required: ['branch'], properties: { branch: { type: 'object' } } } } },
  async run(ctx, { body }: RequestInput<InProject, NoQuery, { name: string; fromVersionId?: string }>): Promise<Reply> {
    const { name, fromVersionId } = body;
    return { status: 201, body: { branch: await createBranch(ctx, { name, fromVersionId }) } };
  },
});

export const compareOntologyBranchesOperation = defineOperation({
  name: 'compareOntologyBranches',
  summary: 'What changed from the head of one branch to another: added, removed and changed elements per collection.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id'), query: compareBranchesQuery },
  output: {
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
  async run(ctx, { query }: RequestInput<InProject, { base: string; head: string }>): Promise<Reply> {
    return { body: await compareBranches(ctx, query.base, query.head) };
  },
});

export const compileOntologyOperation = defineOperation({
  name: 'compileOntology',
  summary: 'Compile a branch head into a content-addressed package (Turtle and N-Quads). Every problem is listed with its element.',
  access: write,
  effect: 'write',
  input: { params: idParams('project_id'), body: compileOntologyBody },
  output: {
    200: { description: 'The same package as before (nothing changed)', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } } },
    201: { description: 'A new package', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } } },
  },
  async run(ctx, { body }: RequestInput<InProject, NoQuery, OnBranch>): Promise<Reply> {
    const { package: compiled, created } = await compileOntology(ctx, body.branch);
    // A new package is a 201; the same package again (an unchanged definition) a 200.
    return { status: created ? 201 : 200, body: { package: compiled } };
  },
});

export const listOntologyPackagesOperation = defineOperation({
  name: 'listOntologyPackages',
  summary: 'Compiled packages, newest first.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id'), query: listQuery() },
  output: { 200: { description: 'A page of packages', schema: { type: 'object', required: ['packages', 'pagination'], properties: { packages: { type: 'array', items: packageSchema }, pagination: paginationSchema } } } },
  async run(ctx, { query }: RequestInput<InProject, PageRequest>): Promise<Reply> {
    return { body: await listPackages(ctx, { limit: query.limit, offset: query.offset }) };
  },
});

/** The representations of a compiled package, by the media type the Accept header chooses. */
const PACKAGE_TYPES = ['application/json', 'text/turtle', 'application/n-quads'];

export const getOntologyPackageOperation = defineOperation({
  name: 'getOntologyPackage',
  summary: 'A compiled package: metadata as JSON, or its triples with Accept: text/turtle or application/n-quads.',
  access: read,
  effect: 'read',
  input: { params: idParams('project_id', 'package_id') },
  // The metadata as JSON (for a door that negotiates nothing, too), or the triples in the syntax the
  // caller accepts. One it names none of is refused after the lookup: an unknown package stays a 404
  // whatever the Accept header says.
  output: {
    200: { description: 'The package', schema: { type: 'object', required: ['package'], properties: { package: packageSchema } }, alternatives: ['text/turtle', 'application/n-quads'] },
  },
  async run({ db, project }, { params, accepts }: RequestInput<InProject & { package_id: string }>): Promise<Reply> {
    const wanted = accepts ? accepts(...PACKAGE_TYPES) : 'application/json';
    const pkg = await requirePackage(db, project, params.package_id);
    if (wanted === 'text/turtle') return { body: pkg.turtle, contentType: 'text/turtle; charset=utf-8' };
    if (wanted === 'application/n-quads') return { body: pkg.nquads, contentType: 'application/n-quads; charset=utf-8' };
    // No representation the caller accepts is a 406 (it was a 404 that named no missing resource).
    if (!wanted) throw new NotAcceptableError('not_acceptable', 'Ask for application/json, text/turtle or application/n-quads.');
    return { body: { package: presentPackage(pkg) } };
  },
});

export const activateOntologyPackageOperation = defineOperation({
  name: 'activateOntologyPackage',
  summary: 'Make a compiled package the active one: SPARQL and term-record reads use it.',
  access: write,
  effect: 'write',
  input: { params: idParams('project_id'), body: activatePackageBody },
  output: { 200: { description: 'The ontology with its new active package', schema: { type: 'object', required: ['ontology'], properties: { ontology: { type: 'object' } } } } },
  async run(ctx, { body }: RequestInput<InProject, NoQuery, { packageId: string }>): Promise<Reply> {
    return { body: { ontology: await activatePackage(ctx, body.packageId) } };
  },
});

export const ontologyOperations = [
  getOntologyOperation,
  listOntologyTermsOperation,
  addOntologyTermOperation,
  getOntologyTermOperation,
  removeOntologyTermOperation,
  replaceOntologyTermOperation,
  listOntologyLinksOperation,
  addOntologyLinkOperation,
  getOntologyLinkOperation,
  removeOntologyLinkOperation,
  listOntologyShapesOperation,
  addOntologyShapeOperation,
  getOntologyShapeOperation,
  removeOntologyShapeOperation,
  replaceOntologyShapeOperation,
  listOntologyConstraintsOperation,
  addOntologyConstraintOperation,
  getOntologyConstraintOperation,
  removeOntologyConstraintOperation,
  listOntologyImportsOperation,
  addOntologyImportOperation,
  getOntologyImportOperation,
  removeOntologyImportOperation,
  importOntologyDocumentOperation,
  listOntologyVersionsOperation,
  getOntologyVersionOperation,
  listOntologyBranchesOperation,
  createOntologyBranchOperation,
  compareOntologyBranchesOperation,
  compileOntologyOperation,
  listOntologyPackagesOperation,
  getOntologyPackageOperation,
  activateOntologyPackageOperation,
];
