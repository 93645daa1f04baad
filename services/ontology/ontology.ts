import { createHash } from 'node:crypto';
import { raw } from 'objection';
import { Parser } from 'n3';
import { ConflictError, InputError, NotFoundError, PayloadTooLargeError, PermissionError } from '../../core/errors';
import { schemaProblems, summarizeProblems } from '../../core/schema-validator';
import type { Executor } from '../../db/connection';
import { Ontology, OntologyBranch, OntologyDocument, OntologyPackage, OntologyVersion, PackageTerms, Project } from '../../db/models';
import { compilePackage, CompileProblem, defaultBaseIri, definitionProblems, serialize } from '../../ontology/compile';
import { Collection, collectionSchemas, COLLECTIONS, emptyDefinition, OntologyDefinition } from '../../ontology/definition';
import { isUnrestricted } from '../tenancy/access';
import { PageRequest, paginate, pageOf } from '../shared/pagination';
import { refreshBindingStatuses } from './read-bindings';
import { activePackage, findOntology, requirePackage } from './packages';
import type { OperationContext } from '../operations/context';
import { presentBranch, presentOntologyVersion, presentPackage, type PackageView } from './presenters';

export { activePackage, requirePackage };

export const MAIN_BRANCH = 'main';
/** Uploaded RDF documents: big enough to bring an existing ontology in whole. */
export const MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;
export const RDF_UPLOAD_TYPES = ['text/turtle', 'application/n-triples', 'application/n-quads', 'application/ld+json'] as const;

type Item = OntologyDefinition[Collection][number];

/** The project's ontology, created with an empty first version on main the first time anyone edits it; locked for the edit. */
async function ontologyForEdit(ctx: OperationContext): Promise<Ontology> {
  const { db, principal, project } = ctx;
  const existing = await findOntology(db, project, true);
  if (existing) return existing;
  await Ontology.query(db).insert({ workspaceId: project.workspaceId, projectId: project.id, baseIri: defaultBaseIri(project.id) }).onConflict('projectId').ignore();
  const ontology = (await findOntology(db, project, true))!;
  if (!(await OntologyBranch.query(db).findOne({ ontologyId: ontology.id, name: MAIN_BRANCH }))) {
    const first = await OntologyVersion.query(db).insertAndFetch({ ontologyId: ontology.id, number: 1, branchName: MAIN_BRANCH, parentVersionId: null, definition: emptyDefinition(), message: 'empty ontology', createdByMemberId: principal.memberId });
    await OntologyBranch.query(db).insert({ ontologyId: ontology.id, name: MAIN_BRANCH, headVersionId: first.id, createdByMemberId: principal.memberId });
  }
  return ontology;
}

/** The head version of a branch; before the first edit, main reads as an empty ontology. */
async function branchHead(db: Executor, ontology: Ontology | undefined, branch: string): Promise<OntologyVersion | undefined> {
  if (!ontology) {
    if (branch === MAIN_BRANCH) return undefined;
    throw new NotFoundError('ontology_branch', `This ontology has no branch "${branch}".`);
  }
  const row = await OntologyBranch.query(db).findOne({ ontologyId: ontology.id, name: branch });
  if (!row) throw new NotFoundError('ontology_branch', `This ontology has no branch "${branch}".`);
  return OntologyVersion.query(db).findById(row.headVersionId);
}

async function definitionAt(db: Executor, project: Project, branch: string): Promise<OntologyDefinition> {
  return (await branchHead(db, await findOntology(db, project), branch))?.definition ?? emptyDefinition();
}

export async function listItems(ctx: OperationContext, collection: Collection, branch: string, page: PageRequest) {
  const { db, project } = ctx;
  const items = (await definitionAt(db, project, branch))[collection] as Item[];
  return { [collection]: items.slice(page.offset, page.offset + page.limit), pagination: paginate(page, items.length) };
}

const itemNotFound = (collection: Collection, id: string) => new NotFoundError(collection.slice(0, -1), `No ${collection.slice(0, -1)} "${id}" on this branch of the ontology.`);

