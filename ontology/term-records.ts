import { DataFactory, Quad } from 'n3';
import type { BindingMapping, PackageTerms } from '../db/models';
import { NS } from './compile';

// How a bound endpoint's records become a term's instances: a subject IRI from the binding's
// template, the term's class as rdf:type, one literal per mapped property (typed by the property's
// datatype) and one IRI per mapped link. Shared by term-record reads, shape checks and SPARQL.

const { namedNode, literal, quad } = DataFactory;

/** The endpoint fields an IRI template names: {field} placeholders. */
export const templateFields = (template: string): string[] => [...template.matchAll(/\{([^{}]+)\}/g)].map((match) => match[1]);

/** Fills an IRI template from a record, percent-encoding each value; undefined when a value is missing. */
export function fillTemplate(template: string, record: Record<string, unknown>): string | undefined {
  let missing = false;
  const iri = template.replace(/\{([^{}]+)\}/g, (_, field: string) => {
    const value = record[field];
    if (value === null || value === undefined || value === '' || typeof value === 'object') {
      missing = true;
      return '';
    }
    return encodeURIComponent(String(value));
  });
  return missing ? undefined : iri;
}

/** The fields a binding reads from its endpoint. */
export function bindingFields(mapping: BindingMapping): string[] {
  return [...new Set([...templateFields(mapping.subjectTemplate), ...Object.values(mapping.properties), ...Object.values(mapping.links ?? {}).flatMap((link) => [link.field, ...templateFields(link.targetTemplate)])])];
}

const values = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === null || value === undefined ? [] : [value]);

function typedLiteral(value: unknown, datatype: string) {
  const xsd = `${NS.xsd}${datatype.replace(/^xsd:/, '')}`;
  // A timestamp column of a postgres_table endpoint is a Date: its lexical form is the ISO text its JSON has.
  if (value instanceof Date) value = Number.isNaN(value.getTime()) ? String(value) : value.toISOString();
  if (datatype === 'xsd:string') return literal(typeof value === 'string' ? value : JSON.stringify(value));
  return literal(typeof value === 'string' ? value : String(value), namedNode(xsd));
}

export interface MappedRecord {
  iri: string;
  /** The record as the term's properties (and links, as IRIs). */
  term: Record<string, unknown>;
  quads: Quad[];
}

/** A record as an instance of the term; undefined when its subject IRI cannot be made (a missing key field). */
export function mapRecord(record: Record<string, unknown>, termId: string, mapping: BindingMapping, terms: PackageTerms, baseIri: string): MappedRecord | undefined {
  const iri = fillTemplate(mapping.subjectTemplate, record);
  if (!iri) return undefined;
  const subject = namedNode(iri);
  const quads: Quad[] = [quad(subject, namedNode(`${NS.rdf}type`), namedNode(`${baseIri}${termId}`))];
  const term: Record<string, unknown> = { '@id': iri };
  for (const [property, field] of Object.entries(mapping.properties)) {
    const found = values(record[field]);
    if (!found.length) continue;
    term[property] = record[field];
    const datatype = terms.properties[property]?.datatype ?? 'xsd:string';
    for (const value of found) quads.push(quad(subject, namedNode(`${baseIri}${property}`), typedLiteral(value, datatype)));
  }
  for (const [link, { field, targetTemplate }] of Object.entries(mapping.links ?? {})) {
    const targets = values(record[field]).map((value) => fillTemplate(targetTemplate, { ...record, [field]: value })).filter((target): target is string => Boolean(target));
    if (!targets.length) continue;
    term[link] = targets.length === 1 ? targets[0] : targets;
    for (const target of targets) quads.push(quad(subject, namedNode(`${baseIri}${link}`), namedNode(target)));
  }
  return { iri, term, quads };
}
