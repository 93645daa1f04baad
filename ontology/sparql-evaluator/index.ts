import type * as RDF from '@rdfjs/types';
import type { Store } from 'n3';
import type * as Sparql from 'sparqljs';
import { performance } from 'node:perf_hooks';
import { InputError } from '../../core/errors';
import type { SparqlLimits, SparqlResult } from '../sparql-engine';
import { TemplateInstantiator } from './construct';
import { unsupportedFeature } from './coverage';
import { WeightedLru } from '../dataset-cache';
import { datasetView, isQueryDataset, QueryDataset } from './dataset';
import type { EntityIndex } from './n3-internals';
import { Deadline } from './deadline';
import { planSelect, SelectPlan } from './select';
import { TermTable } from './term-table';
import { UnsupportedQuery } from './unsupported';

// Weft's own SPARQL evaluator. A query's algebra is evaluated directly on the numeric indexes of
// n3 Stores (n3-internals.ts, triple-scan.ts): solutions are rows of term ids (solution.ts,
// term-table.ts), and RDF terms are made only where an expression or the answer needs them. It
// takes SELECT, ASK and CONSTRUCT queries made of the forms coverage.ts accepts; for any other
// query `planFastEvaluation` answers undefined before evaluating anything, and Comunica answers.
//
// The way through: coverage.ts, then algebra.ts (the parse tree as SPARQL algebra), select.ts
// (grouping.ts, ordering.ts and the other solution modifiers), patterns.ts (joins, OPTIONAL,
// UNION, MINUS, BIND, VALUES, subqueries, EXISTS), bgp.ts (join order from cardinality.ts) and
// paths.ts; expressions.ts compiles FILTER, BIND and projected expressions.
//
// On imports: Weft runs TypeScript through tsx, which compiles every use of an imported name into
// getter calls. Modules on the per-row path bind the imported values they use once, at load.

export type { QueryDataset } from './dataset';
export { compactEntityIndex, storeSharingEntityIndex } from './n3-internals';

const WILDCARD = { termType: 'Wildcard', value: '*' } as unknown as Sparql.Wildcard;

function resultTooLarge(max: number, what: string): InputError {
  return new InputError('result_too_large', `The query returns more than ${max} ${what}; add a LIMIT or narrow it.`);
}

/** The query as the SELECT whose solutions it answers with (ASK and CONSTRUCT use every in-scope variable). */
function asSelect(query: Sparql.Query): Sparql.SelectQuery {
  if (query.queryType === 'SELECT') return query;
  // The grammar gives ASK and CONSTRUCT the same solution modifiers (sparqljs keeps them on the query).
  const { order, limit, offset, group, having } = query as unknown as Partial<Sparql.SelectQuery>;
  return { ...query, queryType: 'SELECT', variables: [WILDCARD], order, limit, offset, group, having, distinct: false, reduced: false } as Sparql.SelectQuery;
}

/**
 * A plan kept for the next evaluation of the same parsed query over the same stores. Planning a
 * selective query (its join orders from the estimates, its expressions compiled) takes two to
 * five times as long as evaluating it, and an endpoint is asked the same texts again and again.
 * A plan holds only what the data decides (a join order, a MINUS or subquery table loaded once,
 * path closures), never a run's own state (solutions, groups, DISTINCT, ORDER BY are made per
 * run), and its time limit restarts each run. Only callers whose stores never change keep plans
 * (the query threads: a store there is built once from an encoded graph), and only plans whose
 * run was cheap and ended well, so what one holds stays small. A plan also holds the ids its
 * terms had: a value the data did not hold got an id of the plan's own, and a store built later
 * over the same entity index (another graph, another workspace's) may number that value, after
 * which a new plan would join on the index's id. So a plan serves only while the index has
 * numbered no new term.
 */
interface KeptPlan {
  readonly stores: readonly Store[];
  /** The entity index's last number when the plan was made. */
  readonly numbered: number;
  readonly plan: SelectPlan;
  readonly terms: TermTable;
  readonly entityIndex: EntityIndex;
  readonly deadline: Deadline;
}

