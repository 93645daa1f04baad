import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DataFactory, Parser, Quad, Writer } from 'n3';
import type { Datatype, Import, Link, OntologyDefinition, PropertyConstraint, Term, VocabularyName } from './definition';
import { VOCABULARIES } from './definition';

// Compiles a definition into a content-addressed package: RDFS/OWL for terms, links and
// constraints, SHACL for shapes and for the cardinalities of properties, plus the triples of
// every import. The same definition and imports always give the same N-Quads and hash.

const { namedNode, literal, quad } = DataFactory;

// Blank node labels from a counter reset per compile (definitionQuads is synchronous), so the
// same definition always gives the same labels and the same content hash.
let blankLabels = 0;
const blankNode = () => DataFactory.blankNode(`b${blankLabels++}`);

export const NS = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
  owl: 'http://www.w3.org/2002/07/owl#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
  sh: 'http://www.w3.org/ns/shacl#',
} as const;

const rdf = (name: string) => namedNode(`${NS.rdf}${name}`);
const rdfs = (name: string) => namedNode(`${NS.rdfs}${name}`);
const owl = (name: string) => namedNode(`${NS.owl}${name}`);
const sh = (name: string) => namedNode(`${NS.sh}${name}`);
export const xsdIri = (datatype: Datatype) => `${NS.xsd}${datatype.slice('xsd:'.length)}`;

/** The default base IRI of a project's ontology: term IRIs are this plus the local name. */
export const defaultBaseIri = (projectId: string) => `urn:weft:ontology:${projectId}#`;

export interface CompileProblem {
  /** The element at fault, as collection/id (terms/Customer). */
  element: string;
  /** JSON Pointer into the definition. */
  path: string;
  message: string;
}

/** What compile needs beyond the definition: the base IRI and the triples of package and document imports. */
export interface CompileInputs {
  baseIri: string;
  /** N-Quads of the packages imports name, by package id; a missing id is a problem. */
  packages: Map<string, string>;
  /** N-Quads of uploaded documents, by document id. */
  documents: Map<string, string>;
}

