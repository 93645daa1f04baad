import type * as Sparql from 'sparqljs';
import type { AlgebraNode, PatternTerm } from './algebra';
import type { BgpContext } from './bgp';
import { filtered, PendingCondition } from './conditions';
import { termOfConstant } from './expressions';
import type { Producer } from './solution';
import { UnsupportedQuery } from './unsupported';

// Property paths with * + ? (SPARQL 1.1 §18.4 ALP): the set of nodes reachable from one end,
// found breadth-first. Sequences, alternatives and inverses outside those are plain joins and
// unions (algebra.ts), which keep their duplicates as the spec says; inside them only
// reachability matters. Negated property sets are Comunica's.

export type PathNode = AlgebraNode & { type: 'path' };
export type PathExpression = Sparql.IriTerm | Sparql.PropertyPath;

/** Calls `visit` with each node one application of the path leads to from `from` (forward) or back from it. */
type Step = (from: number, forward: boolean, visit: (to: number) => void) => void;

function compileStep(path: PathExpression, context: BgpContext): Step {
  if (!('type' in path)) {
    const predicate = context.terms.storedIdOf(termOfConstant(path));
    if (predicate === undefined) return () => undefined;
    const graphs = context.view.graphs;
    return (from, forward, visit) => {
      if (from <= 0) return;
      for (const graph of graphs) {
        const next = forward ? graph.subjects[from]?.[predicate] : graph.predicates[predicate]?.[from];
        if (next === undefined) continue;
        for (const key in next) {
          context.deadline.tick();
          visit(+key);
        }
      }
    };
  }
  const items = path.items.map((item) => compileStep(item as PathExpression, context));
  switch (path.pathType) {
    case '^':
      return (from, forward, visit) => items[0](from, !forward, visit);
    case '/':
      return (from, forward, visit) => {
        const ordered = forward ? items : [...items].reverse();
        const walk = (index: number, node: number): void => (index === ordered.length ? visit(node) : ordered[index](node, forward, (next) => walk(index + 1, next)));
        walk(0, from);
      };
    case '|':
      return (from, forward, visit) => {
        for (const item of items) item(from, forward, visit);
      };
    case '*':
    case '+':
    case '?':
      return (from, forward, visit) => {
        for (const node of closure(items[0], path.pathType as Closure, from, forward)) visit(node);
      };
    default:
      throw new UnsupportedQuery('a negated property set');
  }
}

type Closure = '*' | '+' | '?';

/** The nodes `closure` of `step` reaches from `start`: with * and ? the start itself too. */
function closure(step: Step, kind: Closure, start: number, forward: boolean): Set<number> {
  const reached = new Set<number>();
  if (kind !== '+') reached.add(start);
  if (kind === '?') {
    step(start, forward, (next) => reached.add(next));
    return reached;
  }
  const frontier = [start];
  const expanded = new Set<number>([start]);
  while (frontier.length) {
    const node = frontier.pop()!;
    step(node, forward, (next) => {
      reached.add(next);
      if (!expanded.has(next)) {
        expanded.add(next);
        frontier.push(next);
      }
    });
  }
  return reached;
}

/** Every subject and object of the default graph: where a path with two free ends may start. */
function graphNodes(context: BgpContext): Set<number> {
  const nodes = new Set<number>();
  for (const graph of context.view.graphs) {
    for (const key in graph.subjects) nodes.add(+key);
    for (const key in graph.objects) nodes.add(+key);
  }
  return nodes;
}

interface End {
  readonly slot: number;
  /** A constant's id (a computed one when no store holds it: a zero-length path still matches it). */
  readonly id: number;
}

function compileEnd(term: PatternTerm, context: BgpContext): End {
  if ('variable' in term) return { slot: context.slots.slot(term.variable), id: 0 };
  return { slot: -1, id: context.terms.idOf(termOfConstant(term.constant)) };
}

/**
 * The closures a path node has computed in this evaluation, per start and direction: a path
 * joined with other patterns is asked for the same start again and again. Kept up to a number
 * of nodes in all, then computed afresh.
 */
class ClosureCache {
  private readonly kept = new Map<number, Set<number>>();
  private size = 0;
  constructor(
    private readonly step: Step,
    private readonly kind: Closure,
  ) {}

  reach(start: number, forward: boolean): Set<number> {
    // Forward starts as themselves, backward ones negated (ids of data terms are positive; a
    // computed start reaches only itself, and is not kept).
    const key = forward ? start : -start;
    let reached = start > 0 ? this.kept.get(key) : undefined;
    if (reached === undefined) {
      reached = closure(this.step, this.kind, start, forward);
      if (start > 0 && this.size + reached.size <= MAX_KEPT_NODES) {
        this.kept.set(key, reached);
        this.size += reached.size;
      }
    }
    return reached;
  }
}

const MAX_KEPT_NODES = 1 << 20;

export function compilePath(node: PathNode, pending: readonly PendingCondition[], context: BgpContext): Producer {
  const closures = new ClosureCache(compileStep(node.path, context), node.closure);
  const subject = compileEnd(node.subject, context);
  const object = compileEnd(node.object, context);
  const sameVariable = subject.slot >= 0 && subject.slot === object.slot;
  const producer: Producer = (row, sink) => {
    const s = subject.slot < 0 ? subject.id : row[subject.slot];
    const o = object.slot < 0 ? object.id : row[object.slot];
    if (s !== 0 && o !== 0) return closures.reach(s, true).has(o) ? sink(row) : true;
    if (s !== 0 || o !== 0) {
      const forward = s !== 0;
      const free = forward ? object : subject;
      for (const node of closures.reach(forward ? s : o, forward)) {
        row[free.slot] = node;
        const more = sink(row);
        row[free.slot] = 0;
        if (!more) return false;
      }
      return true;
    }
    for (const start of graphNodes(context)) {
      for (const end of closures.reach(start, true)) {
        if (sameVariable && end !== start) continue;
        row[subject.slot] = start;
        row[object.slot] = end;
        const more = sink(row);
        row[subject.slot] = 0;
        row[object.slot] = 0;
        if (!more) return false;
      }
    }
    return true;
  };
  return filtered(producer, pending);
}
