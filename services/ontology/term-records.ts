import { Parser, Store } from 'n3';
import { InputError, NotFoundError, PermissionError } from '../../core/errors';
import type { OntologyPackage, ReadBinding } from '../../db/models';
import { mapRecord } from '../../ontology/term-records';
import { activePackage } from './ontology';
import { authorizeTermRead, bindingFields, readableBindings } from './read-bindings';
import { DEFAULT_RECORDS_LIMIT, readEndpointRecords } from '../endpoints/records-read';
import type { OperationContext } from '../operations/context';

// The records of a term through its bindings (SPEC 2.6), cursor-paged like records reads, and a
// SHACL shape check of them. Named grants are checked per binding: a binding whose grants the
// key lacks contributes nothing, and no scope stands in for a grant.

/** Bounded work for a shape check: at most this many records are read and checked. */
export const SHAPE_CHECK_MAX_RECORDS = 5000;
const MAX_REPORTED_RESULTS = 500;

interface TermCursor {
  /** The binding being read, and the records cursor within it. */
  b: string;
  c: string | null;
}

const encodeCursor = (cursor: TermCursor) => Buffer.from(JSON.stringify(cursor)).toString('base64url');

function decodeCursor(text: string): TermCursor {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as TermCursor;
    if (typeof parsed.b === 'string' && (parsed.c === null || typeof parsed.c === 'string')) return parsed;
  } catch {
    // fall through
  }
  throw new InputError('invalid_cursor', 'The cursor is not one this read returned. Start again without it.', [{ path: 'query:cursor', message: 'is not a cursor of this read' }]);
}

async function termContext(ctx: OperationContext, termId: string): Promise<{ pkg: OntologyPackage; readable: ReadBinding[]; withheld: number }> {
  const { db, principal, project } = ctx;
  authorizeTermRead(principal);
  const pkg = await activePackage(db, project);
  if (!pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet.');
  if (!pkg.terms.classes.includes(termId)) throw new NotFoundError('term', `The active ontology package has no class "${termId}".`);
  const { readable, withheld } = await readableBindings(ctx, termId);
  if (!readable.length && withheld) {
    throw new PermissionError('read_grant_required', 'Every binding of this term requires named read grants this API key lacks.', { withheldBindings: withheld });
  }
  return { pkg, readable, withheld };
}

/**
 * One page of a term's records: bindings are read one after another, each with the records read
 * of its endpoint (same caps and cursors), and each record mapped to the term's properties.
 */
export async function readTermRecords(ctx: OperationContext, termId: string, params: { limit?: number; cursor?: string }) {
  const { db, principal, project } = ctx;
  const { pkg, readable, withheld } = await termContext(ctx, termId);
  const limit = params.limit ?? DEFAULT_RECORDS_LIMIT;
  const cursor = params.cursor ? decodeCursor(params.cursor) : undefined;
  let index = cursor ? readable.findIndex((b) => b.id === cursor.b) : 0;
  if (index < 0) throw new InputError('invalid_cursor', 'The binding this cursor was reading is gone or no longer readable. Start again without it.', [{ path: 'query:cursor', message: 'names a binding that is not readable' }]);
  let inner = cursor?.c ?? undefined;
  const data: Array<Record<string, unknown>> = [];
  let skipped = 0;
  let next: TermCursor | null = null;
  while (index < readable.length && data.length < limit) {
    const binding = readable[index];
    const page = await readEndpointRecords(ctx, binding.dataEndpointId, { limit: limit - data.length, select: bindingFields(binding.mapping).join(','), cursor: inner });
    for (const record of page.data) {
      const mapped = mapRecord(record, termId, binding.mapping, pkg.terms, pkg.baseIri);
      if (mapped) data.push({ ...mapped.term, '@binding': binding.id });
      else skipped += 1;
    }
    if (page.metadata.nextCursor) {
      inner = page.metadata.nextCursor;
      next = { b: binding.id, c: inner };
      // A full page ends here; otherwise the same binding continues in this request.
      if (data.length >= limit) break;
    } else {
      index += 1;
      inner = undefined;
      next = index < readable.length ? { b: readable[index].id, c: null } : null;
    }
  }
  const nextCursor = next ? encodeCursor(next) : null;
  await ctx.deps.metering.chargeRecordsRead(db, { workspaceId: project.workspaceId, projectId: project.id, actor: principal, records: data.length });
  return {
    data,
    metadata: {
      term: termId,
      ontologyPackageId: pkg.id,
      rowCount: data.length,
      limit,
      hasMore: nextCursor !== null,
      nextCursor,
      /** Records without a value for a field of the subject IRI template. */
      unmappedRecords: skipped,
      withheldBindings: withheld,
    },
  };
}

/**
 * How the term's records conform to the package's SHACL shapes (its own shapes and the
 * cardinalities of its properties), checked with rdf-validate-shacl on at most
 * SHAPE_CHECK_MAX_RECORDS records.
 */
export async function checkTermShapes(ctx: OperationContext, termId: string, maxRecords = SHAPE_CHECK_MAX_RECORDS) {
  const { db, principal, project } = ctx;
  const { pkg, readable, withheld } = await termContext(ctx, termId);
  const data = new Store();
  let checked = 0;
  let truncated = false;
  for (const binding of readable) {
    if (checked >= maxRecords) {
      truncated = true;
      break;
    }
    let cursor: string | undefined;
    do {
      const page = await readEndpointRecords(ctx, binding.dataEndpointId, { limit: Math.min(1000, maxRecords - checked), select: bindingFields(binding.mapping).join(','), cursor });
      for (const record of page.data) {
        const mapped = mapRecord(record, termId, binding.mapping, pkg.terms, pkg.baseIri);
        if (mapped) data.addQuads(mapped.quads);
        checked += 1;
      }
      cursor = page.metadata.nextCursor ?? undefined;
      if (cursor && checked >= maxRecords) truncated = true;
    } while (cursor && !truncated);
    if (truncated) break;
  }
  // The records were read as a term read reads them, and are metered as one (SPEC 2.7).
  await ctx.deps.metering.chargeRecordsRead(db, { workspaceId: project.workspaceId, projectId: project.id, actor: principal, records: checked });
  const shapes = new Store(new Parser({ format: 'application/n-quads' }).parse(pkg.nquads));
  const { default: SHACLValidator } = await import('rdf-validate-shacl');
  // Imports are already in the package; nothing is fetched.
  const validator = new SHACLValidator(shapes, { importGraph: () => new Store(), maxErrors: MAX_REPORTED_RESULTS });
  const report = await validator.validate(data);
  const local = (iri: string | undefined) => (iri?.startsWith(pkg.baseIri) ? iri.slice(pkg.baseIri.length) : iri ?? null);
  return {
    term: termId,
    ontologyPackageId: pkg.id,
    conforms: report.conforms,
    checkedRecords: checked,
    truncated,
    withheldBindings: withheld,
    results: report.results.slice(0, MAX_REPORTED_RESULTS).map((result) => ({
      focusNode: result.focusNode?.value ?? null,
      path: local(result.path?.value),
      value: result.value?.value ?? null,
      message: result.message.map((m) => m.value).join('; ') || null,
      severity: result.severity?.value.replace('http://www.w3.org/ns/shacl#', '') ?? null,
      constraint: result.sourceConstraintComponent?.value.replace('http://www.w3.org/ns/shacl#', '') ?? null,
      sourceShape: result.sourceShape?.termType === 'NamedNode' ? local(result.sourceShape.value) : null,
    })),
  };
}