/** Every reference problem of a definition, each with its element; [] when it compiles. */
export function definitionProblems(definition: OntologyDefinition, inputs: Pick<CompileInputs, 'packages' | 'documents'>): CompileProblem[] {
  const problems: CompileProblem[] = [];
  const at = (collection: string, index: number, id: string, field: string, message: string) => problems.push({ element: `${collection}/${id}`, path: `/${collection}/${index}${field ? `/${field}` : ''}`, message });
  const classes = new Map(definition.terms.filter((t) => t.kind === 'class').map((t) => [t.id, t]));
  const properties = new Map(definition.terms.filter((t) => t.kind === 'property').map((t) => [t.id, t]));
  const links = new Map(definition.links.map((l) => [l.id, l]));

  // Terms and links share the ontology's namespace: one IRI, one meaning.
  const seen = new Map<string, string>();
  for (const [collection, items] of [['terms', definition.terms], ['links', definition.links]] as const) {
    items.forEach((item, index) => {
      const earlier = seen.get(item.id);
      if (earlier) at(collection, index, item.id, 'id', `"${item.id}" is already defined in ${earlier}; terms and links share one namespace`);
      else seen.set(item.id, collection);
    });
  }
  definition.terms.forEach((term, i) => {
    if (term.kind === 'class') {
      (term.subClassOf ?? []).forEach((parent, j) => {
        if (!classes.has(parent)) at('terms', i, term.id, `subClassOf/${j}`, `"${parent}" is not a class of this ontology`);
      });
      for (const field of ['domain', 'datatype', 'minCount', 'maxCount'] as const) {
        if (term[field] !== undefined) at('terms', i, term.id, field, `${field} belongs to properties, not classes`);
      }
    } else {
      if (term.domain && !classes.has(term.domain)) at('terms', i, term.id, 'domain', `"${term.domain}" is not a class of this ontology`);
      if (term.subClassOf?.length) at('terms', i, term.id, 'subClassOf', 'subClassOf belongs to classes, not properties');
      if (term.minCount !== undefined && term.maxCount !== undefined && term.minCount > term.maxCount) at('terms', i, term.id, 'minCount', 'minCount is above maxCount');
    }
  });
  definition.links.forEach((link, i) => {
    if (!classes.has(link.from)) at('links', i, link.id, 'from', `"${link.from}" is not a class of this ontology`);
    if (!classes.has(link.to)) at('links', i, link.id, 'to', `"${link.to}" is not a class of this ontology`);
    if (link.inverseOf && !links.has(link.inverseOf)) at('links', i, link.id, 'inverseOf', `"${link.inverseOf}" is not a link of this ontology`);
    if (link.minCount !== undefined && link.maxCount !== undefined && link.minCount > link.maxCount) at('links', i, link.id, 'minCount', 'minCount is above maxCount');
  });
  definition.shapes.forEach((shape, i) => {
    if (!classes.has(shape.targetClass)) at('shapes', i, shape.id, 'targetClass', `"${shape.targetClass}" is not a class of this ontology`);
    shape.properties.forEach((constraint, j) => {
      const field = (name: string) => `properties/${j}/${name}`;
      const property = properties.get(constraint.path);
      if (!property && !links.has(constraint.path)) at('shapes', i, shape.id, field('path'), `"${constraint.path}" is not a property or link of this ontology`);
      if (constraint.datatype && links.has(constraint.path)) at('shapes', i, shape.id, field('datatype'), 'a link has instances as values, not literals');
      if (constraint.datatype && property?.datatype && constraint.datatype !== property.datatype) at('shapes', i, shape.id, field('datatype'), `"${constraint.path}" is declared ${property.datatype}`);
      if (constraint.class && !classes.has(constraint.class)) at('shapes', i, shape.id, field('class'), `"${constraint.class}" is not a class of this ontology`);
      if (constraint.pattern !== undefined) {
        try {
          new RegExp(constraint.pattern, 'u');
        } catch {
          at('shapes', i, shape.id, field('pattern'), 'is not a valid regular expression');
        }
      }
    });
  });
  definition.constraints.forEach((constraint, i) => {
    const kinds = constraint.kind === 'disjointClasses' ? ['class'] : constraint.kind === 'hasKey' ? [] : ['property', 'link'];
    constraint.terms.forEach((name, j) => {
      const kind = classes.has(name) ? 'class' : properties.has(name) ? 'property' : links.has(name) ? 'link' : null;
      const wanted = constraint.kind === 'hasKey' ? (j === 0 ? ['class'] : ['property', 'link']) : kinds;
      if (!kind) at('constraints', i, constraint.id, `terms/${j}`, `"${name}" is not a term or link of this ontology`);
      else if (!wanted.includes(kind)) at('constraints', i, constraint.id, `terms/${j}`, `${constraint.kind} needs ${wanted.join(' or ')} here, and "${name}" is a ${kind}`);
    });
    if (constraint.kind === 'disjointClasses' && constraint.terms.length < 2) at('constraints', i, constraint.id, 'terms', 'disjointClasses needs at least two classes');
    if (constraint.kind === 'hasKey' && constraint.terms.length < 2) at('constraints', i, constraint.id, 'terms', 'hasKey needs a class and at least one key property');
  });
  const importIds = new Set<string>();
  definition.imports.forEach((entry, i) => {
    if (importIds.has(entry.id)) at('imports', i, entry.id, 'id', `import "${entry.id}" is defined twice`);
    importIds.add(entry.id);
    if (entry.kind === 'package' && !inputs.packages.has(entry.ontologyPackageId)) at('imports', i, entry.id, 'ontologyPackageId', 'no compiled package with this id in the workspace');
    if (entry.kind === 'document' && !inputs.documents.has(entry.documentId)) at('imports', i, entry.id, 'documentId', 'no uploaded document with this id in this ontology');
  });
  return problems;
}

const vocabularyCache = new Map<VocabularyName, string>();

/** The N-Quads of a standard vocabulary shipped with Weft (the @vocabulary/* packages). */
export function vocabularyNQuads(name: VocabularyName): string {
  let text = vocabularyCache.get(name);
  if (text === undefined) {
    text = readFileSync(require.resolve(VOCABULARIES[name].module), 'utf8');
    vocabularyCache.set(name, text);
  }
  return text;
}

/** Imported triples land in the default graph, so queries see an import as part of the ontology. */
function parseIntoDefaultGraph(nquads: string, labelPrefix: string): Quad[] {
  return new Parser({ format: 'application/n-quads', blankNodePrefix: labelPrefix }).parse(nquads).map((q) => quad(q.subject, q.predicate, q.object));
}

function cardinality(out: Quad[], shapeNode: Quad['subject'], path: string, minCount?: number, maxCount?: number, extra: (node: Quad['subject']) => void = () => undefined) {
  const property = blankNode();
  out.push(quad(shapeNode, sh('property'), property), quad(property, sh('path'), namedNode(path)));
  if (minCount !== undefined) out.push(quad(property, sh('minCount'), literal(String(minCount), namedNode(`${NS.xsd}integer`))));
  if (maxCount !== undefined) out.push(quad(property, sh('maxCount'), literal(String(maxCount), namedNode(`${NS.xsd}integer`))));
  extra(property);
}

