import { collectionSchemas, type Collection, type OntologyDefinition } from '../../ontology/definition';
import { defineOperation } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
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
  MAIN_BRANCH,
  presentPackage,
  removeItem,
  replaceItem,
  requirePackage,
} from './ontology';
import { idParams, listQuery } from '../../schemas/common';
import { activatePackageBody, branchQuery, collectionListQuery, compareBranchesQuery, compileOntologyBody, createOntologyBranchBody, elementParams, importDocumentQuery, ontologyVersionsQuery } from '../../schemas/ontology';

// The ontology operations (SPEC 2.6, 4.5): collections edited on branches (each edit a version),
// compiled into content-addressed packages, one of them active. Each declares its access once;
// HTTP routes (api/routes/ontology.ts) invoke them (services/operations/invoke.ts).

const read = { scopes: { anyOf: ['ontologies:read'] }, project: true } as const;
const write = { scopes: { anyOf: ['ontologies:write'] }, project: true, actor: 'accountable' } as const;

type InProject = { projectId: string };
/** The branch read or edited; main when not given (the HTTP query defaults it too). */
type OnBranch = InProject & { branch?: string };
/** Element ids are local names (terms/Customer), not UUIDs. */
type OneElement = OnBranch & { id: string };
type Item = OntologyDefinition[Collection][number];

const SINGULAR: Record<Collection, string> = { terms: 'term', links: 'link', shapes: 'shape', constraints: 'constraint', imports: 'import' };

const mapItem = (one: string, result: { item: unknown; version: unknown }) => ({ [one]: result.item, version: result.version });

/**
 * The operations of one collection, one per route and named as the routes were (listOntologyTerms,
 * addOntologyTerm, getOntologyTerm, removeOntologyTerm). Terms and shapes are also replaced in place
 * (replaceOperation); links, constraints and imports are only added and removed.
 */
function collectionOperations(collection: Collection, title: string) {
  const one = SINGULAR[collection];
  return {
    list: defineOperation({
      name: `listOntology${title}s`,
      summary: `The ${collection} of the ontology on a branch.`,
      access: read,
      effect: 'read',
      input: { flat: true, params: idParams('project_id'), query: collectionListQuery },
      run: (ctx, { branch = MAIN_BRANCH, limit, offset }: OnBranch & PageRequest) => listItems(ctx, collection, branch, { limit, offset }),
    }),
    add: defineOperation({
      name: `addOntology${title}`,
      summary: `Add a ${one} on a branch: a new version of the definition.`,
      access: write,
      effect: 'write',
      // The body is the element itself: the operation takes it whole as `item`.
      input: { flat: true, params: idParams('project_id'), query: branchQuery, body: collectionSchemas[collection] },
      run: async (ctx, { branch = MAIN_BRANCH, item }: OnBranch & { item: Item }) => mapItem(one, await addItem(ctx, collection, branch, item)),
    }),
    get: defineOperation({
      name: `getOntology${title}`,
      summary: `One ${one} on a branch.`,
      access: read,
      effect: 'read',
      input: { flat: true, params: elementParams(one), query: branchQuery },
      run: async (ctx, { branch = MAIN_BRANCH, id }: OneElement) => ({ [one]: await getItem(ctx, collection, branch, id) }),
    }),
    remove: defineOperation({
      name: `removeOntology${title}`,
      summary: `Remove a ${one} on a branch: a new version of the definition.`,
      access: write,
      effect: 'write',
      input: { flat: true, params: elementParams(one), query: branchQuery },
      run: async (ctx, { branch = MAIN_BRANCH, id }: OneElement) => {
        await removeItem(ctx, collection, branch, id);
        return { removed: true, id };
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
    input: { flat: true, params: elementParams(one), query: branchQuery, body: collectionSchemas[collection] },
    run: async (ctx, { branch = MAIN_BRANCH, id, item }: OneElement & { item: Item }) =>
      mapItem(one, await replaceItem(ctx, collection, branch, id, item)),
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
  input: { flat: true, params: idParams('project_id') },
  run: async (ctx, _input: InProject) => ({ ontology: await getOntology(ctx) }),
});

export const importOntologyDocumentOperation = defineOperation({
  name: 'importOntologyDocument',
  summary: 'Upload an RDF document (Turtle, N-Triples, N-Quads or JSON-LD) and import it whole.',
  access: write,
  effect: 'write',
  input: { flat: true, params: idParams('project_id'), query: importDocumentQuery },
  // id: the import's id; body: the document's text; bodyType: its media type (one of RDF_UPLOAD_TYPES).
  run: async (ctx, { branch = MAIN_BRANCH, id, body, bodyType }: OneElement & { body: string; bodyType: string }) => {
    const result = await importDocument(ctx, branch, id, bodyType, body);
    return { import: result.item, document: result.document, version: result.version };
  },
});

export const listOntologyVersionsOperation = defineOperation({
  name: 'listOntologyVersions',
  summary: 'Version history of the ontology, newest first; every edit is a version.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id'), query: ontologyVersionsQuery },
  // Without a branch, the versions of every branch.
  run: (ctx, { branch, limit, offset }: OnBranch & PageRequest) => listVersions(ctx, { limit, offset }, branch),
});

export const getOntologyVersionOperation = defineOperation({
  name: 'getOntologyVersion',
  summary: 'One version with its whole definition.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id', 'version_id') },
  run: async (ctx, { versionId }: InProject & { versionId: string }) => ({ version: await getVersion(ctx, versionId) }),
});

