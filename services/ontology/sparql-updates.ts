import { createHash, randomUUID } from 'node:crypto';
import { Parser as SparqlParser, SparqlQuery } from 'sparqljs';
import type { Quad_Object, Quad_Subject, Term } from '@rdfjs/types';
import { BadRequestError, InputError } from '../../core/errors';
import type { OntologyPackage, ReadBinding } from '../../db/models';
import { NS } from '../../ontology/compile';
import { templateFields } from '../../ontology/term-records';
import { activePackage } from './ontology';
import { readableBindings } from './read-bindings';
import { currentSourceSnapshot, WriteActionView } from '../endpoints/source-writes';
import { submitSourceWriteOperation } from '../endpoints/write-operations';
import type { OperationContext } from '../operations/context';
import { invokeWithin } from '../operations/invoke';
import { NotFoundError } from '../../core/errors';
import { findCapability } from '../../plugins';
import { capabilityContext, requireDataEndpoint } from '../endpoints/data-endpoints';
import { callerIdOf } from '../tenancy/access';

// SPARQL updates never go around governance (SPEC 4.5): INSERT DATA and DELETE DATA on the
// records of bound terms become governed write actions on the bound endpoints, under their write
// policies, grants and approvals. Everything else (the compiled package, other update forms) is refused.

type Triple = { subject: Term; predicate: Term; object: Term };
interface Change {
  binding: ReadBinding;
  key: Record<string, string>;
  set: Record<string, unknown>;
  /** DELETE DATA of the subject's rdf:type: the record goes. */
  remove: boolean;
}

const RDF_TYPE = `${NS.rdf}type`;