export async function getItem(ctx: OperationContext, collection: Collection, branch: string, id: string): Promise<Item> {
  const { db, project } = ctx;
  const item = ((await definitionAt(db, project, branch))[collection] as Item[]).find((candidate) => candidate.id === id);
  if (!item) throw itemNotFound(collection, id);
  return item;
}

/** One edit of a branch: a new version holding the changed definition, as its head. */
async function commitEdit(ctx: OperationContext, branch: string, edit: (definition: OntologyDefinition) => string): Promise<OntologyVersion> {
  const { db, principal } = ctx;
  const ontology = await ontologyForEdit(ctx);
  const head = (await branchHead(db, ontology, branch))!;
  const definition = structuredClone(head.definition);
  const message = edit(definition);
  const number = Number((await OntologyVersion.query(db).where({ ontologyId: ontology.id }).max('number as max').first() as unknown as { max: number }).max) + 1;
  const version = await OntologyVersion.query(db).insertAndFetch({ ontologyId: ontology.id, number, branchName: branch, parentVersionId: head.id, definition, message, createdByMemberId: principal.memberId });
  await OntologyBranch.query(db).patch({ headVersionId: version.id, updatedAt: raw('now()') as unknown as Date }).where({ ontologyId: ontology.id, name: branch });
  await Ontology.query(db).patch({ updatedAt: raw('now()') as unknown as Date }).where({ id: ontology.id });
  return version;
}

function checkItem(collection: Collection, item: unknown): void {
  const problems = schemaProblems(collectionSchemas[collection], item);
  if (problems.length) throw new InputError('validation_failed', `The ${collection.slice(0, -1)} is invalid: ${summarizeProblems(problems)}`, problems);
}

/**
 * A package import copies the package's triples into this project's next compiled package, which
 * anyone who may read this project can read. So the caller must be allowed in the project the
 * package belongs to, or a key restricted to this project could read another project's ontology
 * through it. (Unknown ids, and other workspaces' packages, stay a compile problem of the import.)
 */
async function assertImportablePackage(ctx: OperationContext, item: Item): Promise<void> {
  const { db, principal, project } = ctx;
  if (!('ontologyPackageId' in item) || isUnrestricted(principal)) return;
  const source = await OntologyPackage.query(db).join('ontologies', 'ontologies.id', 'ontology_packages.ontology_id')
    .where('ontology_packages.workspace_id', project.workspaceId).where('ontology_packages.id', item.ontologyPackageId)
    .select('ontologies.project_id as projectId').first() as unknown as { projectId: string } | undefined;
  if (source && !principal.projectIds.includes(source.projectId)) {
    throw new PermissionError('project_denied', 'This API key is not allowed to access the project this package belongs to, so it cannot import it.', { ontologyPackageId: item.ontologyPackageId });
  }
}

export async function addItem(ctx: OperationContext, collection: Collection, branch: string, item: Item) {
  checkItem(collection, item);
  if (collection === 'imports') await assertImportablePackage(ctx, item);
  const version = await commitEdit(ctx, branch, (definition) => {
    const items = definition[collection] as Item[];
    if (items.some((existing) => existing.id === item.id)) throw new ConflictError('element_exists', `This branch already has a ${collection.slice(0, -1)} "${item.id}"; change it with PUT or pick another id.`);
    items.push(item);
    return `add ${collection.slice(0, -1)} ${item.id}`;
  });
  return { item, version: presentOntologyVersion(version, false) };
}

export async function replaceItem(ctx: OperationContext, collection: Collection, branch: string, id: string, item: Item) {
  checkItem(collection, item);
  if (item.id !== id) throw new InputError('id_mismatch', `The body's id "${item.id}" differs from the path's "${id}"; ids are fixed (delete and add to rename).`, [{ path: '/id', message: 'must equal the id in the path' }]);
  const version = await commitEdit(ctx, branch, (definition) => {
    const items = definition[collection] as Item[];
    const index = items.findIndex((existing) => existing.id === id);
    if (index < 0) throw itemNotFound(collection, id);
    items[index] = item;
    return `change ${collection.slice(0, -1)} ${id}`;
  });
  return { item, version: presentOntologyVersion(version, false) };
}