export const listOntologyBranchesOperation = defineOperation({
  name: 'listOntologyBranches',
  summary: 'The ontology’s branches and their head versions.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id') },
  run: (ctx, _input: InProject) => listBranches(ctx),
});

export const createOntologyBranchOperation = defineOperation({
  name: 'createOntologyBranch',
  summary: 'Start a branch at a version (default: the head of main).',
  access: write,
  effect: 'write',
  input: { flat: true, params: idParams('project_id'), body: createOntologyBranchBody },
  run: async (ctx, { name, fromVersionId }: InProject & { name: string; fromVersionId?: string }) => ({
    branch: await createBranch(ctx, { name, fromVersionId }),
  }),
});

export const compareOntologyBranchesOperation = defineOperation({
  name: 'compareOntologyBranches',
  summary: 'What changed from the head of one branch to another: added, removed and changed elements per collection.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id'), query: compareBranchesQuery },
  run: (ctx, { base = MAIN_BRANCH, head }: InProject & { base?: string; head: string }) => compareBranches(ctx, base, head),
});

export const compileOntologyOperation = defineOperation({
  name: 'compileOntology',
  summary: 'Compile a branch head into a content-addressed package (Turtle and N-Quads). Every problem is listed with its element.',
  access: write,
  effect: 'write',
  input: { flat: true, params: idParams('project_id'), body: compileOntologyBody },
  // `created` is false when an unchanged definition gave back the same package: the route answers 200
  // instead of 201 and leaves `created` out of the body.
  run: (ctx, { branch = MAIN_BRANCH }: OnBranch) => compileOntology(ctx, branch),
});

export const listOntologyPackagesOperation = defineOperation({
  name: 'listOntologyPackages',
  summary: 'Compiled packages, newest first.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id'), query: listQuery() },
  run: (ctx, { limit, offset }: InProject & PageRequest) => listPackages(ctx, { limit, offset }),
});

/** The representations of a compiled package: its metadata, or its triples as Turtle or N-Quads. */
export type PackageFormat = 'json' | 'turtle' | 'nquads';

export const getOntologyPackageOperation = defineOperation({
  name: 'getOntologyPackage',
  summary: 'A compiled package: metadata as JSON, or its triples with Accept: text/turtle or application/n-quads.',
  access: read,
  effect: 'read',
  input: { flat: true, params: idParams('project_id', 'package_id') },
  // The metadata always; with format turtle or nquads, the triples in that syntax as well (the route
  // answers them as the body, by the caller's Accept header).
  run: async ({ db, project }, { packageId, format = 'json' }: InProject & { packageId: string; format?: PackageFormat }) => {
    const pkg = await requirePackage(db, project, packageId);
    return {
      package: presentPackage(pkg),
      ...(format === 'turtle' ? { turtle: pkg.turtle } : {}),
      ...(format === 'nquads' ? { nquads: pkg.nquads } : {}),
    };
  },
});

export const activateOntologyPackageOperation = defineOperation({
  name: 'activateOntologyPackage',
  summary: 'Make a compiled package the active one: SPARQL and term-record reads use it.',
  access: write,
  effect: 'write',
  input: { flat: true, params: idParams('project_id'), body: activatePackageBody },
  run: async (ctx, { packageId }: InProject & { packageId: string }) => ({ ontology: await activatePackage(ctx, packageId) }),
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
