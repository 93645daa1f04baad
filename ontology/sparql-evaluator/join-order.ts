import { AlgebraNode, certainlyBound, variablesOf } from './algebra';
import { BgpContext, estimateBgp } from './bgp';

// The order of a group's joined parts. Each part is evaluated once per solution of the parts
// before it, with their bindings, so the order decides the work. BGPs, paths and VALUES get
// estimates (a BGP from its own join plan) and the cheapest order of them is taken; the other
// parts (unions, nested groups, OPTIONALs) follow in the query's order, subqueries last (they are
// evaluated apart and hashed, so their place matters least).

interface Estimate {
  /** Work to evaluate the part once, given what is bound. */
  readonly cost: number;
  /** Solutions per evaluation. */
  readonly rows: number;
}

const PATH_REACH = 10;

function estimate(node: AlgebraNode, bound: ReadonlySet<string>, context: BgpContext): Estimate | undefined {
  switch (node.type) {
    case 'bgp':
      return estimateBgp(node.triples, bound, context);
    case 'values':
      return { cost: node.rows.length, rows: node.rows.length };
    case 'path': {
      const fixed = [node.subject, node.object].filter((end) => !('variable' in end) || bound.has(end.variable)).length;
      if (fixed === 2) return { cost: PATH_REACH, rows: 0.5 };
      if (fixed === 1) return { cost: PATH_REACH, rows: PATH_REACH };
      const nodes = context.view.size * 2;
      return { cost: nodes * PATH_REACH, rows: nodes * PATH_REACH };
    }
    default:
      return undefined;
  }
}

function* permutations<T>(items: readonly T[]): Generator<T[]> {
  if (items.length <= 1) {
    yield [...items];
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)];
    for (const tail of permutations(rest)) yield [items[i], ...tail];
  }
}

type Estimator = (node: AlgebraNode, bound: ReadonlySet<string>) => Estimate;

/** Estimates kept per part and bound variables it mentions: the orders tried share most of them. */
function keptEstimates(context: BgpContext): Estimator {
  const kept = new Map<AlgebraNode, Map<string, Estimate>>();
  return (node, bound) => {
    const mentioned = [...variablesOf(node)].filter((name) => bound.has(name)).sort().join(' ');
    let byBound = kept.get(node);
    if (!byBound) kept.set(node, (byBound = new Map()));
    let value = byBound.get(mentioned);
    if (!value) byBound.set(mentioned, (value = estimate(node, bound, context)!));
    return value;
  };
}

/** Total work of evaluating the parts in this order. */
function orderCost(order: readonly AlgebraNode[], certainOnEntry: ReadonlySet<string>, estimateOf: Estimator): number {
  const bound = new Set(certainOnEntry);
  let rows = 1;
  let cost = 0;
  for (const node of order) {
    const { cost: once, rows: yielded } = estimateOf(node, bound);
    cost += rows * Math.max(once, 1);
    rows *= yielded;
    for (const name of certainlyBound(node)) bound.add(name);
  }
  return cost;
}

const MAX_PERMUTED = 5;

export function orderJoinInputs(inputs: readonly AlgebraNode[], certainOnEntry: ReadonlySet<string>, context: BgpContext): AlgebraNode[] {
  const isEstimable = (node: AlgebraNode) => node.type === 'bgp' || node.type === 'values' || node.type === 'path';
  const estimable = inputs.filter(isEstimable);
  const others = inputs.filter((node) => !isEstimable(node) && node.type !== 'subquery');
  const subqueries = inputs.filter((node) => node.type === 'subquery');
  let best = estimable;
  if (estimable.length > 1 && estimable.length <= MAX_PERMUTED) {
    let bestCost = Infinity;
    const estimateOf = keptEstimates(context);
    for (const order of permutations(estimable)) {
      const cost = orderCost(order, certainOnEntry, estimateOf);
      if (cost < bestCost) {
        bestCost = cost;
        best = order;
      }
    }
  }
  return [...best, ...others, ...subqueries];
}
