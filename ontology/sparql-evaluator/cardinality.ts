import type { DatasetView } from './dataset';
import { GraphIndexes, keyCount } from './n3-internals';

// Estimates of how many triples a pattern matches, for ordering a BGP's joins. They come from
// the n3 indexes: key counts at every level are kept by n3 (O(1)); a predicate's triple count
// sums its objects' subject counts once and is kept per graph. Estimates only steer the order,
// so a kept figure that a later change to the store made stale costs speed, never correctness.

/** Per position: a constant's id (0 when the data does not hold it: nothing matches), a variable bound by then, or free. */
export type Position = { kind: 'constant'; id: number } | { kind: 'bound' } | { kind: 'free' };

interface PredicateFigures {
  triples: number;
  /** Distinct subjects, estimated from a sample of subjects' object counts. */
  subjects: number;
  objects: number;
}

interface GraphFigures {
  readonly graph: GraphIndexes;
  /** Key counts of the three top levels when the figures were computed (a change resets them). */
  readonly shape: string;
  readonly predicates: Map<number, PredicateFigures>;
  /** All triples of the graph, once some estimate needed it. */
  triples?: number;
}

const figuresByGraph = new WeakMap<GraphIndexes, GraphFigures>();
/** Per evaluation (a view is made per evaluation): the figures of its graphs, checked once. */
const figuresByView = new WeakMap<DatasetView, GraphFigures[]>();
const SAMPLE = 32;

function graphFigures(graph: GraphIndexes): GraphFigures {
  const shape = `${keyCount(graph.subjects)}/${keyCount(graph.predicates)}/${keyCount(graph.objects)}`;
  let figures = figuresByGraph.get(graph);
  if (!figures || figures.shape !== shape) {
    figures = { graph, shape, predicates: new Map() };
    figuresByGraph.set(graph, figures);
  }
  return figures;
}

function viewFigures(view: DatasetView): GraphFigures[] {
  let figures = figuresByView.get(view);
  if (!figures) {
    figures = view.graphs.map(graphFigures);
    figuresByView.set(view, figures);
  }
  return figures;
}

function predicateFigures(kept: GraphFigures, predicate: number): PredicateFigures {
  const graph = kept.graph;
  let figures = kept.predicates.get(predicate);
  if (figures) return figures;
  const objects = graph.predicates[predicate];
  let triples = 0;
  let sampledSubjects = 0;
  let sampledTriples = 0;
  if (objects !== undefined) {
    for (const key in objects) {
      const subjects = objects[key as unknown as number];
      triples += keyCount(subjects);
      if (sampledSubjects < SAMPLE) {
        for (const subject in subjects) {
          sampledSubjects++;
          sampledTriples += keyCount(graph.subjects[subject as unknown as number][predicate]);
          break;
        }
      }
    }
  }
  const perSubject = sampledSubjects ? sampledTriples / sampledSubjects : 1;
  figures = { triples, subjects: Math.max(1, triples / perSubject), objects: objects === undefined ? 0 : keyCount(objects) };
  kept.predicates.set(predicate, figures);
  return figures;
}

/** Matches of (s, p, o) given which positions are constant, bound by earlier patterns, or free. */
export function estimateMatches(view: DatasetView, s: Position, p: Position, o: Position): number {
  let total = 0;
  for (const figures of viewFigures(view)) total += estimateInGraph(figures, s, p, o);
  return total;
}

function estimateInGraph(figures: GraphFigures, s: Position, p: Position, o: Position): number {
  const graph = figures.graph;
  if ((s.kind === 'constant' && s.id <= 0) || (p.kind === 'constant' && p.id <= 0) || (o.kind === 'constant' && o.id <= 0)) return 0;
  if (p.kind === 'constant') {
    const predicate = p.id;
    if (s.kind === 'constant') {
      const objects = graph.subjects[s.id]?.[predicate];
      if (objects === undefined) return 0;
      if (o.kind === 'constant') return objects[o.id] === null ? 1 : 0;
      const count = keyCount(objects);
      return o.kind === 'bound' ? Math.min(1, count / Math.max(1, predicateFigures(figures, predicate).objects)) : count;
    }
    if (o.kind === 'constant') {
      const subjects = graph.predicates[predicate]?.[o.id];
      if (subjects === undefined) return 0;
      const count = keyCount(subjects);
      return s.kind === 'bound' ? Math.min(1, count / predicateFigures(figures, predicate).subjects) : count;
    }
    const ofPredicate = predicateFigures(figures, predicate);
    if (ofPredicate.triples === 0) return 0;
    if (s.kind === 'bound' && o.kind === 'bound') return ofPredicate.triples / (ofPredicate.subjects * Math.max(1, ofPredicate.objects));
    if (s.kind === 'bound') return ofPredicate.triples / ofPredicate.subjects;
    if (o.kind === 'bound') return ofPredicate.triples / Math.max(1, ofPredicate.objects);
    return ofPredicate.triples;
  }
  // A variable predicate: averages over the whole graph.
  const triples = graphTriples(figures);
  const predicates = Math.max(1, keyCount(graph.predicates));
  const pFactor = p.kind === 'bound' ? 1 / predicates : 1;
  if (s.kind === 'constant') {
    const subject = graph.subjects[s.id];
    if (subject === undefined) return 0;
    let count = 0;
    for (const key in subject) count += keyCount(subject[key as unknown as number]);
    return (o.kind === 'free' ? count : o.kind === 'bound' ? count / Math.max(1, keyCount(graph.objects)) : Math.min(count, 1)) * pFactor;
  }
  if (o.kind === 'constant') {
    const object = graph.objects[o.id];
    if (object === undefined) return 0;
    const count = keyCount(object);
    return (s.kind === 'bound' ? count / Math.max(1, keyCount(graph.subjects)) : count) * pFactor;
  }
  const perSubject = triples / Math.max(1, keyCount(graph.subjects));
  const perObject = triples / Math.max(1, keyCount(graph.objects));
  if (s.kind === 'bound' && o.kind === 'bound') return (perSubject / Math.max(1, keyCount(graph.objects))) * pFactor;
  if (s.kind === 'bound') return perSubject * pFactor;
  if (o.kind === 'bound') return perObject * pFactor;
  return triples * pFactor;
}

/** Triples in one graph: the sum of the predicates' counts. */
function graphTriples(figures: GraphFigures): number {
  if (figures.triples === undefined) {
    let triples = 0;
    for (const key in figures.graph.predicates) triples += predicateFigures(figures, +key).triples;
    figures.triples = triples;
  }
  return figures.triples;
}
