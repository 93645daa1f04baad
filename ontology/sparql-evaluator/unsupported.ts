/**
 * Thrown while planning when a query uses something the evaluator does not implement (a property
 * path, GRAPH, a function it lacks): the query then goes to Comunica. Planning evaluates nothing,
 * so nothing is lost but the planning time.
 */
export class UnsupportedQuery extends Error {
  constructor(readonly feature: string) {
    super(`not evaluated by the fast path: ${feature}`);
  }
}