const integer = (value: number) => literal(String(value), namedNode(`${NS.xsd}integer`));
const decimalLiteral = (value: number) => literal(String(value), namedNode(Number.isInteger(value) ? `${NS.xsd}integer` : `${NS.xsd}decimal`));
const valueLiteral = (value: string | number | boolean) =>
  typeof value === 'string' ? literal(value) : typeof value === 'boolean' ? literal(String(value), namedNode(`${NS.xsd}boolean`)) : decimalLiteral(value);

/** Turns a property constraint of a shape into SHACL on a blank property node. */
function constraintTriples(out: Quad[], node: Quad['subject'], c: PropertyConstraint, iri: (name: string) => string) {
  if (c.datatype) out.push(quad(node, sh('datatype'), namedNode(xsdIri(c.datatype))));
  if (c.class) out.push(quad(node, sh('class'), namedNode(iri(c.class))));
  if (c.pattern !== undefined) out.push(quad(node, sh('pattern'), literal(c.pattern)));
  if (c.minLength !== undefined) out.push(quad(node, sh('minLength'), integer(c.minLength)));
  if (c.maxLength !== undefined) out.push(quad(node, sh('maxLength'), integer(c.maxLength)));
  if (c.minInclusive !== undefined) out.push(quad(node, sh('minInclusive'), decimalLiteral(c.minInclusive)));
  if (c.maxInclusive !== undefined) out.push(quad(node, sh('maxInclusive'), decimalLiteral(c.maxInclusive)));
  if (c.message) out.push(quad(node, sh('message'), literal(c.message)));
  if (c.in) {
    const items = c.in.map(valueLiteral);
    let list: Quad['subject'] | ReturnType<typeof rdf> = rdf('nil');
    for (const item of items.reverse()) {
      const cell = blankNode();
      out.push(quad(cell, rdf('first'), item), quad(cell, rdf('rest'), list));
      list = cell;
    }
    out.push(quad(node, sh('in'), list));
  }
}

function rdfList(out: Quad[], items: Array<ReturnType<typeof namedNode>>): Quad['subject'] | ReturnType<typeof rdf> {
  let list: Quad['subject'] | ReturnType<typeof rdf> = rdf('nil');
  for (const item of [...items].reverse()) {
    const cell = blankNode();
    out.push(quad(cell, rdf('first'), item), quad(cell, rdf('rest'), list));
    list = cell;
  }
  return list;
}

function definitionQuads(definition: OntologyDefinition, baseIri: string): Quad[] {
  const iri = (name: string) => `${baseIri}${name}`;
  const node = (name: string) => namedNode(iri(name));
  const out: Quad[] = [];
  const ontology = namedNode(baseIri);
  out.push(quad(ontology, rdf('type'), owl('Ontology')));
  const annotate = (subject: Quad['subject'], item: { label?: string; comment?: string }) => {
    if (item.label) out.push(quad(subject, rdfs('label'), literal(item.label)));
    if (item.comment) out.push(quad(subject, rdfs('comment'), literal(item.comment)));
  };
  const properties = definition.terms.filter((t): t is Term & { kind: 'property' } => t.kind === 'property');
  for (const term of definition.terms) {
    const subject = node(term.id);
    annotate(subject, term);
    if (term.kind === 'class') {
      out.push(quad(subject, rdf('type'), owl('Class')), quad(subject, rdf('type'), rdfs('Class')));
      for (const parent of term.subClassOf ?? []) out.push(quad(subject, rdfs('subClassOf'), node(parent)));
      // The cardinalities and datatypes of the class's properties and links, checked by the shape check.
      const own = properties.filter((p) => p.domain === term.id);
      const linksFrom = definition.links.filter((l) => l.from === term.id);
      if (own.length || linksFrom.length) {
        const shape = namedNode(`${iri(term.id)}-TermShape`);
        out.push(quad(shape, rdf('type'), sh('NodeShape')), quad(shape, sh('targetClass'), subject));
        for (const p of own) cardinality(out, shape, iri(p.id), p.minCount, p.maxCount, (prop) => out.push(quad(prop, sh('datatype'), namedNode(xsdIri(p.datatype!)))));
        for (const l of linksFrom) cardinality(out, shape, iri(l.id), l.minCount, l.maxCount, (prop) => out.push(quad(prop, sh('class'), node(l.to))));
      }
    } else {
      out.push(quad(subject, rdf('type'), owl('DatatypeProperty')), quad(subject, rdf('type'), rdf('Property')));
      if (term.domain) out.push(quad(subject, rdfs('domain'), node(term.domain)));
      if (term.datatype) out.push(quad(subject, rdfs('range'), namedNode(xsdIri(term.datatype))));
      if (term.maxCount === 1) out.push(quad(subject, rdf('type'), owl('FunctionalProperty')));
    }
  }
  for (const link of definition.links as Link[]) {
    const subject = node(link.id);
    annotate(subject, link);
    out.push(quad(subject, rdf('type'), owl('ObjectProperty')), quad(subject, rdf('type'), rdf('Property')));
    out.push(quad(subject, rdfs('domain'), node(link.from)), quad(subject, rdfs('range'), node(link.to)));
    if (link.inverseOf) out.push(quad(subject, owl('inverseOf'), node(link.inverseOf)));
    if (link.maxCount === 1) out.push(quad(subject, rdf('type'), owl('FunctionalProperty')));
  }
  for (const shape of definition.shapes) {
    const subject = node(shape.id);
    out.push(quad(subject, rdf('type'), sh('NodeShape')), quad(subject, sh('targetClass'), node(shape.targetClass)));
    if (shape.message) out.push(quad(subject, sh('message'), literal(shape.message)));
    if (shape.closed) {
      out.push(quad(subject, sh('closed'), literal('true', namedNode(`${NS.xsd}boolean`))));
      out.push(quad(subject, sh('ignoredProperties'), rdfList(out, [rdf('type')])));
    }
    for (const constraint of shape.properties) {
      cardinality(out, subject, iri(constraint.path), constraint.minCount, constraint.maxCount, (prop) => constraintTriples(out, prop, constraint, iri));
    }
  }
  for (const constraint of definition.constraints) {
    const subject = node(constraint.id);
    annotate(subject, constraint);
    const terms = constraint.terms.map(node);
    if (constraint.kind === 'disjointClasses') out.push(quad(subject, rdf('type'), owl('AllDisjointClasses')), quad(subject, owl('members'), rdfList(out, terms)));
    else if (constraint.kind === 'hasKey') out.push(quad(terms[0], owl('hasKey'), rdfList(out, terms.slice(1))));
    else for (const term of terms) out.push(quad(term, rdf('type'), owl(constraint.kind === 'functional' ? 'FunctionalProperty' : 'InverseFunctionalProperty')));
  }
  return out;
}