/** A regular expression matching a binding's subject IRIs, capturing its key fields. */
function templatePattern(template: string): { pattern: RegExp; fields: string[] } {
  const fields = templateFields(template);
  const source = template.split(/\{[^{}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('([^/?#]+)');
  return { pattern: new RegExp(`^${source}$`), fields };
}

function literalValue(term: Term): unknown {
  if (term.termType !== 'Literal') return term.value;
  const type = (term as { datatype?: { value: string } }).datatype?.value ?? '';
  if (/#(integer|decimal|double|float|int|long)$/.test(type)) return Number(term.value);
  if (type.endsWith('#boolean')) return term.value === 'true';
  return term.value;
}

/** Finds the binding a subject belongs to and the key its IRI carries. */
function locate(subject: Quad_Subject | Term, bindings: ReadBinding[]): { binding: ReadBinding; key: Record<string, string> } | undefined {
  if (subject.termType !== 'NamedNode') return undefined;
  for (const binding of bindings) {
    const { pattern, fields } = templatePattern(binding.mapping.subjectTemplate);
    const match = pattern.exec(subject.value);
    if (match) return { binding, key: Object.fromEntries(fields.map((field, i) => [field, decodeURIComponent(match[i + 1])])) };
  }
  return undefined;
}

function changesOf(triples: Triple[], inserting: boolean, bindings: ReadBinding[], pkg: OntologyPackage): Change[] {
  const bySubject = new Map<string, Change>();
  for (const triple of triples) {
    const located = locate(triple.subject, bindings);
    if (!located) throw new InputError('update_outside_bound_data', `${triple.subject.value} is not a record of a bound term this key may read; SPARQL updates change only bound records.`);
    const { binding, key } = located;
    const id = `${binding.id} ${triple.subject.value}`;
    const change = bySubject.get(id) ?? { binding, key, set: {}, remove: false };
    bySubject.set(id, change);
    const predicate = triple.predicate.value;
    if (predicate === RDF_TYPE) {
      if (triple.object.value !== `${pkg.baseIri}${binding.termId}`) throw new InputError('update_type_mismatch', `${triple.subject.value} is a ${binding.termId}; it cannot be given another type.`);
      if (!inserting) change.remove = true;
      continue;
    }
    const name = predicate.startsWith(pkg.baseIri) ? predicate.slice(pkg.baseIri.length) : undefined;
    const field = name ? binding.mapping.properties[name] : undefined;
    const link = name ? binding.mapping.links?.[name] : undefined;
    if (field) change.set[field] = inserting ? literalValue(triple.object) : null;
    else if (link) {
      const target = templatePattern(link.targetTemplate);
      const match = target.pattern.exec((triple.object as Quad_Object).value);
      const at = target.fields.indexOf(link.field);
      if (!match || at < 0) throw new InputError('update_link_target', `${triple.object.value} does not fit the link ${name}'s target template ${link.targetTemplate}.`);
      change.set[link.field] = inserting ? decodeURIComponent(match[at + 1]) : null;
    } else throw new InputError('update_unknown_property', `${predicate} is not a property mapped by the binding of ${binding.termId}.`);
  }
  return [...bySubject.values()];
}

/** Parses an update and accepts only INSERT DATA and DELETE DATA into the default graph. */
function dataTriples(text: string): Array<{ inserting: boolean; triples: Triple[] }> {
  let parsed: SparqlQuery;
  try {
    parsed = new SparqlParser().parse(text);
  } catch (error) {
    throw new BadRequestError('malformed_update', `The update does not parse: ${(error as Error).message.split('\n')[0]}`);
  }
  if (parsed.type !== 'update') throw new InputError('update_in_query', 'A query was sent as an update.');
  return parsed.updates.map((operation: unknown) => {
    const op = operation as { updateType?: string; insert?: Array<{ type: string; triples: Triple[] }>; delete?: Array<{ type: string; triples: Triple[] }> };
    const blocks = op.updateType === 'insert' ? op.insert : op.updateType === 'delete' ? op.delete : undefined;
    if (!blocks || blocks.some((block) => block.type !== 'bgp')) {
      throw new InputError('update_form_not_supported', 'Only INSERT DATA and DELETE DATA on bound records are supported; other update forms would bypass the per-row governance of write policies.');
    }
    return { inserting: op.updateType === 'insert', triples: blocks.flatMap((block) => block.triples) };
  });
}

/**
 * Applies a SPARQL update as governed writes: one action per endpoint and operation, each
 * against the endpoint's current snapshot, under its policy. The idempotency key derives from
 * the caller, the update text and that snapshot, so a retried request writes once.
 */
export async function applySparqlUpdate(ctx: OperationContext, text: string, idempotencyKey: string | undefined): Promise<{ pending: boolean; writeActions: WriteActionView[]; replayed: boolean }> {
  const { db, principal, project } = ctx;
  const pkg = await activePackage(db, project);
  if (!pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet.');
  const { readable } = await readableBindings(ctx);
  const changes = dataTriples(text).flatMap(({ inserting, triples }) => changesOf(triples, inserting, readable, pkg).map((change) => ({ ...change, inserting })));
  if (!changes.length) return { pending: false, writeActions: [], replayed: false };
  if (new Set(changes.map((c) => c.binding.dataEndpointId)).size > 1 || new Set(changes.map((c) => `${c.inserting}/${c.remove}`)).size > 1) {
    throw new InputError('update_spans_actions', 'An update may change records of one bound endpoint in one way (insert, clear values, or delete records): send separate updates.');
  }
  const [first] = changes;
  const endpointId = first.binding.dataEndpointId;
  const cast = await keyCaster(ctx, endpointId);
  const typedKey = (change: Change) => Object.fromEntries(Object.entries(change.key).map(([field, text]) => [field, cast(field, text)]));
  const snapshot = await currentSourceSnapshot(ctx, endpointId);
  const input = first.inserting
    ? { operation: 'upsert' as const, rows: changes.map((c) => ({ ...typedKey(c), ...c.set })) }
    : first.remove
      ? { operation: 'delete' as const, where: keyConditions(changes.map(typedKey)) }
      : { operation: 'update' as const, where: keyConditions(changes.map(typedKey)), set: Object.assign({}, ...changes.map((c) => c.set)) as Record<string, unknown> };
  if (input.operation === 'update' && changes.length > 1 && changes.some((c) => JSON.stringify(c.set) !== JSON.stringify(changes[0].set))) {
    throw new InputError('update_spans_actions', 'DELETE DATA of property values must clear the same properties on every subject of one update.');
  }
  const key = idempotencyKey ?? `sparql-${createHash('sha256').update(`${callerIdOf(principal)}\n${snapshot.id}\n${snapshot.version}\n${text}`).digest('hex').slice(0, 48)}`;
  // The governed write is its own operation, reached through the sparql door: its declared access
  // (data:write, shared-resource access, an accountable actor) holds here as on its route.
  const { output } = await invokeWithin(ctx, 'sparql', submitSourceWriteOperation, {
    params: { endpoint_id: endpointId },
    query: { dryRun: false },
    body: {
      actionId: randomUUID(),
      projectId: project.id,
      idempotencyKey: key,
      input: { contractVersion: 1, expectedSourceSnapshot: { id: snapshot.id, version: snapshot.version }, ...input },
    },
    // A retry derives a new actionId (and, after the first applied, a new snapshot): matching the
    // key's first action on those refused every retry with idempotency_key_reused. The update text
    // in this project is what a retry repeats.
    requestDigest: createHash('sha256').update(JSON.stringify({ sparqlUpdate: text, projectId: project.id })).digest('hex'),
  });
  const { writeAction } = output.body as { writeAction: WriteActionView };
  return { pending: output.status === 202, writeActions: [writeAction], replayed: output.headers?.['Idempotent-Replayed'] === 'true' };
}

/** Conditions selecting the changed records by key: eq for one, in for several (single-field keys). */
function keyConditions(keys: Array<Record<string, unknown>>): Array<{ field: string; op: 'eq' | 'in'; value?: unknown; values?: unknown[] }> {
  const fields = Object.keys(keys[0]);
  if (keys.length === 1) return fields.map((field) => ({ field, op: 'eq' as const, value: keys[0][field] }));
  if (fields.length !== 1) throw new InputError('update_spans_actions', 'Changing several records with a composite key needs one update per record.');
  return [{ field: fields[0], op: 'in', values: keys.map((key) => key[fields[0]]) }];
}

const NUMERIC_TYPES = new Set(['number', 'integer', 'bigint', 'smallint', 'numeric', 'decimal', 'real', 'double precision']);

/** Keys come out of IRIs as text: a field the endpoint stores as a number is written and matched as one. */
async function keyCaster(ctx: OperationContext, endpointId: string): Promise<(field: string, text: string) => unknown> {
  const { db, principal: { workspaceId } } = ctx;
  const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, workspaceId, endpointId);
  const declared = new Map((endpoint.schemaHints?.columns ?? []).map((c) => [c.name, c.type ?? '']));
  if (!declared.size) {
    const discovered = await findCapability(installation.capability, installation.capabilityVersion).discoverSchema(capabilityContext(db, installation, ctx.deps), endpoint.target);
    for (const field of discovered.fields) declared.set(field.name, field.type);
  }
  return (field, text) => (NUMERIC_TYPES.has(declared.get(field) ?? '') && /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text);
}