export async function removeItem(ctx: OperationContext, collection: Collection, branch: string, id: string) {
  await commitEdit(ctx, branch, (definition) => {
    const items = definition[collection] as Item[];
    const index = items.findIndex((existing) => existing.id === id);
    if (index < 0) throw itemNotFound(collection, id);
    items.splice(index, 1);
    return `remove ${collection.slice(0, -1)} ${id}`;
  });
}

/** The origin and path of a URL named in a document, for a message (no credentials, no query string). */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'a URL';
  }
}

/** Parses an uploaded RDF document (Turtle, N-Triples, N-Quads or JSON-LD) into N-Quads; syntax errors name the line. */
async function parseDocument(text: string, mediaType: string): Promise<string> {
  // jsonld's default Node document loader fetches every remote @context (and @import) from this
  // process: an upload naming http://169.254.169.254/… or an internal host would make Weft
  // request it (SSRF), and pull content past the upload size limit. Uploads must carry their
  // contexts inline, so the loader refuses every URL and the upload is a 422 that says so.
  let remoteContext: string | undefined;
  const refuseRemoteDocuments = async (url: string): Promise<never> => {
    remoteContext ??= url;
    throw new Error('remote documents are not loaded');
  };
  try {
    if (mediaType === 'application/ld+json') {
      const jsonld = await import('jsonld');
      return (await jsonld.default.toRDF(JSON.parse(text), { format: 'application/n-quads', documentLoader: refuseRemoteDocuments })) as unknown as string;
    }
    const quads = new Parser({ format: mediaType }).parse(text);
    return serialize(quads, { format: 'N-Quads' });
  } catch (error) {
    if (remoteContext !== undefined) {
      throw new InputError('remote_context_refused', `The JSON-LD document refers to a remote context (${shownUrl(remoteContext)}); Weft does not fetch remote documents. Put the @context inline.`);
    }
    throw new InputError('invalid_rdf', `The ${mediaType} document does not parse: ${(error as Error).message}`);
  }
}

/** Uploads an RDF document and adds it as an import (one new version). */
export async function importDocument(ctx: OperationContext, branch: string, importId: string, mediaType: string, text: string) {
  const { db, principal } = ctx;
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_DOCUMENT_BYTES) throw new PayloadTooLargeError('document_too_large', `An imported RDF document may be at most ${MAX_DOCUMENT_BYTES} bytes; this one is ${bytes}.`);
  checkItem('imports', { id: importId, kind: 'document', documentId: '00000000-0000-4000-8000-000000000000' });
  const nquads = await parseDocument(text, mediaType);
  // A document without a triple imports nothing: most likely the wrong file or a failed export.
  if (!nquads.trim()) throw new InputError('empty_document', `The ${mediaType} document holds no triples; an import needs at least one.`);
  const ontology = await ontologyForEdit(ctx);
  const document = await OntologyDocument.query(db).insertAndFetch({
    ontologyId: ontology.id,
    mediaType,
    byteSize: bytes,
    contentHash: `sha256:${createHash('sha256').update(nquads).digest('hex')}`,
    nquads,
    tripleCount: nquads.split('\n').filter(Boolean).length,
    createdByMemberId: principal.memberId,
  });
  const item = { id: importId, kind: 'document' as const, documentId: document.id };
  const { version } = await addItem(ctx, 'imports', branch, item);
  return { item, document: { id: document.id, mediaType, byteSize: bytes, tripleCount: document.tripleCount, contentHash: document.contentHash }, version };
}

export async function listVersions(ctx: OperationContext, page: PageRequest, branch?: string) {
  const { db, project } = ctx;
  const ontology = await findOntology(db, project);
  if (!ontology) return { versions: [], pagination: paginate(page, 0) };
  const base = OntologyVersion.query(db).where({ ontologyId: ontology.id });
  if (branch) base.where('branchName', branch);
  const { rows, pagination } = await pageOf(base, page, { column: 'number', order: 'desc' });
  return { versions: rows.map((v) => presentOntologyVersion(v, false)), pagination };
}

