import type * as RDF from '@rdfjs/types';
import { Writer } from 'n3';
import { InputError } from '../core/errors';
import type { SparqlResult } from './sparql-engine';

// Result formats of the SPARQL 1.1 Protocol, chosen by Accept: the W3C Query Results JSON, XML,
// CSV and TSV formats for SELECT (ASK: JSON and XML, the formats that define a boolean), and
// Turtle, N-Triples, JSON-LD or RDF/XML for CONSTRUCT and DESCRIBE. The first listed is the default.

const RESULT_SET_TYPES = ['application/sparql-results+json', 'application/sparql-results+xml', 'text/csv', 'text/tab-separated-values'];
const BOOLEAN_TYPES = ['application/sparql-results+json', 'application/sparql-results+xml'];
const GRAPH_TYPES = ['text/turtle', 'application/n-triples', 'application/ld+json', 'application/rdf+xml'];
/** Common aliases clients send: plain XML is the results format for rows and booleans, RDF/XML for graphs. */
const ALIASES: Record<string, string> = { 'application/json': 'application/sparql-results+json', 'application/xml': 'application/sparql-results+xml', 'text/xml': 'application/sparql-results+xml', 'text/plain': 'application/n-triples' };
const GRAPH_ALIASES: Record<string, string> = { ...ALIASES, 'application/xml': 'application/rdf+xml', 'text/xml': 'application/rdf+xml' };

/** Answers of negotiate per Accept header and result kind: clients send a handful of distinct headers, each on every request. */
const negotiated = new Map<string, string | null>();
const MAX_NEGOTIATED = 512;

/** The media type to answer with, honouring q-values and wildcards; null when none is acceptable (406). */
export function negotiate(accept: string | undefined, kind: SparqlResult['kind']): string | null {
  // Headers of ordinary length only: the kept answers stay small whatever clients send.
  if (accept && accept.length > 256) return rankMediaTypes(accept, kind);
  const key = `${kind}\n${accept ?? ''}`;
  const known = negotiated.get(key);
  if (known !== undefined) return known;
  const chosen = rankMediaTypes(accept, kind);
  // Bounded: a client sending ever-new headers gets them ranked afresh, never a growing map.
  if (negotiated.size >= MAX_NEGOTIATED) negotiated.clear();
  negotiated.set(key, chosen);
  return chosen;
}

function rankMediaTypes(accept: string | undefined, kind: SparqlResult['kind']): string | null {
  const offered = kind === 'quads' ? GRAPH_TYPES : kind === 'boolean' ? BOOLEAN_TYPES : RESULT_SET_TYPES;
  const aliases = kind === 'quads' ? GRAPH_ALIASES : ALIASES;
  if (!accept || !accept.trim()) return offered[0];
  const ranges = accept.split(',').map((part, index) => {
    const [range, ...params] = part.trim().toLowerCase().split(';').map((s) => s.trim());
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? '1');
    return { range: aliases[range] ?? range, q: Number.isFinite(q) ? q : 0, index };
  });
  const quality = (type: string) => {
    const [major] = type.split('/');
    const exact = ranges.find((r) => r.range === type);
    if (exact) return { q: exact.q, specificity: 2, index: exact.index };
    const partial = ranges.find((r) => r.range === `${major}/*`);
    if (partial) return { q: partial.q, specificity: 1, index: partial.index };
    const any = ranges.find((r) => r.range === '*/*');
    return any ? { q: any.q, specificity: 0, index: any.index } : { q: 0, specificity: -1, index: Infinity };
  };
  const ranked = offered
    .map((type, order) => ({ type, order, ...quality(type) }))
    .filter((candidate) => candidate.q > 0)
    .sort((a, b) => b.q - a.q || b.specificity - a.specificity || a.index - b.index || a.order - b.order);
  return ranked[0]?.type ?? null;
}

/** Characters XML 1.0 cannot carry at all, not even as character references. */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const XML_ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\r': '&#13;', '\t': '&#9;', '\n': '&#10;' };