/** Per parsed query (kept per text by the engine's parse cache), 64 at most, each weighing one. */
const keptPlans = new WeightedLru<KeptPlan, Sparql.Query>(64, 64);
/** A run longer than this may have loaded large tables into its plan: the plan is not kept. */
const KEEP_RUNS_UNDER_MS = 5;

function keptPlanFor(query: Sparql.Query, stores: readonly Store[]): KeptPlan | undefined {
  const kept = keptPlans.get(query);
  if (!kept) return undefined;
  if (kept.stores.length === stores.length && kept.stores.every((store, index) => store === stores[index]) && kept.entityIndex._id === kept.numbered) return kept;
  keptPlans.delete(query);
  return undefined;
}

/** How many plans are kept (tests). */
export function keptPlanCount(): number {
  return keptPlans.size;
}

/** Forgets every kept plan: the caller drops or rebuilds stores (kept plans hold theirs). */
export function forgetKeptPlans(): void {
  keptPlans.clear();
}

/**
 * Plans the query over the store or dataset and returns what evaluates it, or undefined when the
 * fast path does not take the query (then nothing was evaluated and Comunica answers). The time
 * limit counts from planning; evaluation throws query_timeout and result_too_large as the Comunica
 * path does. With `keepPlans` (stores that never change), the plan of a cheap run is kept for the
 * next evaluation of the same parsed query over the same stores.
 */
export function planFastEvaluation(source: Store | QueryDataset, query: Sparql.Query, limits: SparqlLimits, options: { keepPlans?: boolean } = {}): (() => SparqlResult) | undefined {
  const stores = isQueryDataset(source) ? source.stores : [source];
  const kept = options.keepPlans ? keptPlanFor(query, stores) : undefined;
  if (kept) {
    kept.deadline.restart(limits.timeoutMs, limits.stopped);
    return () => {
      try {
        return evaluate(query, kept.plan, kept.terms, kept.entityIndex, limits);
      } catch (error) {
        keptPlans.delete(query);
        throw error;
      }
    };
  }
  if (unsupportedFeature(query)) return undefined;
  const view = datasetView(source);
  if (!view) return undefined;
  const deadline = new Deadline(limits.timeoutMs, limits.stopped);
  const terms = new TermTable(view.entityIndex);
  let plan: SelectPlan;
  try {
    plan = planSelect(asSelect(query), { view, terms, deadline });
  } catch (error) {
    if (error instanceof UnsupportedQuery) return undefined;
    throw error;
  }
  const numbered = view.entityIndex._id;
  if (!options.keepPlans || numbered === undefined) return () => evaluate(query, plan, terms, view.entityIndex, limits);
  return () => {
    const started = performance.now();
    const result = evaluate(query, plan, terms, view.entityIndex, limits);
    if (performance.now() - started < KEEP_RUNS_UNDER_MS) keptPlans.set(query, { stores: [...stores], numbered, plan, terms, entityIndex: view.entityIndex, deadline }, 1);
    return result;
  };
}

function evaluate(query: Sparql.Query, plan: SelectPlan, terms: TermTable, entityIndex: EntityIndex, limits: SparqlLimits): SparqlResult {
  if (query.queryType === 'ASK') {
    let found = false;
    plan.run(() => {
      found = true;
      return false;
    });
    return { kind: 'boolean', value: found };
  }

  if (query.queryType === 'CONSTRUCT') {
    const template = new TemplateInstantiator(query.template ?? [], plan.slots, terms, entityIndex);
    plan.run((row) => {
      if (template.add(row) > limits.maxResults) throw resultTooLarge(limits.maxResults, 'triples');
      return true;
    });
    return { kind: 'quads', quads: template.quads };
  }

  const { variables, projectedSlots } = plan;
  const rows: Array<Record<string, RDF.Term>> = [];
  plan.run((row) => {
    if (rows.length === limits.maxResults) throw resultTooLarge(limits.maxResults, 'rows');
    const answer: Record<string, RDF.Term> = {};
    for (let i = 0; i < projectedSlots.length; i++) {
      const id = row[projectedSlots[i]];
      if (id !== 0) answer[variables[i]] = terms.rdf(id);
    }
    rows.push(answer);
    return true;
  });
  return { kind: 'bindings', variables: [...variables], rows };
}