export async function getVersion(ctx: OperationContext, versionId: string) {
  const { db, project } = ctx;
  const ontology = await findOntology(db, project);
  const version = ontology ? await OntologyVersion.query(db).findOne({ id: versionId, ontologyId: ontology.id }) : undefined;
  if (!version) throw new NotFoundError('ontology_version', 'No version with this id in this ontology.');
  return presentOntologyVersion(version, true);
}

export async function listBranches(ctx: OperationContext) {
  const { db, project } = ctx;
  const ontology = await findOntology(db, project);
  const rows = ontology ? await OntologyBranch.query(db).where({ ontologyId: ontology.id }).orderBy('createdAt') : [];
  return { branches: rows.map(presentBranch) };
}

export async function createBranch(ctx: OperationContext, input: { name: string; fromVersionId?: string }) {
  const { db, principal } = ctx;
  const ontology = await ontologyForEdit(ctx);
  if (await OntologyBranch.query(db).findOne({ ontologyId: ontology.id, name: input.name })) throw new ConflictError('branch_exists', `This ontology already has a branch "${input.name}".`);
  const from = input.fromVersionId ? await OntologyVersion.query(db).findOne({ id: input.fromVersionId, ontologyId: ontology.id }) : await branchHead(db, ontology, MAIN_BRANCH);
  if (!from) throw new NotFoundError('ontology_version', 'No version with this fromVersionId in this ontology.');
  const branch = await OntologyBranch.query(db).insertAndFetch({ ontologyId: ontology.id, name: input.name, headVersionId: from.id, createdByMemberId: principal.memberId });
  return presentBranch(branch);
}

/** What changed from one branch's head to another's, per collection, by element id. */
export async function compareBranches(ctx: OperationContext, base: string, head: string) {
  const { db, project } = ctx;
  const ontology = await findOntology(db, project);
  const [from, to] = [(await branchHead(db, ontology, base))?.definition ?? emptyDefinition(), (await branchHead(db, ontology, head))?.definition ?? emptyDefinition()];
  const diff = { added: {} as Record<string, Item[]>, removed: {} as Record<string, Item[]>, changed: {} as Record<string, Array<{ id: string; before: Item; after: Item }>> };
  for (const collection of COLLECTIONS) {
    const before = new Map((from[collection] as Item[]).map((item) => [item.id, item]));
    const after = new Map((to[collection] as Item[]).map((item) => [item.id, item]));
    diff.added[collection] = [...after.values()].filter((item) => !before.has(item.id));
    diff.removed[collection] = [...before.values()].filter((item) => !after.has(item.id));
    diff.changed[collection] = [...after.values()]
      .filter((item) => before.has(item.id) && JSON.stringify(before.get(item.id)) !== JSON.stringify(item))
      .map((item) => ({ id: item.id, before: before.get(item.id)!, after: item }));
  }
  return { base, head, ...diff };
}

function packageTerms(definition: OntologyDefinition): PackageTerms {
  return {
    classes: definition.terms.filter((t) => t.kind === 'class').map((t) => t.id),
    properties: Object.fromEntries(definition.terms.filter((t) => t.kind === 'property').map((t) => [t.id, { domain: t.domain!, datatype: t.datatype! }])),
    links: Object.fromEntries(definition.links.map((l) => [l.id, { from: l.from, to: l.to }])),
  };
}

const countsOf = (definition: OntologyDefinition, tripleCount: number) => ({
  terms: definition.terms.length,
  links: definition.links.length,
  shapes: definition.shapes.length,
  constraints: definition.constraints.length,
  imports: definition.imports.length,
  triples: tripleCount,
});

/**
 * Compiles a branch head: every problem listed with its element, or a content-addressed package
 * (compiling an unchanged definition again returns the same package). Does not activate it.
 */
