import type { DatasetView } from './dataset';
import type { Deadline } from './deadline';
import type { GraphIndexes, IdMap, IdSet } from './n3-internals';

// Matching one triple pattern against the default graphs of the dataset's stores, through the n3
// index that serves the bound positions: subject→predicate→object when the subject is bound,
// predicate→object→subject when the predicate is, object→subject→predicate when only the object
// is. Index keys are numeric ids (JS gives them back as strings; `+key` reads them as numbers).
// A triple of a later store whose subject is shared with an earlier store is skipped when an
// earlier store holds it too: the default graph is a merge, so it is one triple.

/** Receives a matching triple's ids; returns false to stop the scan. */
export type TripleVisitor = (subject: number, predicate: number, object: number) => boolean;

const UNBOUND = 0;

function heldEarlier(graphs: readonly GraphIndexes[], before: number, s: number, p: number, o: number): boolean {
  for (let i = 0; i < before; i++) {
    const objects = graphs[i].subjects[s]?.[p];
    if (objects !== undefined && objects[o] === null) return true;
  }
  return false;
}

/**
 * Visits the triples matching (s, p, o), where 0 is a wildcard. Ids must be positive: a computed
 * term (negative id) is in no store, and the caller skips the scan.
 */
export function scanTriples(view: DatasetView, s: number, p: number, o: number, visit: TripleVisitor, deadline: Deadline): boolean {
  const graphs = view.graphs;
  const shared = view.sharedSubjects;
  const mask = holdersOf(view, s, o);
  for (let g = 0; g < graphs.length; g++) {
    if (((mask >>> g) & 1) === 0) continue;
    // Only a later store's triples about a shared subject can repeat an earlier store's.
    const dedupe = g > 0 && shared !== undefined;
    if (dedupe && s !== UNBOUND && !shared.has(s)) {
      if (!scanGraph(graphs[g], s, p, o, visit, deadline)) return false;
      continue;
    }
    const ok = dedupe
      ? scanGraph(graphs[g], s, p, o, (ts, tp, to) => (shared.has(ts) && heldEarlier(graphs, g, ts, tp, to) ? true : visit(ts, tp, to)), deadline)
      : scanGraph(graphs[g], s, p, o, visit, deadline);
    if (!ok) return false;
  }
  return true;
}

const EVERY_GRAPH = 0xffffffff;

/** The graphs that can hold a match: those holding the bound subject, else the bound object, else all. */
function holdersOf(view: DatasetView, s: number, o: number): number {
  const holders = view.holders;
  if (holders === undefined) return EVERY_GRAPH;
  if (s !== UNBOUND) return s < holders.subjects.length ? holders.subjects[s] : 0;
  if (o !== UNBOUND) return o < holders.objects.length ? holders.objects[o] : 0;
  return EVERY_GRAPH;
}

function scanGraph(graph: GraphIndexes, s: number, p: number, o: number, visit: TripleVisitor, deadline: Deadline): boolean {
  if (s !== UNBOUND) {
    const predicates = graph.subjects[s];
    if (predicates === undefined) return true;
    if (p !== UNBOUND) {
      const objects = predicates[p];
      if (objects === undefined) return true;
      if (o !== UNBOUND) return objects[o] === null ? (deadline.tick(), visit(s, p, o)) : true;
      for (const key in objects) {
        deadline.tick();
        if (!visit(s, p, +key)) return false;
      }
      return true;
    }
    if (o !== UNBOUND) return scanIds(graph.objects[o]?.[s], deadline, (tp) => visit(s, tp, o));
    for (const pKey in predicates) {
      const tp = +pKey;
      const objects = predicates[tp];
      for (const oKey in objects) {
        deadline.tick();
        if (!visit(s, tp, +oKey)) return false;
      }
    }
    return true;
  }
  if (p !== UNBOUND) {
    const objects = graph.predicates[p];
    if (objects === undefined) return true;
    if (o !== UNBOUND) return scanIds(objects[o], deadline, (ts) => visit(ts, p, o));
    for (const oKey in objects) {
      const to = +oKey;
      const subjects = objects[to];
      for (const sKey in subjects) {
        deadline.tick();
        if (!visit(+sKey, p, to)) return false;
      }
    }
    return true;
  }
  if (o !== UNBOUND) {
    const subjects = graph.objects[o];
    if (subjects === undefined) return true;
    for (const sKey in subjects) {
      const ts = +sKey;
      const predicates = subjects[ts];
      for (const pKey in predicates) {
        deadline.tick();
        if (!visit(ts, +pKey, o)) return false;
      }
    }
    return true;
  }
  return scanAll(graph.subjects, visit, deadline);
}

/** The ids of an innermost index level (the subjects of a predicate and object, say). */
function scanIds(ids: IdSet | undefined, deadline: Deadline, visit: (id: number) => boolean): boolean {
  if (ids === undefined) return true;
  for (const key in ids) {
    deadline.tick();
    if (!visit(+key)) return false;
  }
  return true;
}

function scanAll(subjects: Record<number, IdMap>, visit: TripleVisitor, deadline: Deadline): boolean {
  for (const sKey in subjects) {
    const ts = +sKey;
    const predicates = subjects[ts];
    for (const pKey in predicates) {
      const tp = +pKey;
      const objects = predicates[tp];
      for (const oKey in objects) {
        deadline.tick();
        if (!visit(ts, tp, +oKey)) return false;
      }
    }
  }
  return true;
}
