import type * as RDF from '@rdfjs/types';
import { DataFactory } from 'n3';
import type { SparqlResult } from '../sparql-engine';
import type { PlainResult, PlainTerm } from './messages';

// Results cross from a query thread as data (structured clone keeps no classes) and become RDF/JS
// terms again on the other side.

const { namedNode, blankNode, literal, defaultGraph, variable, quad } = DataFactory;

export function plainTerm(term: RDF.Term): PlainTerm {
  if (term.termType === 'Literal') return { termType: 'Literal', value: term.value, language: term.language || undefined, datatype: term.datatype.value };
  return { termType: term.termType as PlainTerm['termType'], value: term.value };
}

export function plainResult(result: SparqlResult): PlainResult {
  if (result.kind === 'boolean') return result;
  if (result.kind === 'quads') return { kind: 'quads', quads: result.quads.map((q) => [plainTerm(q.subject), plainTerm(q.predicate), plainTerm(q.object)]) };
  return { kind: 'bindings', variables: result.variables, rows: result.rows.map((row) => Object.fromEntries(Object.entries(row).map(([name, term]) => [name, plainTerm(term)]))) };
}

export function termOf(plain: PlainTerm): RDF.Term {
  switch (plain.termType) {
    case 'NamedNode':
      return namedNode(plain.value);
    case 'BlankNode':
      return blankNode(plain.value);
    case 'Literal':
      return literal(plain.value, plain.language || (plain.datatype ? namedNode(plain.datatype) : undefined));
    case 'Variable':
      return variable(plain.value);
    default:
      return defaultGraph();
  }
}

export function resultOf(plain: PlainResult): SparqlResult {
  if (plain.kind === 'boolean') return plain;
  if (plain.kind === 'quads') return { kind: 'quads', quads: plain.quads.map(([s, p, o]) => quad(termOf(s) as RDF.Quad_Subject, termOf(p) as RDF.Quad_Predicate, termOf(o) as RDF.Quad_Object)) };
  return { kind: 'bindings', variables: plain.variables, rows: plain.rows.map((row) => Object.fromEntries(Object.entries(row).map(([name, term]) => [name, termOf(term)]))) };
}
