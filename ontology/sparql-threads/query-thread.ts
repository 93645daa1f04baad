import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { Store } from 'n3';
import { DomainError } from '../../core/errors';
import { evaluateQuery, KeptParses, QueryDataset, sparqlEngine } from '../sparql-engine';
import { compactEntityIndex, forgetKeptPlans } from '../sparql-evaluator';
import { serializeResult } from '../sparql-results';
import { addEncodedGraph, EncodedGraph } from './encoded-graph';
import type { DropRequest, QueryRequest, ThreadHeap, ThreadMessage } from './messages';
import { plainResult } from './plain-result';

// A query thread: evaluates one query at a time over stores it builds from encoded graphs and
// keeps while they are used. The API process terminates the thread when a query outlives its
// time limit, so nothing here needs to survive that: the replacement starts empty.

/**
 * Stores share one entity index so a query's stores compare term numbers directly. Terms of
 * dropped stores stay in the index, so it is started afresh once it holds far more than the kept
 * stores need. Which graphs a thread keeps is decided by the pool (it sees every thread's memory):
 * a query names the graphs to drop before it runs.
 */
let entityIndex = compactEntityIndex();
/** The id of a query whose caller went away, set by the pool (shared memory, read with the evaluator's clock). */
const stop = (workerData as { stop: Int32Array }).stop;
const stores = new Map<number, { store: Store; terms: number }>();
/** The encoded graphs this thread was sent (shared memory, not copies), by the pool's number, until the pool drops them. */
const encoded = new Map<number, EncodedGraph>();
/** This thread's parses of the texts it answers (its kept plans are found by them). */
const parses = new KeptParses();

function drop(refs: number[]): void {
  // Kept plans hold their stores.
  if (refs.some((ref) => stores.has(ref))) forgetKeptPlans();
  for (const ref of refs) {
    stores.delete(ref);
    encoded.delete(ref);
  }
}

/** Starts the entity index afresh when it mostly holds terms of dropped stores (before a query builds any). */
function collectTerms(incoming: number[]): void {
  let neededTerms = 0;
  for (const entry of stores.values()) neededTerms += entry.terms;
  for (const ref of incoming) if (!stores.has(ref)) neededTerms += encodedGraph(ref).termCount;
  const indexed = (entityIndex as unknown as { _id: number })._id;
  if (indexed <= 4 * neededTerms + 100_000) return;
  stores.clear();
  forgetKeptPlans();
  entityIndex = compactEntityIndex();
}

function encodedGraph(ref: number): EncodedGraph {
  const graph = encoded.get(ref);
  // The pool sends a graph with the first query that needs it here; a thread that lacks one is out of step.
  if (!graph) throw new Error(`the query thread was not sent graph ${ref}`);
  return graph;
}

function storeOf(ref: number): Store {
  const kept = stores.get(ref);
  if (kept) return kept.store;
  const graph = encodedGraph(ref);
  const store = new Store([], { entityIndex } as never);
  addEncodedGraph(store, graph);
  stores.set(ref, { store, terms: graph.termCount });
  return store;
}

/** This isolate's heap, sent with every reply: the process's own figures leave the threads' heaps out. */
function heap(): ThreadHeap {
  const statistics = getHeapStatistics();
  return { usedBytes: statistics.used_heap_size, committedBytes: statistics.total_heap_size };
}

async function answer(request: QueryRequest): Promise<ThreadMessage> {
  const started = performance.now();
  try {
    if (request.drop) drop(request.drop);
    if (request.load) for (const { ref, graph } of request.load) encoded.set(ref, graph);
    collectTerms(request.graphs);
    const builds = request.graphs.some((ref) => !stores.has(ref));
    if (builds && request.clockStarted) port.postMessage({ type: 'building', id: request.id } satisfies ThreadMessage);
    // The query's graphs as one dataset: stores over one entity index, their union the default graph.
    const dataset: QueryDataset = { stores: request.graphs.map(storeOf) };
    // Building a large graph's store is the data's cost, not the query's: the time limit starts now.
    // A query over kept stores was timed from its dispatch, and a message less wakes the API's loop.
    if (builds || !request.clockStarted) port.postMessage({ type: 'started', id: request.id } satisfies ThreadMessage);
    let path: string | undefined;
    // The stores here never change once built, so the evaluator may keep plans over them.
    const limits = { ...request.limits, stopped: () => Atomics.load(stop, 0) === request.id };
    const result = await evaluateQuery(dataset, request.text, limits, { baseIri: request.baseIri, parses, onPath: (chosen) => (path = chosen), keepPlans: true });
    const evaluated = performance.now();
    const evaluationMs = evaluated - started;
    if ('serializeAs' in request.answer) {
      const body = await serializeResult(result, request.answer.serializeAs);
      return { type: 'answer', id: request.id, heap: heap(), body, path, evaluationMs, serializationMs: performance.now() - evaluated };
    }
    return { type: 'answer', id: request.id, heap: heap(), result: plainResult(result), path, evaluationMs, serializationMs: 0 };
  } catch (error) {
    if (error instanceof DomainError) return { type: 'failure', id: request.id, heap: heap(), error: { domain: true, kind: error.kind, code: error.code, message: error.message, details: error.details } };
    return { type: 'failure', id: request.id, heap: heap(), error: { domain: false, message: (error as Error).message ?? String(error) } };
  }
}

const port = parentPort!;
port.on('message', (message: QueryRequest | DropRequest) => {
  if (message.type === 'drop') drop(message.graphs);
  else void answer(message).then((reply) => port.postMessage(reply));
});
// Comunica loads before the thread says it is ready, so no query pays for the load.
void sparqlEngine().then(() => port.postMessage({ type: 'ready' } satisfies ThreadMessage));
