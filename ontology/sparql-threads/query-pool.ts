import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { DomainError, InputError, restoredError, UnavailableError } from '../../core/errors';
import { logger } from '../../core/logger';
import type { SparqlLimits } from '../sparql-engine';
import type { AnswerForm, DropRequest, GraphHandle, QueryAnswer, QueryRequest, ThreadMessage } from './messages';
import { sparqlSettings, SparqlSettings } from './settings';

// SPARQL evaluation off the API's event loop. Queries run in a pool of worker threads, one query
// per thread at a time; a query past its time limit is stopped by terminating its thread, whatever
// the query's shape, and a fresh thread takes its place. Each workspace runs at most a configured
// number of queries at once; more wait briefly for a slot, then get a 429 with Retry-After.
//
// Graphs are kept in the threads' n3 stores. An n3 store costs about a kilobyte per triple, so a
// large graph is kept by one thread, not all: a query goes to an idle thread that already holds
// its graphs, waits for a busy one that does when loading them elsewhere would pass the memory
// budget, and otherwise loads them where the least recently used graphs make room.

/** Past the query's own time limit, what the thread is given to report its own timeout first. */
const TERMINATION_GRACE_MS = 250;

export interface QueryJob {
  workspaceId: string;
  text: string;
  baseIri?: string;
  limits: SparqlLimits;
  graphs: GraphHandle[];
  answer: AnswerForm;
}

/** Raised when a workspace's queries, or all threads, are busy past the queue wait: a 429 with Retry-After. */
export class QueryCapacityError extends DomainError {
  readonly kind = 'rate_limited';
}

interface Pending {
  job: QueryJob;
  resolve(answer: QueryAnswer): void;
  reject(error: unknown): void;
  queueTimer?: NodeJS.Timeout;
}

interface Running extends Pending {
  id: number;
  startedAt: number;
  timer?: NodeJS.Timeout;
}

interface QueryThread {
  index: number;
  worker: Worker;
  ready: Promise<void>;
  /** It has loaded its engine: what it is sent runs at once. */
  loaded: boolean;
  running?: Running;
  /** Graph versions this thread keeps, with their triples, least recently used first. */
  resident: Map<string, number>;
}

const triplesOf = (handle: GraphHandle) => handle.graph.tripleCount;

