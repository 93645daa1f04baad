import type * as RDF from '@rdfjs/types';
import * as N3 from 'n3';
import type * as Sparql from 'sparqljs';
import type { EntityIndex } from './n3-internals';
import type { SlotTable } from './slots';
import type { Row } from './solution';
import type { TermTable } from './term-table';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { DataFactory } = N3;

// CONSTRUCT's template, instantiated per solution (SPARQL 1.1 §16.2): variables take the
// solution's values, blank nodes are new for each solution, and a triple with an unbound
// variable, or one that is not RDF (a literal subject, a non-IRI predicate), is left out. The
// result is a graph: a triple made twice is there once.

type TemplatePart = { slot: number } | { term: RDF.Term } | { blank: string };

export class TemplateInstantiator {
  private readonly parts: TemplatePart[][];
  private readonly seen = new Set<string>();
  private solutions = 0;
  readonly quads: RDF.Quad[] = [];

  constructor(
    template: readonly Sparql.Triple[],
    slots: SlotTable,
    private readonly terms: TermTable,
    private readonly index: EntityIndex,
  ) {
    const part = (term: Sparql.Term): TemplatePart => {
      if (term.termType === 'Variable') return { slot: slots.has(term.value) ? slots.slot(term.value) : -1 };
      if (term.termType === 'BlankNode') return { blank: term.value };
      if (term.termType === 'NamedNode') return { term: DataFactory.namedNode(term.value) };
      if (term.termType === 'Literal') return { term: DataFactory.literal(term.value, term.language || DataFactory.namedNode(term.datatype.value)) };
      throw new Error('a quoted triple in a CONSTRUCT template');
    };
    this.parts = template.map((triple) => [part(triple.subject as Sparql.Term), part(triple.predicate as Sparql.Term), part(triple.object)]);
  }

  /** Adds the solution's triples; returns how many triples the graph now has. */
  add(row: Row): number {
    const solution = this.solutions++;
    const blanks = new Map<string, RDF.BlankNode>();
    const resolve = (part: TemplatePart): RDF.Term | undefined => {
      if ('term' in part) return part.term;
      if ('slot' in part) return part.slot < 0 || row[part.slot] === 0 ? undefined : this.terms.rdf(row[part.slot]);
      let blank = blanks.get(part.blank);
      if (!blank) {
        blank = DataFactory.blankNode(this.freshLabel(`${part.blank}_${solution}`));
        blanks.set(part.blank, blank);
      }
      return blank;
    };
    for (const [s, p, o] of this.parts) {
      const subject = resolve(s);
      const predicate = resolve(p);
      const object = resolve(o);
      if (!subject || !predicate || !object) continue;
      if ((subject.termType !== 'NamedNode' && subject.termType !== 'BlankNode') || predicate.termType !== 'NamedNode') continue;
      const key = `${termKey(subject)} ${termKey(predicate)} ${termKey(object)}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      this.quads.push(DataFactory.quad(subject as RDF.Quad_Subject, predicate as RDF.Quad_Predicate, object as RDF.Quad_Object));
    }
    return this.quads.length;
  }

  /** A blank node label no term of the data has (data blank nodes keep their labels in results). */
  private freshLabel(base: string): string {
    let label = `c_${base}`;
    while (this.index._ids[`_:${label}`] !== undefined) label = `${label}_`;
    return label;
  }
}

const termKey = (term: RDF.Term): string => {
  if (term.termType === 'Literal') return `"${term.value}"@${term.language}^^${term.datatype.value}`;
  return `${term.termType === 'BlankNode' ? '_:' : '<'}${term.value}`;
};
