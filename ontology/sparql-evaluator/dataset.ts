import type { Store } from 'n3';
import { defaultGraphOf, EntityIndex, GraphIndexes, storeInternals } from './n3-internals';

// A query's dataset: one n3 Store per data source, all sharing one entity index so their numeric
// ids mean the same terms. The default graph is the RDF merge of the stores' default graphs: a
// triple held by two stores is one triple.

/**
 * The stores of a query's dataset. Make them with one entity index (storeSharingEntityIndex):
 * ids are then comparable, else the fast path cannot take the dataset and Comunica answers. The
 * evaluator keeps what it learns of a list of stores (which subjects more than one holds) while
 * their sizes stay the same: treat stores in a dataset as read-only, as Weft's are.
 */
export interface QueryDataset {
  readonly stores: readonly Store[];
}

export function isQueryDataset(source: Store | QueryDataset): source is QueryDataset {
  return Array.isArray((source as QueryDataset).stores);
}

/** The dataset as the evaluator reads it, for one evaluation. */
export interface DatasetView {
  readonly entityIndex: EntityIndex;
  /** The default graph of each store that has one, in store order. */
  readonly graphs: readonly GraphIndexes[];
  /**
   * Subject ids that occur in more than one of `graphs`: only their triples can be held twice, so
   * only they are checked against the earlier stores. Undefined when no subject is shared.
   */
  readonly sharedSubjects: ReadonlySet<number> | undefined;
  /** Triples across the stores' default graphs, duplicates included (an estimate's input). */
  readonly size: number;
  /**
   * Which graphs hold each term as a subject and as an object: bit g of `subjects[id]` is set when
   * graph g has triples with that subject. A scan with a bound subject (or object) reads only those
   * graphs, so a join's probe costs one index lookup, not one per store. Undefined for a single
   * graph, or more graphs than a mask has bits. Ids past the arrays are in none of the graphs.
   */
  readonly holders: GraphHolders | undefined;
}

export interface GraphHolders {
  readonly subjects: Uint32Array;
  readonly objects: Uint32Array;
}

/** Graphs a mask of GraphHolders can name. */
export const MAX_MASKED_GRAPHS = 32;

interface SharedSubjectsEntry {
  /** Store sizes when computed: a different size means the stores changed, so compute again. */
  sizes: number[];
  shared: ReadonlySet<number> | undefined;
  holders: GraphHolders | undefined;
}

/**
 * Kept per list of stores (a trie of weak maps, one level per store), whichever dataset object
 * holds them: computing shared subjects walks every subject of the later stores, so it is done
 * once per combination, and a caller may make a new dataset object for each query.
 */
interface SharedSubjectsNode {
  readonly next: WeakMap<Store, SharedSubjectsNode>;
  entry?: SharedSubjectsEntry;
}
const sharedSubjectsByStores: SharedSubjectsNode = { next: new WeakMap() };

function sharedSubjectsNode(stores: readonly Store[]): SharedSubjectsNode {
  let node = sharedSubjectsByStores;
  for (const store of stores) {
    let next = node.next.get(store);
    if (!next) node.next.set(store, (next = { next: new WeakMap() }));
    node = next;
  }
  return node;
}

function computeSharedSubjects(graphs: readonly GraphIndexes[]): ReadonlySet<number> | undefined {
  const shared = new Set<number>();
  for (let i = 1; i < graphs.length; i++) {
    for (const key in graphs[i].subjects) {
      for (let j = 0; j < i; j++) {
        if (graphs[j].subjects[key as unknown as number] !== undefined) {
          shared.add(+key);
          break;
        }
      }
    }
  }
  return shared.size ? shared : undefined;
}

function computeHolders(graphs: readonly GraphIndexes[], entityIndex: EntityIndex): GraphHolders | undefined {
  if (graphs.length > MAX_MASKED_GRAPHS) return undefined;
  // n3's entity index numbers terms from 1 up; _id is the last number given.
  const ids = (entityIndex as unknown as { _id?: number })._id;
  if (typeof ids !== 'number') return undefined;
  const subjects = new Uint32Array(ids + 1);
  const objects = new Uint32Array(ids + 1);
  graphs.forEach((graph, g) => {
    const bit = (1 << g) >>> 0;
    for (const key in graph.subjects) subjects[key as unknown as number] |= bit;
    for (const key in graph.objects) objects[key as unknown as number] |= bit;
  });
  return { subjects, objects };
}

/**
 * The view of a store or dataset, or undefined when its stores do not share one entity index (or
 * do not look like n3 v2 stores): then ids are not comparable and Comunica answers.
 */
export function datasetView(source: Store | QueryDataset): DatasetView | undefined {
  const stores = isQueryDataset(source) ? source.stores : [source];
  const first = stores[0] && storeInternals(stores[0]);
  if (!first) return undefined;
  const graphs: GraphIndexes[] = [];
  let size = 0;
  for (const store of stores) {
    const internals = storeInternals(store);
    if (!internals || internals._entityIndex !== first._entityIndex) return undefined;
    const graph = defaultGraphOf(store);
    if (graph) graphs.push(graph);
    size += store.size;
  }
  let sharedSubjects: ReadonlySet<number> | undefined;
  let holders: GraphHolders | undefined;
  if (graphs.length > 1) {
    const sizes = stores.map((store) => store.size);
    const node = sharedSubjectsNode(stores);
    let kept = node.entry;
    if (!kept || kept.sizes.some((n, i) => n !== sizes[i])) {
      kept = { sizes, shared: computeSharedSubjects(graphs), holders: computeHolders(graphs, first._entityIndex) };
      node.entry = kept;
    }
    sharedSubjects = kept.shared;
    holders = kept.holders;
  }
  return { entityIndex: first._entityIndex, graphs, sharedSubjects, size, holders };
}
