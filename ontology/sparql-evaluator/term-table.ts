import type * as RDF from '@rdfjs/types';
import * as N3 from 'n3';
import type { EntityIndex } from './n3-internals';
import * as terms from './terms';
import type { Term } from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { DataFactory } = N3;
const { entityKeyOf, termFromEntityKey } = terms;

/**
 * Decoded and materialized terms of the data, per entity index, shared by evaluations: an n3
 * entity index never reassigns an id, so what an id decodes to never changes, and a literal
 * parsed once (literal-values.ts) stays parsed. Each map is emptied when it reaches its limit.
 */
interface SharedTerms {
  readonly decoded: Map<number, Term>;
  readonly materialized: Map<number, RDF.Term>;
}
const sharedByIndex = new WeakMap<EntityIndex, SharedTerms>();
const SHARED_LIMIT = 1 << 18;

function sharedTerms(index: EntityIndex): SharedTerms {
  let shared = sharedByIndex.get(index);
  if (!shared) {
    shared = { decoded: new Map(), materialized: new Map() };
    sharedByIndex.set(index, shared);
  }
  return shared;
}

function keep<T>(map: Map<number, T>, id: number, value: T): void {
  if (map.size >= SHARED_LIMIT) map.clear();
  map.set(id, value);
}

/**
 * The ids of one evaluation. Solutions hold numeric ids: the entity index's (positive) for terms
 * of the data, and negative ones for computed terms the data does not hold (a BIND, an aggregate).
 * A computed term the data does hold gets the data's id, so one term always has one id and
 * joining or comparing terms is comparing numbers. The entity index is only read, never extended:
 * it is shared with other evaluations and the stores.
 */
export class TermTable {
  private readonly shared: SharedTerms;
  /** Computed terms (negative ids), this evaluation's own. */
  private readonly computed = new Map<number, Term>();
  private readonly computedRdf = new Map<number, RDF.Term>();
  private readonly computedIds = new Map<string, number>();
  private readonly computedKeys: string[] = [];

  constructor(private readonly index: EntityIndex) {
    this.shared = sharedTerms(index);
  }

  /** The id of a term given by its entity key: the data's, else a computed one. */
  idOfKey(key: string): number {
    const stored = this.index._ids[key];
    if (stored !== undefined) return stored;
    let id = this.computedIds.get(key);
    if (id === undefined) {
      this.computedKeys.push(key);
      id = -this.computedKeys.length;
      this.computedIds.set(key, id);
    }
    return id;
  }

  idOf(term: Term): number {
    const id = this.idOfKey(entityKeyOf(term));
    if (id < 0 && !this.computed.has(id)) this.computed.set(id, term);
    return id;
  }

  /** The data's id of a term, or undefined when no store holds it (a pattern constant then matches nothing). */
  storedIdOf(term: Term): number | undefined {
    return this.index._ids[entityKeyOf(term)];
  }

  keyOf(id: number): string {
    return id > 0 ? this.index._entities[id] : this.computedKeys[-id - 1];
  }

  term(id: number): Term {
    if (id < 0) return this.computed.get(id) ?? termFromEntityKey(this.keyOf(id));
    const decoded = this.shared.decoded;
    let term = decoded.get(id);
    if (term === undefined) {
      term = termFromEntityKey(this.index._entities[id]);
      keep(decoded, id, term);
    }
    return term;
  }

  /** The RDF/JS term of an id, as results carry it (n3 terms, like the store's own). */
  rdf(id: number): RDF.Term {
    const cache = id > 0 ? this.shared.materialized : this.computedRdf;
    let term = cache.get(id);
    if (term === undefined) {
      term = id > 0 ? this.index._termFromId(this.index._entities[id]) : rdfTermOf(this.term(id));
      if (id > 0) keep(cache, id, term);
      else cache.set(id, term);
    }
    return term;
  }
}

function rdfTermOf(term: Term): RDF.Term {
  switch (term.termType) {
    case 'NamedNode':
      return DataFactory.namedNode(term.value);
    case 'BlankNode':
      return DataFactory.blankNode(term.value);
    case 'Literal':
      return DataFactory.literal(term.value, term.language || DataFactory.namedNode(term.datatype));
    case 'Opaque':
      throw new Error('A computed value cannot be an opaque term');
  }
}