export class SparqlQueryPool {
  private readonly threads: QueryThread[] = [];
  private readonly waiting: Pending[] = [];
  private readonly runningByWorkspace = new Map<string, number>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly settings: SparqlSettings = sparqlSettings()) {
    for (let index = 0; index < settings.threads; index++) this.threads.push(this.spawn(index));
  }

  /** Runs a query in a thread; rejects with the query's own error, a timeout, or QueryCapacityError. */
  run(job: QueryJob): Promise<QueryAnswer> {
    if (this.closed) return Promise.reject(new UnavailableError('sparql_unavailable', 'The SPARQL engine is shutting down; retry shortly.', { retryAfterSeconds: 1 }));
    return new Promise<QueryAnswer>((resolve, reject) => {
      const pending: Pending = { job, resolve, reject };
      // Nothing waits and a thread is free: straight to it, with no queue timer to set and clear.
      const thread = this.waiting.length === 0 && (this.runningByWorkspace.get(job.workspaceId) ?? 0) < this.settings.workspaceConcurrency ? this.threadFor(job) : undefined;
      if (thread) return this.dispatch(thread, pending);
      pending.queueTimer = setTimeout(() => {
        const at = this.waiting.indexOf(pending);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        reject(this.capacityError(job.workspaceId));
      }, this.settings.queueMs);
      this.waiting.push(pending);
      this.pump();
    });
  }

  /** Graphs kept per thread (tests and the bench read it). */
  residency(): Array<{ thread: number; busy: boolean; triples: number; versions: string[] }> {
    return this.threads.map((thread) => ({ thread: thread.index, busy: Boolean(thread.running), triples: sum(thread.resident.values()), versions: [...thread.resident.keys()] }));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.waiting.splice(0)) {
      clearTimeout(pending.queueTimer);
      pending.reject(new UnavailableError('sparql_unavailable', 'The SPARQL engine is shutting down; retry shortly.', { retryAfterSeconds: 1 }));
    }
    await Promise.all(this.threads.map((thread) => thread.worker.terminate()));
  }

  private spawn(index: number): QueryThread {
    youngGenerationFrom(this.settings.threadSemiSpaceMb);
    const worker = new Worker(path.join(__dirname, 'thread-entry.cjs'), {
      // No node flags of the process, but its CPU profiling: with --cpu-prof each query thread writes its own profile.
      execArgv: process.execArgv.filter((arg) => arg.startsWith('--cpu-prof')),
      resourceLimits: { maxOldGenerationSizeMb: this.settings.threadMemoryMb, maxYoungGenerationSizeMb: 3 * this.settings.threadSemiSpaceMb },
    });
    // The pool must not keep a finished process alive.
    worker.unref();
    let markReady!: () => void;
    const thread: QueryThread = { index, worker, ready: new Promise<void>((resolve) => (markReady = resolve)), loaded: false, resident: new Map() };
    worker.on('message', (message: ThreadMessage) => {
      if (message.type === 'ready') {
        thread.loaded = true;
        return markReady();
      }
      if (message.type === 'started') return this.startClock(thread, message.id);
      if (message.type === 'building') return this.stopClock(thread, message.id);
      this.settle(thread, message);
    });
    worker.on('error', (error) => {
      logger.error({ err: error, thread: index }, 'a SPARQL query thread failed');
      this.replace(thread, new UnavailableError('sparql_engine_failed', `The query stopped its engine (${error.message}); if it ran out of memory, narrow it. Retry shortly.`, { retryAfterSeconds: 1 }));
    });
    worker.on('exit', (code) => {
      if (this.closed || this.threads[index] !== thread) return;
      logger.error({ code, thread: index }, 'a SPARQL query thread exited');
      this.replace(thread, new UnavailableError('sparql_engine_failed', 'The query engine stopped; retry shortly.', { retryAfterSeconds: 1 }));
    });
    return thread;
  }

  /** Fails the thread's query with `error`, terminates it and starts another in its place. */
  private replace(thread: QueryThread, error: unknown): void {
    if (this.threads[thread.index] !== thread) return;
    const running = thread.running;
    thread.running = undefined;
    if (running) this.finish(running, () => running.reject(error));
    this.threads[thread.index] = this.closed ? thread : this.spawn(thread.index);
    void thread.worker.terminate();
    this.pump();
  }

  private settle(thread: QueryThread, message: Exclude<ThreadMessage, { type: 'ready' } | { type: 'started' } | { type: 'building' }>): void {
    const running = thread.running;
    if (!running || running.id !== message.id) return;
    thread.running = undefined;
    this.finish(running, () => {
      if (message.type === 'answer') return running.resolve(message);
      const { error } = message;
      running.reject(error.domain ? restoredError({ kind: error.kind!, code: error.code!, message: error.message, details: error.details }) : new Error(error.message));
    });
    this.pump();
  }

  private finish(running: Running, settle: () => void): void {
    clearTimeout(running.timer);
    const count = (this.runningByWorkspace.get(running.job.workspaceId) ?? 1) - 1;
    if (count > 0) this.runningByWorkspace.set(running.job.workspaceId, count);
    else this.runningByWorkspace.delete(running.job.workspaceId);
    settle();
  }

  /** Starts every waiting query that has a workspace slot and a thread, in arrival order. */
  private pump(): void {
    for (let at = 0; at < this.waiting.length; ) {
      const pending = this.waiting[at];
      const thread = (this.runningByWorkspace.get(pending.job.workspaceId) ?? 0) < this.settings.workspaceConcurrency ? this.threadFor(pending.job) : undefined;
      if (!thread) {
        at++;
        continue;
      }
      this.waiting.splice(at, 1);
      clearTimeout(pending.queueTimer);
      this.dispatch(thread, pending);
    }
  }

  /**
   * The idle thread for a job: one that keeps all its graphs; otherwise none while a busy thread
   * keeps them all and loading them elsewhere would pass the budget; otherwise the idle thread
   * that keeps most of them.
   */
  private threadFor(job: QueryJob): QueryThread | undefined {
    const kept = (thread: QueryThread) => sum(job.graphs.filter((handle) => thread.resident.has(handle.version)).map(triplesOf));
    const needed = sum(job.graphs.map(triplesOf));
    const idle = this.threads.filter((thread) => !thread.running);
    const best = idle.sort((a, b) => kept(b) - kept(a) || sum(a.resident.values()) - sum(b.resident.values()))[0];
    if (!best || kept(best) === needed) return best;
    const holder = this.threads.some((thread) => thread.running && kept(thread) === needed && needed > 0);
    const total = sum(this.threads.map((thread) => sum(thread.resident.values())));
    if (holder && total + needed - kept(best) > this.settings.keptTriples) return undefined;
    return best;
  }

  private dispatch(thread: QueryThread, pending: Pending): void {
    const { job } = pending;
    const running: Running = { ...pending, id: this.nextId++, startedAt: Date.now() };
    thread.running = running;
    this.runningByWorkspace.set(job.workspaceId, (this.runningByWorkspace.get(job.workspaceId) ?? 0) + 1);
    const drop = this.makeRoom(thread, job.graphs);
    // Encoded graphs travel once per thread: a resident graph is named by its version alone.
    const graphs = job.graphs.map((handle) => (thread.resident.has(handle.version) ? { version: handle.version } : handle));
    // A loaded thread that was sent every graph before has their stores (almost always): the clock
    // starts now. A thread still loading its engine may not read the query for seconds.
    const clockStarted = thread.loaded && graphs.every((graph) => !('graph' in graph));
    for (const handle of job.graphs) {
      // Most recently used last.
      thread.resident.delete(handle.version);
      thread.resident.set(handle.version, triplesOf(handle));
    }
    const request: QueryRequest = { type: 'query', id: running.id, text: job.text, baseIri: job.baseIri, limits: job.limits, graphs, drop, answer: job.answer, clockStarted };
    thread.worker.postMessage(request);
    if (clockStarted) this.startClock(thread, running.id);
  }

  /**
   * The limit counts from when the thread starts evaluating: not while a new thread loads its
   * modules, nor while it builds the stores of graphs it did not hold (a million triples take
   * seconds, and a query stopped then would leave the next one to build them again).
   */
  private startClock(thread: QueryThread, id: number): void {
    const running = thread.running;
    if (!running || running.id !== id) return;
    const { job } = running;
    // Started again when a thread had to build stores after all: the limit counts from the build's end.
    clearTimeout(running.timer);
    running.startedAt = Date.now();
    running.timer = setTimeout(() => {
      if (thread.running !== running) return;
      logger.warn({ thread: thread.index, workspaceId: job.workspaceId, ms: Date.now() - running.startedAt }, 'a SPARQL query passed its time limit; its thread is replaced');
      this.replace(thread, new InputError('query_timeout', `The query ran longer than ${job.limits.timeoutMs / 1000} seconds and was stopped; narrow it or add a LIMIT.`));
    }, job.limits.timeoutMs + TERMINATION_GRACE_MS);
  }

  /** A thread builds stores after all (a fresh entity index): the build is the data's cost, not the query's. */
  private stopClock(thread: QueryThread, id: number): void {
    if (thread.running?.id === id) clearTimeout(thread.running.timer);
  }

  /**
   * Keeps the threads' stores within the budget once `graphs` are loaded into `thread`: drops the
   * least recently used graphs that no running query uses, this thread's first. Returns what this
   * thread drops before the query; other idle threads are told at once.
   */
  private makeRoom(thread: QueryThread, graphs: GraphHandle[]): string[] {
    const wanted = new Set(graphs.map((handle) => handle.version));
    const incoming = sum(graphs.filter((handle) => !thread.resident.has(handle.version)).map(triplesOf));
    let total = sum(this.threads.map((t) => sum(t.resident.values()))) + incoming;
    const dropped = new Map<QueryThread, string[]>();
    for (const candidate of [thread, ...this.threads.filter((t) => t !== thread)]) {
      for (const [version, triples] of candidate.resident) {
        if (total <= this.settings.keptTriples) break;
        if (candidate === thread ? wanted.has(version) : candidate.running) continue;
        candidate.resident.delete(version);
        total -= triples;
        dropped.set(candidate, [...(dropped.get(candidate) ?? []), version]);
      }
    }
    for (const [other, versions] of dropped) if (other !== thread) other.worker.postMessage({ type: 'drop', versions } satisfies DropRequest);
    return dropped.get(thread) ?? [];
  }

  private capacityError(workspaceId: string): QueryCapacityError {
    const ends = this.threads.filter((thread) => thread.running).map((thread) => thread.running!.startedAt + thread.running!.job.limits.timeoutMs);
    const ownEnds = this.threads.filter((thread) => thread.running?.job.workspaceId === workspaceId).map((thread) => thread.running!.startedAt + thread.running!.job.limits.timeoutMs);
    const soonest = Math.min(...(ownEnds.length ? ownEnds : ends));
    const retryAfterSeconds = Math.max(1, Math.ceil((Number.isFinite(soonest) ? soonest - Date.now() : 1000) / 1000));
    const own = ownEnds.length >= this.settings.workspaceConcurrency;
    return new QueryCapacityError(
      own ? 'sparql_concurrency_limit' : 'sparql_busy',
      own
        ? `This workspace already runs ${this.settings.workspaceConcurrency} SPARQL queries at once; retry after ${retryAfterSeconds} seconds.`
        : `Every SPARQL query thread is busy; retry after ${retryAfterSeconds} seconds.`,
      { retryAfterSeconds, limit: this.settings.workspaceConcurrency },
    );
  }
}