export async function compileOntology(ctx: OperationContext, branch: string): Promise<{ package: PackageView; created: boolean }> {
  const { db, principal, project } = ctx;
  const ontology = await ontologyForEdit(ctx);
  const head = (await branchHead(db, ontology, branch))!;
  const definition = head.definition;
  const packageIds = definition.imports.flatMap((i) => (i.kind === 'package' ? [i.ontologyPackageId] : []));
  const documentIds = definition.imports.flatMap((i) => (i.kind === 'document' ? [i.documentId] : []));
  const packages = packageIds.length ? await OntologyPackage.query(db).where({ workspaceId: project.workspaceId }).whereIn('id', packageIds).select('id', 'nquads') : [];
  const documents = documentIds.length ? await OntologyDocument.query(db).where({ ontologyId: ontology.id }).whereIn('id', documentIds).select('id', 'nquads') : [];
  const inputs = { baseIri: ontology.baseIri, packages: new Map(packages.map((p) => [p.id, p.nquads])), documents: new Map(documents.map((d) => [d.id, d.nquads])) };
  const problems = definitionProblems(definition, inputs);
  if (problems.length) throw compileFailed(problems);
  const compiled = await compilePackage(definition, inputs);
  const existing = await OntologyPackage.query(db).findOne({ ontologyId: ontology.id, contentHash: compiled.contentHash });
  if (existing) return { package: presentPackage(existing), created: false };
  const created = await OntologyPackage.query(db).insertAndFetch({
    ontologyId: ontology.id,
    workspaceId: project.workspaceId,
    versionId: head.id,
    contentHash: compiled.contentHash,
    baseIri: ontology.baseIri,
    nquads: compiled.nquads,
    turtle: compiled.turtle,
    tripleCount: compiled.tripleCount,
    counts: countsOf(definition, compiled.tripleCount),
    terms: packageTerms(definition),
    compiledByMemberId: principal.memberId,
  });
  return { package: presentPackage(created), created: true };
}

function compileFailed(problems: CompileProblem[]): InputError {
  return new InputError(
    'ontology_invalid',
    `The ontology does not compile: ${problems.slice(0, 3).map((p) => `${p.element}: ${p.message}`).join('; ')}${problems.length > 3 ? '; …' : ''}`,
    problems.map((p) => ({ path: p.path, message: `${p.element}: ${p.message}` })),
    { problems },
  );
}


export async function listPackages(ctx: OperationContext, page: PageRequest) {
  const { db, project } = ctx;
  const ontology = await findOntology(db, project);
  if (!ontology) return { packages: [], pagination: paginate(page, 0) };
  const { rows, pagination } = await pageOf(OntologyPackage.query(db).where({ ontologyId: ontology.id }).select('id', 'contentHash', 'versionId', 'baseIri', 'tripleCount', 'counts', 'compiledByMemberId', 'compiledAt'), page, { column: 'compiledAt', order: 'desc' });
  return { packages: rows.map(presentPackage), pagination };
}

export async function activatePackage(ctx: OperationContext, packageId: string) {
  const { db, project } = ctx;
  const pkg = await requirePackage(db, project, packageId);
  await Ontology.query(db).patch({ activePackageId: pkg.id, updatedAt: raw('now()') as unknown as Date }).where({ id: pkg.ontologyId });
  await refreshBindingStatuses(db, project);
  return getOntology(ctx);
}

/** The active package of a project, or undefined while none is compiled and activated. */

/** GET /ontology: package metadata and collection counts; 404 while no package is compiled and active (SPEC 7). */
export async function getOntology(ctx: OperationContext) {
  const { db, project } = ctx;
  const ontology = await findOntology(db, project);
  const pkg = await activePackage(db, project);
  if (!ontology || !pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet: add terms, compile, then activate the package.');
  const version = await OntologyVersion.query(db).findById(pkg.versionId);
  return {
    projectId: project.id,
    baseIri: ontology.baseIri,
    package: { ...presentPackage(pkg), versionNumber: version?.number ?? null, branchName: version?.branchName ?? null },
    counts: pkg.counts,
    updatedAt: ontology.updatedAt.toISOString(),
  };
}
