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

type TemplatePart<Ref> = { ref: Ref } | { term: RDF.Term } | { blank: string };

/**
 * A template's graph over solutions whose values are found by `Ref` (a slot of the evaluator's
 * rows, a variable's name in SQL's answers): the instantiation both evaluators share.
 */
export class GraphTemplate<Ref> {
  private readonly parts: Array<Array<TemplatePart<Ref>>>;
  private readonly seen = new Set<string>();
  private solutions = 0;
  readonly quads: RDF.Quad[] = [];

  constructor(
    template: readonly Sparql.Triple[],
    refOf: (variable: string) => Ref,
    /** A blank node label no term of the data has, from the template's label and the solution's number. */
    private readonly freshLabel: (base: string) => string,
  ) {
    const part = (term: Sparql.Term): TemplatePart<Ref> => {
      if (term.termType === 'Variable') return { ref: refOf(term.value) };
      if (term.termType === 'BlankNode') return { blank: term.value };
      if (term.termType === 'NamedNode') return { term: DataFactory.namedNode(term.value) };
      if (term.termType === 'Literal') return { term: DataFactory.literal(term.value, term.language || DataFactory.namedNode(term.datatype.value)) };
      throw new Error('a quoted triple in a CONSTRUCT template');
    };
    this.parts = template.map((triple) => [part(triple.subject as Sparql.Term), part(triple.predicate as Sparql.Term), part(triple.object)]);
  }

  /** Adds a solution's triples (`valueOf` gives a variable's value, undefined where unbound); returns how many triples the graph now has. */
  add(valueOf: (ref: Ref) => RDF.Term | undefined): number {
    const solution = this.solutions++;
    const blanks = new Map<string, RDF.BlankNode>();
    const resolve = (part: TemplatePart<Ref>): RDF.Term | undefined => {
      if ('term' in part) return part.term;
      if ('ref' in part) return valueOf(part.ref);
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
}

/** The evaluator's: solutions are rows of term ids by slot (0 where unbound). */
export class TemplateInstantiator {
  private readonly graph: GraphTemplate<number>;

  constructor(template: readonly Sparql.Triple[], slots: SlotTable, private readonly terms: TermTable, index: EntityIndex) {
    this.graph = new GraphTemplate(template, (variable) => (slots.has(variable) ? slots.slot(variable) : -1), (base) => {
      // Data blank nodes keep their labels in results.
      let label = `c_${base}`;
      while (index._ids[`_:${label}`] !== undefined) label = `${label}_`;
      return label;
    });
  }

  get quads(): RDF.Quad[] {
    return this.graph.quads;
  }

  /** Adds the solution's triples; returns how many triples the graph now has. */
  add(row: Row): number {
    return this.graph.add((slot) => (slot < 0 || row[slot] === 0 ? undefined : this.terms.rdf(row[slot])));
  }
}

const termKey = (term: RDF.Term): string => {
  if (term.termType === 'Literal') return `"${term.value}"@${term.language}^^${term.datatype.value}`;
  return `${term.termType === 'BlankNode' ? '_:' : '<'}${term.value}`;
};