/**
 * Escapes element text, and with `attribute` an attribute value. CR becomes a character reference,
 * or XML parsers would read it back as LF; in attributes tab and LF too, which attribute-value
 * normalisation would otherwise turn into spaces.
 */
function xmlEscape(text: string, attribute = false, instead = 'application/sparql-results+json'): string {
  if (NOT_XML.test(text)) {
    throw new InputError('unrepresentable_result', `The result holds a control character that XML 1.0 cannot carry; ask for ${instead}.`);
  }
  return text.replace(attribute ? /[&<>"'\r\t\n]/g : /[&<>"'\r]/g, (c) => XML_ENTITIES[c]!);
}

function jsonTerm(term: RDF.Term): Record<string, string> {
  if (term.termType === 'NamedNode') return { type: 'uri', value: term.value };
  if (term.termType === 'BlankNode') return { type: 'bnode', value: term.value };
  const literal = term as RDF.Literal;
  if (literal.language) return { type: 'literal', value: literal.value, 'xml:lang': literal.language };
  if (literal.datatype && literal.datatype.value !== 'http://www.w3.org/2001/XMLSchema#string') return { type: 'literal', value: literal.value, datatype: literal.datatype.value };
  return { type: 'literal', value: literal.value };
}

function xmlTerm(term: RDF.Term): string {
  if (term.termType === 'NamedNode') return `<uri>${xmlEscape(term.value)}</uri>`;
  if (term.termType === 'BlankNode') return `<bnode>${xmlEscape(term.value)}</bnode>`;
  const literal = term as RDF.Literal;
  if (literal.language) return `<literal xml:lang="${xmlEscape(literal.language, true)}">${xmlEscape(literal.value)}</literal>`;
  if (literal.datatype && literal.datatype.value !== 'http://www.w3.org/2001/XMLSchema#string') return `<literal datatype="${xmlEscape(literal.datatype.value, true)}">${xmlEscape(literal.value)}</literal>`;
  return `<literal>${xmlEscape(literal.value)}</literal>`;
}

/** CSV (W3C): plain values, blank nodes as _:label, quoted when they hold a comma, quote or line break. */
function csvValue(term: RDF.Term | undefined): string {
  if (!term) return '';
  const text = term.termType === 'BlankNode' ? `_:${term.value}` : term.value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const XSD = 'http://www.w3.org/2001/XMLSchema#';
/**
 * Literals TSV may write bare, as Turtle does: only lexical forms Turtle reads back as the same
 * literal ("1."^^xsd:decimal or "1"^^xsd:boolean must keep quotes and datatype).
 */
const TURTLE_SHORT_FORMS: Record<string, RegExp> = {
  [`${XSD}integer`]: /^[+-]?\d+$/,
  [`${XSD}decimal`]: /^[+-]?\d*\.\d+$/,
  [`${XSD}double`]: /^[+-]?(\d+\.\d*[eE][+-]?\d+|\.\d+[eE][+-]?\d+|\d+[eE][+-]?\d+)$/,
  [`${XSD}boolean`]: /^(true|false)$/,
};

/** An IRI as Turtle writes it: characters IRIREF cannot hold (controls, space, <>"{}|^` and backslash) as \u escapes. */
// eslint-disable-next-line no-control-regex
const turtleIri = (iri: string) => `<${iri.replace(/[\u0000-\u0020<>"{}|^`\\]/g, (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`)}>`;

/** TSV (W3C): terms in SPARQL/Turtle syntax; tabs and line breaks escaped. */
function tsvValue(term: RDF.Term | undefined): string {
  if (!term) return '';
  if (term.termType === 'NamedNode') return turtleIri(term.value);
  if (term.termType === 'BlankNode') return `_:${term.value}`;
  const literal = term as RDF.Literal;
  const escaped = literal.value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');
  if (literal.language) return `"${escaped}"@${literal.language}`;
  const datatype = literal.datatype?.value;
  if (!datatype || datatype === 'http://www.w3.org/2001/XMLSchema#string') return `"${escaped}"`;
  if (TURTLE_SHORT_FORMS[datatype]?.test(literal.value)) return literal.value;
  return `"${escaped}"^^${turtleIri(datatype)}`;
}

const RDF_NS = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
/**
 * Names of the RDF namespace that RDF/XML reads as syntax, not as a property element (RDF 1.1
 * XML Syntax §7.2.5, coreSyntaxTerms, rdf:Description and oldTerms), and rdf:li, which a parser
 * reads as the next rdf:_n: a triple with one of these as its predicate has no RDF/XML form.
 */
const NOT_PROPERTY_ELEMENTS = new Set(['RDF', 'ID', 'about', 'parseType', 'resource', 'nodeID', 'datatype', 'Description', 'li', 'aboutEach', 'aboutEachPrefix', 'bagID']);
/** Namespaces no prefix but their own may name (Namespaces in XML 1.0 §3). */
const RESERVED_NAMESPACES = new Set(['http://www.w3.org/XML/1998/namespace', 'http://www.w3.org/2000/xmlns/']);
/**
 * XML 1.0 NameStartChar without ':' (an NCName's first character), and the further characters of
 * NameChar, as the XML spec lists them: single characters are tested, so ZWNJ, ZWJ and combining
 * marks in the classes are what they say.
 */
// eslint-disable-next-line no-misleading-character-class
const NAME_START = /[A-Z_a-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C\u200D\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\u{10000}-\u{EFFFF}]/u;
// eslint-disable-next-line no-misleading-character-class
const NAME_REST = /[-.0-9\u00B7\u0300-\u036F\u203F\u2040]/u;

/**
 * A predicate IRI as an XML element name: the namespace and the longest suffix that is an NCName
 * (their concatenation is the IRI, which is how RDF/XML reads a property element back). Scanned
 * from the end, once per predicate of an answer.
 */
function splitPredicate(iri: string): { namespace: string; local: string } | undefined {
  const chars = Array.from(iri);
  let start = chars.length;
  while (start > 0 && (NAME_START.test(chars[start - 1]) || NAME_REST.test(chars[start - 1]))) start -= 1;
  while (start < chars.length && !NAME_START.test(chars[start])) start += 1;
  if (start === chars.length || start === 0) return undefined;
  const namespace = chars.slice(0, start).join('');
  const local = chars.slice(start).join('');
  if (RESERVED_NAMESPACES.has(namespace) || (namespace === RDF_NS && NOT_PROPERTY_ELEMENTS.has(local))) return undefined;
  return { namespace, local };
}

/**
 * RDF/XML (RDF 1.1 XML Syntax), striped and flat: one rdf:Description per subject, by rdf:about or
 * rdf:nodeID, each triple a property element with rdf:resource, rdf:nodeID, or the literal's text
 * with its xml:lang or rdf:datatype. Blank nodes are renamed b0, b1, … (a label need not be an
 * NCName). A predicate that cannot be written as an element name (it ends in no NCName, as
 * `…/items/1` does) or text XML cannot carry refuses the answer, naming the formats that can.
 */
function writeRdfXml(quads: RDF.Quad[]): string {
  const instead = 'text/turtle or application/n-triples';
  const unrepresentable = (what: string) => new InputError('unrepresentable_result', `${what} has no RDF/XML form; ask for ${instead}.`);
  const escape = (text: string, attribute = false) => xmlEscape(text, attribute, instead);
  const prefixes = new Map<string, string>([[RDF_NS, 'rdf']]);
  const elements = new Map<string, string>();
  const elementOf = (predicate: string): string => {
    const known = elements.get(predicate);
    if (known) return known;
    const split = splitPredicate(predicate);
    if (!split) throw unrepresentable(`The predicate <${predicate}>`);
    let prefix = prefixes.get(split.namespace);
    if (!prefix) prefixes.set(split.namespace, (prefix = `ns${prefixes.size - 1}`));
    const element = `${prefix}:${split.local}`;
    elements.set(predicate, element);
    return element;
  };
  const nodeIds = new Map<string, string>();
  const nodeId = (label: string) => nodeIds.get(label) ?? nodeIds.set(label, `b${nodeIds.size}`).get(label)!;
  const node = (term: RDF.Term, as: 'about' | 'resource'): string => {
    if (term.termType === 'NamedNode') return `rdf:${as}="${escape(term.value, true)}"`;
    if (term.termType === 'BlankNode') return `rdf:nodeID="${nodeId(term.value)}"`;
    throw unrepresentable(`A ${term.termType} in a triple's ${as === 'about' ? 'subject' : 'object'}`);
  };
  const bySubject = new Map<string, { subject: RDF.Term; lines: string[] }>();
  for (const { subject, predicate, object } of quads) {
    const key = `${subject.termType === 'BlankNode' ? '_' : '<'}${subject.value}`;
    let description = bySubject.get(key);
    if (!description) bySubject.set(key, (description = { subject, lines: [] }));
    const element = elementOf(predicate.value);
    if (object.termType === 'Literal') {
      const { language, datatype } = object;
      const attribute = language ? ` xml:lang="${escape(language, true)}"` : datatype && datatype.value !== `${XSD}string` ? ` rdf:datatype="${escape(datatype.value, true)}"` : '';
      description.lines.push(`    <${element}${attribute}>${escape(object.value)}</${element}>`);
    } else description.lines.push(`    <${element} ${node(object, 'resource')}/>`);
  }
  const out: string[] = [];
  for (const { subject, lines } of bySubject.values()) out.push(`  <rdf:Description ${node(subject, 'about')}>`, ...lines, '  </rdf:Description>');
  const declarations = [...prefixes].map(([namespace, prefix]) => `xmlns:${prefix}="${escape(namespace, true)}"`).join(' ');
  return `<?xml version="1.0" encoding="utf-8"?>\n<rdf:RDF ${declarations}>\n${out.map((line) => `${line}\n`).join('')}</rdf:RDF>\n`;
}

function writeQuads(quads: RDF.Quad[], format: string): Promise<string> {
  const writer = new Writer({ format });
  writer.addQuads(quads);
  return new Promise((resolve, reject) => writer.end((error, result) => (error ? reject(error) : resolve(result))));
}

export async function serializeResult(result: SparqlResult, mediaType: string): Promise<string> {
  if (result.kind === 'boolean') {
    if (mediaType === 'application/sparql-results+xml') return `<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#"><head/><boolean>${result.value}</boolean></sparql>\n`;
    return JSON.stringify({ head: {}, boolean: result.value });
  }
  if (result.kind === 'quads') {
    if (mediaType === 'application/n-triples') return writeQuads(result.quads, 'N-Triples');
    if (mediaType === 'application/rdf+xml') return writeRdfXml(result.quads);
    if (mediaType === 'application/ld+json') {
      const jsonld = (await import('jsonld')).default;
      return JSON.stringify(await jsonld.fromRDF(result.quads as never, { useNativeTypes: false }));
    }
    return writeQuads(result.quads, 'Turtle');
  }
  const { variables, rows } = result;
  switch (mediaType) {
    case 'application/sparql-results+xml': {
      const head = variables.map((v) => `<variable name="${xmlEscape(v, true)}"/>`).join('');
      const body = rows
        .map((row) => `<result>${variables.filter((v) => row[v]).map((v) => `<binding name="${xmlEscape(v, true)}">${xmlTerm(row[v])}</binding>`).join('')}</result>`)
        .join('\n');
      return `<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#"><head>${head}</head><results>\n${body}\n</results></sparql>\n`;
    }
    case 'text/csv':
      return `${[variables.join(','), ...rows.map((row) => variables.map((v) => csvValue(row[v])).join(','))].join('\r\n')}\r\n`;
    case 'text/tab-separated-values':
      return `${[variables.map((v) => `?${v}`).join('\t'), ...rows.map((row) => variables.map((v) => tsvValue(row[v])).join('\t'))].join('\n')}\n`;
    default:
      return JSON.stringify({
        head: { vars: variables },
        results: { bindings: rows.map((row) => Object.fromEntries(variables.filter((v) => row[v]).map((v) => [v, jsonTerm(row[v])]))) },
      });
  }
}
