import type { PatternTerm, TriplePattern } from './algebra';
import { estimateMatches, Position } from './cardinality';
import { allOf, PendingCondition, splitTestable } from './conditions';
import type { DatasetView } from './dataset';
import type { Deadline } from './deadline';
import { termOfConstant } from './expressions';
import type { SlotTable } from './slots';
import type { Producer } from './solution';
import type { TermTable } from './term-table';
import * as tripleScan from './triple-scan';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { scanTriples } = tripleScan;

// A basic graph pattern as nested index lookups (a bind join): triple patterns in an order chosen
// by estimated matches (cardinality.ts), each evaluated with the bindings of the ones before it,
// so a selective pattern narrows every later lookup. FILTER conditions are tested right after the
// pattern that binds their last variable.

/** A position of a pattern at run time: a constant's id (-1 when no store holds it), or a slot. */
interface CompiledPosition {
  readonly slot: number;
  readonly id: number;
}

export interface BgpContext {
  readonly view: DatasetView;
  readonly terms: TermTable;
  readonly slots: SlotTable;
  readonly deadline: Deadline;
}

const ABSENT = -1;

function compilePosition(term: PatternTerm, context: BgpContext): CompiledPosition {
  if ('variable' in term) return { slot: context.slots.slot(term.variable), id: 0 };
  return { slot: -1, id: context.terms.storedIdOf(termOfConstant(term.constant)) ?? ABSENT };
}

const variablesOfTriple = (triple: TriplePattern): string[] => [triple.subject, triple.predicate, triple.object].flatMap((t) => ('variable' in t ? [t.variable] : []));

interface JoinPlan {
  readonly order: number[];
  /** Estimated rows summed over the patterns: the work of evaluating the BGP once. */
  readonly cost: number;
  /** Estimated solutions. */
  readonly rows: number;
}

/**
 * The estimates of one BGP: per pattern and per combination of its positions bound or not (a
 * three-bit mask), computed once. Variables are bits, so a set of bound variables is a number.
 */
class PatternEstimates {
  /** Per pattern, per position (s, p, o): the variable's bit, or 0 for a constant. */
  private readonly bits: number[][];
  readonly variableMasks: number[];
  private readonly kept: Float64Array;

  constructor(
    private readonly compiled: CompiledPosition[][],
    private readonly view: DatasetView,
    bitOf: (name: string) => number,
    triples: TriplePattern[],
  ) {
    this.bits = triples.map((triple) => [triple.subject, triple.predicate, triple.object].map((term) => ('variable' in term ? bitOf(term.variable) : 0)));
    this.variableMasks = this.bits.map(([s, p, o]) => s | p | o);
    this.kept = new Float64Array(triples.length * 8).fill(-1);
  }

  /** Estimated matches of pattern `i` once per row in which the variables in `bound` are bound. */
  matches(i: number, bound: number): number {
    const bits = this.bits[i];
    const mask = (bits[0] & bound ? 1 : 0) | (bits[1] & bound ? 2 : 0) | (bits[2] & bound ? 4 : 0);
    const at = i * 8 + mask;
    let value = this.kept[at];
    if (value < 0) {
      const [s, p, o] = this.compiled[i];
      value = estimateMatches(this.view, positionOf(bits[0], mask & 1, s), positionOf(bits[1], mask & 2, p), positionOf(bits[2], mask & 4, o));
      this.kept[at] = value;
    }
    return value;
  }
}

const BOUND: Position = { kind: 'bound' };
const FREE: Position = { kind: 'free' };

/** A pattern position as the estimates see it: a constant (0 when no store holds it), or a variable bound or free. */
function positionOf(bit: number, bound: number, compiled: CompiledPosition): Position {
  if (bit === 0) return { kind: 'constant', id: compiled.id === ABSENT ? 0 : compiled.id };
  return bound ? BOUND : FREE;
}

/**
 * One greedy order from a given first pattern: then repeatedly the pattern with the fewest
 * estimated matches per row among those sharing a variable with what is bound (a cross product
 * only when none does). Its cost is the sum of the estimated rows after each pattern.
 */
function greedyOrder(first: number, estimates: PatternEstimates, count: number, boundOnEntry: number): JoinPlan {
  let bound = boundOnEntry | estimates.variableMasks[first];
  let rows = Math.max(estimates.matches(first, boundOnEntry), 0);
  let cost = rows;
  const order = [first];
  const placed = new Uint8Array(count);
  placed[first] = 1;
  for (let step = 1; step < count; step++) {
    let best = -1;
    let bestScore = Infinity;
    let bestFanout = 0;
    for (let i = 0; i < count; i++) {
      if (placed[i]) continue;
      const fanout = estimates.matches(i, bound);
      const variables = estimates.variableMasks[i];
      // A pattern unconnected to what is bound multiplies the rows: only when nothing else is left.
      const score = variables === 0 || (variables & bound) !== 0 ? fanout : 1e12 + fanout;
      if (score < bestScore) {
        bestScore = score;
        bestFanout = fanout;
        best = i;
      }
    }
    order.push(best);
    placed[best] = 1;
    bound |= estimates.variableMasks[best];
    rows *= bestFanout;
    cost += rows;
  }
  return { order, cost, rows };
}

