import type * as RDF from '@rdfjs/types';
import * as N3 from 'n3';
import type { Store } from 'n3';

// The parts of an n3 (v2.13) Store the evaluator reads directly: per graph, three nested indexes
// (subject→predicate→object, predicate→object→subject, object→subject→predicate) keyed by the
// numeric ids of the store's entity index. These are not public API, so `storeInternals` checks
// their shape and the evaluator hands the query to Comunica when they look different.

/** The innermost level: the present third ids as keys (values are null). */
export type IdSet = Record<number, null>;
/** Middle level: second id → set of third ids. */
export type IdMap = Record<number, IdSet>;
/** Top level: first id → second id → third ids. */
export type TripleIndex = Record<number, IdMap>;

export interface GraphIndexes {
  readonly subjects: TripleIndex;
  readonly predicates: TripleIndex;
  readonly objects: TripleIndex;
}

export interface EntityIndex {
  /** Entity key (n3's id string of a term) → numeric id. */
  readonly _ids: Record<string, number>;
  /** Numeric id → entity key. */
  readonly _entities: Record<number, string>;
  /** The last number given: it grows as any store over the index adds terms. */
  readonly _id?: number;
  _termFromId(key: string): RDF.Term;
}

export interface StoreInternals {
  readonly _graphs: Record<number, GraphIndexes | undefined>;
  readonly _entityIndex: EntityIndex;
}

/** n3 gives the default graph (entity key '') the id 1 in every entity index. */
export const DEFAULT_GRAPH_ID = 1;

export function storeInternals(store: Store): StoreInternals | undefined {
  const candidate = store as unknown as Partial<StoreInternals>;
  const index = candidate._entityIndex;
  if (!candidate._graphs || !index || typeof index._termFromId !== 'function' || !index._ids || !index._entities) return undefined;
  if (index._ids[''] !== DEFAULT_GRAPH_ID) return undefined;
  return candidate as StoreInternals;
}

export function defaultGraphOf(store: Store): GraphIndexes | undefined {
  return (store as unknown as StoreInternals)._graphs[DEFAULT_GRAPH_ID];
}

/**
 * Every index level carries its key count under one symbol-keyed property (n3's SIZE). Read it
 * from the level itself: the symbol is module-private in n3.
 */
let sizeSymbol: symbol | undefined;
export function keyCount(level: object): number {
  if (!sizeSymbol) {
    sizeSymbol = Object.getOwnPropertySymbols(level)[0];
    if (!sizeSymbol) return Object.keys(level).length;
  }
  const count = (level as Record<symbol, unknown>)[sizeSymbol];
  return typeof count === 'number' ? count : Object.keys(level).length;
}

/** A new store that uses `other`'s entity index, so numeric ids are comparable across the two. */
export function storeSharingEntityIndex(other: Store, quads: RDF.Quad[] = []): Store {
  const entityIndex = (other as unknown as StoreInternals)._entityIndex;
  return new N3.Store(quads, { entityIndex } as N3.StoreOptions);
}

/**
 * The first number a compact entity index gives a term: past V8's 1024-slot gap. n3 keys every
 * index level by term numbers, and V8 keeps an object's integer keys below that gap in a flat array
 * sized by the largest key, but larger keys in a small hash table. Numbered from 2, a package's
 * predicates (the first terms a dataset brings) gave every level keyed by predicates an array of
 * hundreds of slots: 2.35 KB of heap per triple on the bench's data against 0.73 KB when every
 * number is past the gap (same queries, same answers).
 */
export const FIRST_COMPACT_ENTITY_NUMBER = 2048;

/** A new n3 entity index whose terms are numbered from FIRST_COMPACT_ENTITY_NUMBER (the default graph keeps 1). */
export function compactEntityIndex(): object {
  const index = new (N3 as unknown as { EntityIndex: new () => { _id: number } }).EntityIndex();
  // n3 numbers the next term _id + 1; a version that counts differently keeps its own numbering.
  if (typeof index._id === 'number' && index._id < FIRST_COMPACT_ENTITY_NUMBER) index._id = FIRST_COMPACT_ENTITY_NUMBER - 1;
  return index;
}