export interface CompiledPackage {
  nquads: string;
  turtle: string;
  contentHash: string;
  tripleCount: number;
}

function importQuads(entry: Import, inputs: CompileInputs): Quad[] {
  // Blank nodes of each import keep apart from the definition's and each other's.
  const prefix = `${entry.id}_`;
  if (entry.kind === 'vocabulary') return parseIntoDefaultGraph(vocabularyNQuads(entry.vocabulary), prefix);
  if (entry.kind === 'package') return parseIntoDefaultGraph(inputs.packages.get(entry.ontologyPackageId)!, prefix);
  return parseIntoDefaultGraph(inputs.documents.get(entry.documentId)!, prefix);
}

/**
 * The package: N-Quads sorted line by line (blank nodes labelled in a fixed order, so equal
 * definitions give equal text), its sha256, and Turtle for people. Call after definitionProblems is empty.
 */
export async function compilePackage(definition: OntologyDefinition, inputs: CompileInputs): Promise<CompiledPackage> {
  blankLabels = 0;
  const own = definitionQuads(definition, inputs.baseIri);
  const imported = definition.imports.flatMap((entry) => importQuads(entry, inputs));
  for (const entry of definition.imports) {
    if (entry.kind === 'vocabulary') own.push(quad(namedNode(inputs.baseIri), owl('imports'), namedNode(VOCABULARIES[entry.vocabulary].iri)));
  }
  const quads = [...own, ...imported];
  const nquads = await serialize(quads, { format: 'N-Quads' });
  const lines = [...new Set(nquads.split('\n').filter(Boolean))].sort();
  const canonical = lines.length ? `${lines.join('\n')}\n` : '';
  const turtle = await serialize(new Parser({ format: 'application/n-quads', blankNodePrefix: '' }).parse(canonical), {
    format: 'Turtle',
    prefixes: { '': inputs.baseIri, rdf: NS.rdf, rdfs: NS.rdfs, owl: NS.owl, xsd: NS.xsd, sh: NS.sh },
  });
  return { nquads: canonical, turtle, contentHash: `sha256:${createHash('sha256').update(canonical).digest('hex')}`, tripleCount: lines.length };
}

export function serialize(quads: Quad[], options: { format: string; prefixes?: Record<string, string> }): Promise<string> {
  const writer = new Writer(options);
  writer.addQuads(quads);
  return new Promise((resolve, reject) => writer.end((error, result) => (error ? reject(error) : resolve(result))));
}