/** Bits for the BGP's variables (those beyond 30 share the last bit: the estimates only get rougher). */
function variableBits(triples: TriplePattern[]): (name: string) => number {
  const bits = new Map<string, number>();
  const add = (term: PatternTerm) => {
    if ('variable' in term && !bits.has(term.variable)) bits.set(term.variable, 1 << Math.min(bits.size, 30));
  };
  for (const triple of triples) {
    add(triple.subject);
    add(triple.predicate);
    add(triple.object);
  }
  return (name) => bits.get(name) ?? 0;
}

/**
 * The order to evaluate the patterns in: the cheapest of the greedy orders that start from each
 * pattern (a selective pattern can look costly on its own only because it is checked last).
 */
function joinOrder(triples: TriplePattern[], compiled: CompiledPosition[][], certainOnEntry: ReadonlySet<string>, view: DatasetView): JoinPlan {
  const bitOf = variableBits(triples);
  const estimates = new PatternEstimates(compiled, view, bitOf, triples);
  let boundOnEntry = 0;
  for (const name of certainOnEntry) boundOnEntry |= bitOf(name);
  let best: JoinPlan = { order: [], cost: 0, rows: 1 };
  for (let first = 0; first < triples.length; first++) {
    const candidate = greedyOrder(first, estimates, triples.length, boundOnEntry);
    if (first === 0 || candidate.cost < best.cost) best = candidate;
  }
  return best;
}

/** What evaluating the BGP once costs and yields, by the estimates its join order is chosen with. */
export function estimateBgp(triples: TriplePattern[], certainOnEntry: ReadonlySet<string>, context: BgpContext): { cost: number; rows: number } {
  const compiled = triples.map((t) => [compilePosition(t.subject, context), compilePosition(t.predicate, context), compilePosition(t.object, context)]);
  const { cost, rows } = joinOrder(triples, compiled, certainOnEntry, context.view);
  return { cost, rows };
}

/**
 * The BGP's producer. `pending` are conditions to test as early as their variables allow; those
 * the BGP never makes testable are tested after its last pattern.
 */
export function compileBgp(triples: TriplePattern[], certainOnEntry: ReadonlySet<string>, pending: readonly PendingCondition[], context: BgpContext): Producer {
  const compiled = triples.map((t) => [compilePosition(t.subject, context), compilePosition(t.predicate, context), compilePosition(t.object, context)]);
  const { order } = joinOrder(triples, compiled, certainOnEntry, context.view);
  const bound = new Set(certainOnEntry);
  let waiting = pending;
  const steps = order.map((i) => {
    for (const name of variablesOfTriple(triples[i])) bound.add(name);
    const [testable, later] = splitTestable(waiting, bound);
    waiting = later;
    return { positions: compiled[i], test: allOf(testable) };
  });
  const rest = allOf(waiting);
  let next: Producer = rest ? (row, sink) => (rest(row) ? sink(row) : true) : (row, sink) => sink(row);
  for (let i = steps.length - 1; i >= 0; i--) next = patternStep(steps[i].positions, steps[i].test, next, context);
  return next;
}

/** One pattern: look up its matches given the row, bind its free variables, continue with `next`. */
function patternStep([s, p, o]: CompiledPosition[], test: ((row: number[]) => boolean) | undefined, next: Producer, context: BgpContext): Producer {
  const { view, deadline } = context;
  return (row, sink) => {
    const sv = s.slot < 0 ? s.id : row[s.slot];
    const pv = p.slot < 0 ? p.id : row[p.slot];
    const ov = o.slot < 0 ? o.id : row[o.slot];
    // A constant no store holds, or a computed value bound earlier, matches nothing.
    if (sv < 0 || pv < 0 || ov < 0) return true;
    const bindS = sv === 0;
    const bindP = pv === 0;
    const bindO = ov === 0;
    // A variable repeated in the pattern (?x ?p ?x) binds at its first position and must match at the others.
    const pIsS = bindP && bindS && p.slot === s.slot;
    const oIsS = bindO && bindS && o.slot === s.slot;
    const oIsP = bindO && bindP && !pIsS && o.slot === p.slot;
    return scanTriples(
      view,
      sv,
      pv,
      ov,
      (ts, tp, to) => {
        if ((pIsS && tp !== ts) || (oIsS && to !== ts) || (oIsP && to !== tp)) return true;
        if (bindS) row[s.slot] = ts;
        if (bindP) row[p.slot] = tp;
        if (bindO) row[o.slot] = to;
        const ok = test === undefined || test(row) ? next(row, sink) : true;
        if (bindS) row[s.slot] = 0;
        if (bindP) row[p.slot] = 0;
        if (bindO) row[o.slot] = 0;
        return ok;
      },
      deadline,
    );
  };
}
