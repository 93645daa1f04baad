import { Readable } from 'node:stream';
import type * as RDF from '@rdfjs/types';
import { datasetView, QueryDataset } from './dataset';

// The dataset of several stores as one RDF/JS Source, for Comunica (the queries the fast path
// does not take): match() reads every store, and a quad an earlier store also holds is skipped,
// as the default graph is the merge of the stores' graphs. Default-graph quads are checked only
// when their subject is one the stores share (usually none); quads of named graphs always.

type TermToId = (term: RDF.Term) => number | undefined;

export interface UnionSource extends RDF.Source {
  countQuads(subject?: RDF.Term | null, predicate?: RDF.Term | null, object?: RDF.Term | null, graph?: RDF.Term | null): number;
}

export function unionSource(dataset: QueryDataset): UnionSource {
  const stores = dataset.stores;
  function* quads(subject?: RDF.Term | null, predicate?: RDF.Term | null, object?: RDF.Term | null, graph?: RDF.Term | null): Generator<RDF.Quad> {
    // Read per call: the stores may have changed since the source was made. Without a view (stores
    // not sharing an entity index) ids are not comparable, and every quad is checked.
    const view = datasetView(dataset);
    const shared = view?.sharedSubjects;
    for (let i = 0; i < stores.length; i++) {
      const store = stores[i];
      const idOf = (store as unknown as { _termToNumericId: TermToId })._termToNumericId;
      const mayRepeat = (quad: RDF.Quad): boolean => {
        if (i === 0) return false;
        if (!view || quad.graph.termType !== 'DefaultGraph') return true;
        const id = shared && idOf(quad.subject);
        return id !== undefined && shared!.has(id);
      };
      for (const quad of store.readQuads(subject ?? null, predicate ?? null, object ?? null, graph ?? null)) {
        if (mayRepeat(quad) && stores.slice(0, i).some((earlier) => earlier.has(quad))) continue;
        yield quad;
      }
    }
  }
  return {
    match: (subject, predicate, object, graph) => Readable.from(quads(subject, predicate, object, graph)) as unknown as RDF.Stream,
    // An estimate for Comunica's join planning: triples held twice count twice.
    countQuads: (subject, predicate, object, graph) => stores.reduce((sum, store) => sum + store.countQuads(subject ?? null, predicate ?? null, object ?? null, graph ?? null), 0),
  };
}
