import type * as RDF from '@rdfjs/types';
import { Store, termToId } from 'n3';

// A graph in a form that costs one copy in memory however many query threads read it: its terms
// (n3's term ids, UTF-8, back to back) and its triples (three term numbers each) in shared memory.
// The API process keeps encoded graphs; a query thread turns one into an n3 Store when a query
// first needs it, and a thread started to replace a terminated one rebuilds from them without
// reading a record again.

export interface EncodedGraph {
  /** The terms' n3 ids, UTF-8, one after another. */
  terms: SharedArrayBuffer;
  /** termCount + 1 byte offsets into `terms`: term i is [offsets[i], offsets[i + 1]). */
  termOffsets: SharedArrayBuffer;
  /** Three term numbers per triple. */
  triples: SharedArrayBuffer;
  termCount: number;
  tripleCount: number;
}

/** Bytes an encoded graph holds, for cache weights. */
export const encodedBytes = (graph: EncodedGraph): number => graph.terms.byteLength + graph.termOffsets.byteLength + graph.triples.byteLength;

/** Collects triples (the default graph's; graph names are dropped) and numbers their terms once. */
export class GraphEncoder {
  private readonly numbers = new Map<string, number>();
  private readonly ids: string[] = [];
  private triples = new Int32Array(3 * 1024);
  private count = 0;

  get tripleCount(): number {
    return this.count;
  }

  private numberOf(term: RDF.Term): number {
    const id = termToId(term as never) as string;
    let number = this.numbers.get(id);
    if (number === undefined) {
      number = this.ids.length;
      this.ids.push(id);
      this.numbers.set(id, number);
    }
    return number;
  }

  add(quad: RDF.Quad): void {
    if (3 * (this.count + 1) > this.triples.length) {
      const grown = new Int32Array(this.triples.length * 2);
      grown.set(this.triples);
      this.triples = grown;
    }
    const at = 3 * this.count++;
    this.triples[at] = this.numberOf(quad.subject);
    this.triples[at + 1] = this.numberOf(quad.predicate);
    this.triples[at + 2] = this.numberOf(quad.object);
  }

  finish(): EncodedGraph {
    const text = Buffer.from(this.ids.join(''), 'utf8');
    const terms = new SharedArrayBuffer(text.length);
    Buffer.from(terms).set(text);
    const termOffsets = new SharedArrayBuffer(4 * (this.ids.length + 1));
    const offsets = new Int32Array(termOffsets);
    let at = 0;
    this.ids.forEach((id, index) => {
      offsets[index] = at;
      at += Buffer.byteLength(id, 'utf8');
    });
    offsets[this.ids.length] = at;
    const triples = new SharedArrayBuffer(4 * 3 * this.count);
    new Int32Array(triples).set(this.triples.subarray(0, 3 * this.count));
    return { terms, termOffsets, triples, termCount: this.ids.length, tripleCount: this.count };
  }
}

/** Adds an encoded graph's triples to a store's default graph (ids interned once per term). */
export function addEncodedGraph(store: Store, graph: EncodedGraph): void {
  const text = Buffer.from(graph.terms);
  const offsets = new Int32Array(graph.termOffsets);
  const triples = new Int32Array(graph.triples);
  // The store's own numbers for this graph's terms, through its (possibly shared) entity index.
  const internal = store as unknown as { _termToNewNumericId(id: string): number; _addQuad(s: number, p: number, o: number, g: number): boolean };
  const numbers = new Array<number>(graph.termCount);
  for (let term = 0; term < graph.termCount; term++) numbers[term] = internal._termToNewNumericId(text.toString('utf8', offsets[term], offsets[term + 1]));
  // The default graph's id is 1 in every n3 entity index.
  for (let at = 0; at < 3 * graph.tripleCount; at += 3) internal._addQuad(numbers[triples[at]], numbers[triples[at + 1]], numbers[triples[at + 2]], 1);
}