let semiSpaceMb: number | undefined;

/**
 * Query threads start with a semi-space of `mb` instead of V8's 1 MB, which it grows only when
 * many young objects survive: a query's garbage dies young, so it stayed at 1 to 2 MB, and with a
 * million triples in the thread's old generation each scavenge cost about 2 ms (its parallel tasks
 * on V8's helper threads too). A query allocating tens of megabytes paid one every 2 MB: at 1M,
 * half the thread's time in the aggregate queries, and CPU the API's loop and the client wanted.
 * With 16 MB the mix in the thread went from 2.08 to 1.60 ms (agg-rating-by-type 90 to 69,
 * distinct-vendors 243 to 174), for about 30 MB more per thread. V8 reads the flag when an isolate
 * is made; the API's own isolate exists already and keeps its size.
 */
function youngGenerationFrom(mb: number): void {
  if (semiSpaceMb === mb) return;
  setFlagsFromString(`--min-semi-space-size=${mb}`);
  semiSpaceMb = mb;
}

function sum(values: Iterable<number>): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}

let pool: SparqlQueryPool | undefined;

/** The process's pool, started on first use (the API starts it when it listens). */
export function sparqlQueryPool(): SparqlQueryPool {
  pool ??= new SparqlQueryPool();
  return pool;
}

export async function closeSparqlQueryPool(): Promise<void> {
  const closing = pool;
  pool = undefined;
  await closing?.close();
}
