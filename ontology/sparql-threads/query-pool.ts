import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { DomainError, restoredError, UnavailableError } from '../../core/errors';
import { logger } from '../../core/logger';
import { sparqlThreadHeap } from '../../observability/metrics';
import { codeExtension } from '../../core/paths';
import type { SparqlLimits } from '../sparql-engine';
import { callerGoneError, timeoutError } from '../sparql-evaluator/deadline';
import type { AnswerForm, DropRequest, GraphHandle, GraphLoad, QueryAnswer, QueryRequest, ThreadMessage } from './messages';
import { sparqlSettingsFromEnvironment, SparqlSettings } from './settings';

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
  /** Aborted when the caller has gone: a waiting query is dropped, a running one told to stop. */
  signal?: AbortSignal;
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
  /** When the watchdog replaces the thread (the limit and its grace); Infinity while the clock is stopped. */
  deadline: number;
  /** The job's graphs by the pool's numbers, in the job's order. */
  refs: number[];
}

interface QueryThread {
  index: number;
  worker: Worker;
  ready: Promise<void>;
  /** It has loaded its engine: what it is sent runs at once. */
  loaded: boolean;
  running?: Running;
  /** The id of a query its caller gave up on (shared with the thread, which reads it with its clock). */
  stop: Int32Array;
  /** Graphs this thread keeps, by the pool's number, with their triples, least recently used first. */
  resident: Map<number, number>;
  /** The sum of `resident`'s triples. */
  residentTriples: number;
}

const triplesOf = (handle: GraphHandle) => handle.graph.tripleCount;

export class SparqlQueryPool {
  private readonly threads: QueryThread[] = [];
  private readonly waiting: Pending[] = [];
  private readonly runningByWorkspace = new Map<string, number>();
  private running = 0;
  private nextId = 1;
  private closed = false;
  /** The pool's number of each graph version some thread keeps (threads know graphs by number). */
  private readonly refs = new Map<string, number>();
  private readonly versionsByRef = new Map<number, string>();
  private nextRef = 1;
  /**
   * One timer for every running query's deadline, instead of a timer set and cleared per query
   * (together about a tenth of the API thread's work for a cheap query): armed for the earliest
   * deadline, it replaces the threads past theirs and arms itself again for the next. It keeps
   * the process alive only while a query runs.
   */
  private watchdog?: NodeJS.Timeout;
  private watchdogAt = Number.POSITIVE_INFINITY;

  constructor(private readonly settings: SparqlSettings) {
    for (let index = 0; index < settings.threads; index++) this.threads.push(this.spawn(index));
  }

  /** Runs a query in a thread; rejects with the query's own error, a timeout, or QueryCapacityError. */
  run(job: QueryJob): Promise<QueryAnswer> {
    if (this.closed) return Promise.reject(new UnavailableError('sparql_unavailable', 'The SPARQL engine is shutting down; retry shortly.', { retryAfterSeconds: 1 }));
    if (job.signal?.aborted) return Promise.reject(callerGoneError());
    return new Promise<QueryAnswer>((resolve, reject) => {
      const pending: Pending = { job, resolve, reject };
      if (job.signal) this.stopWhenAborted(pending, job.signal);
      // Nothing waits and a thread is free: straight to it, with no queue timer to set and clear.
      const thread = this.waiting.length === 0 && (this.runningByWorkspace.get(job.workspaceId) ?? 0) < this.settings.workspaceConcurrency ? this.threadFor(job) : undefined;
      if (thread) return this.dispatch(thread, pending);
      pending.queueTimer = setTimeout(() => {
        const at = this.waiting.indexOf(pending);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        // Numbers given while it waited, for graphs no thread came to keep, go with it.
        this.forgetUnkept(job.graphs.flatMap((handle) => this.refs.get(handle.version) ?? []));
        reject(this.capacityError(job.workspaceId));
      }, this.settings.queueMs);
      this.waiting.push(pending);
      this.pump();
    });
  }

  /**
   * The caller went away: a waiting query leaves the queue; a running one is told to stop through
   * its thread's shared flag, read with the evaluator's clock, so its thread and stores are kept.
   */
  private stopWhenAborted(pending: Pending, signal: AbortSignal): void {
    const stop = () => {
      const at = this.waiting.indexOf(pending);
      if (at >= 0) {
        this.waiting.splice(at, 1);
        clearTimeout(pending.queueTimer);
        this.forgetUnkept(pending.job.graphs.flatMap((handle) => this.refs.get(handle.version) ?? []));
        return pending.reject(callerGoneError());
      }
      const thread = this.threads.find((each) => each.running?.job === pending.job);
      if (thread) Atomics.store(thread.stop, 0, thread.running!.id);
    };
    signal.addEventListener('abort', stop, { once: true });
    const { resolve, reject } = pending;
    pending.resolve = (answer) => (signal.removeEventListener('abort', stop), resolve(answer));
    pending.reject = (error) => (signal.removeEventListener('abort', stop), reject(error));
  }

  /** Graphs kept per thread (tests and the bench read it). */
  residency(): Array<{ thread: number; busy: boolean; triples: number; versions: string[] }> {
    return this.threads.map((thread) => ({ thread: thread.index, busy: Boolean(thread.running), triples: thread.residentTriples, versions: [...thread.resident.keys()].map((ref) => this.versionsByRef.get(ref)!) }));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.watchdog);
    for (const pending of this.waiting.splice(0)) {
      clearTimeout(pending.queueTimer);
      pending.reject(new UnavailableError('sparql_unavailable', 'The SPARQL engine is shutting down; retry shortly.', { retryAfterSeconds: 1 }));
    }
    await Promise.all(this.threads.map((thread) => thread.worker.terminate()));
  }

  private spawn(index: number): QueryThread {
    youngGenerationFrom(this.settings.threadSemiSpaceMb);
    const stop = new Int32Array(new SharedArrayBuffer(4));
    // From the sources a thread starts through an entry that registers tsx; built, it runs the thread's module.
    const worker = new Worker(path.join(__dirname, codeExtension === '.ts' ? 'thread-entry.cjs' : 'query-thread.js'), {
      workerData: { stop },
      // No node flags of the process, but its CPU profiling: with --cpu-prof each query thread writes its own profile.
      execArgv: process.execArgv.filter((arg) => arg.startsWith('--cpu-prof')),
      resourceLimits: { maxOldGenerationSizeMb: this.settings.threadMemoryMb, maxYoungGenerationSizeMb: 3 * this.settings.threadSemiSpaceMb },
    });
    // The pool must not keep a finished process alive.
    worker.unref();
    let markReady!: () => void;
    const thread: QueryThread = { index, worker, ready: new Promise<void>((resolve) => (markReady = resolve)), loaded: false, stop, resident: new Map(), residentTriples: 0 };
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
    // Its heap went with it; the new thread's shows once it answers.
    for (const kind of ['used', 'committed']) sparqlThreadHeap.remove({ thread: String(thread.index), kind });
    this.forgetUnkept([...thread.resident.keys()]);
    this.pump();
  }

  private settle(thread: QueryThread, message: Exclude<ThreadMessage, { type: 'ready' } | { type: 'started' } | { type: 'building' }>): void {
    // A replaced thread's late reply says nothing of the thread now at its index.
    if (message.heap && this.threads[thread.index] === thread) {
      const labels = { thread: String(thread.index) };
      sparqlThreadHeap.set({ ...labels, kind: 'used' }, message.heap.usedBytes);
      sparqlThreadHeap.set({ ...labels, kind: 'committed' }, message.heap.committedBytes);
    }
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
    // The watchdog finds no query on this thread; it keeps the process alive only while one runs.
    if (--this.running === 0) this.watchdog?.unref();
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

  /** The pool's number of a graph version, given on first use. */
  private refOf(version: string): number {
    let ref = this.refs.get(version);
    if (ref === undefined) {
      ref = this.nextRef++;
      this.refs.set(version, ref);
      this.versionsByRef.set(ref, version);
    }
    return ref;
  }

  /** Forgets the numbers of graphs no thread keeps any more (a new snapshot is a new version). */
  private forgetUnkept(refs: Iterable<number>): void {
    for (const ref of refs) {
      if (this.threads.some((thread) => thread.resident.has(ref))) continue;
      this.refs.delete(this.versionsByRef.get(ref)!);
      this.versionsByRef.delete(ref);
    }
  }

  /**
   * The idle thread for a job: one that keeps all its graphs; otherwise none while a busy thread
   * keeps them all and loading them elsewhere would pass the budget; otherwise the idle thread
   * that keeps most of them (the emptiest of those that keep as many).
   */
  private threadFor(job: QueryJob): QueryThread | undefined {
    const refs = job.graphs.map((handle) => this.refOf(handle.version));
    const keptIn = (thread: QueryThread) => {
      let kept = 0;
      for (let at = 0; at < refs.length; at++) if (thread.resident.has(refs[at])) kept += triplesOf(job.graphs[at]);
      return kept;
    };
    let needed = 0;
    for (const handle of job.graphs) needed += triplesOf(handle);
    let best: QueryThread | undefined;
    let bestKept = -1;
    for (const thread of this.threads) {
      if (thread.running) continue;
      const kept = keptIn(thread);
      if (kept > bestKept || (kept === bestKept && thread.residentTriples < best!.residentTriples)) {
        best = thread;
        bestKept = kept;
      }
    }
    if (!best || bestKept === needed) return best;
    const holder = needed > 0 && this.threads.some((thread) => thread.running && keptIn(thread) === needed);
    if (holder && this.keptTriples() + needed - bestKept > this.settings.keptTriples) return undefined;
    return best;
  }

  private keptTriples(): number {
    let total = 0;
    for (const thread of this.threads) total += thread.residentTriples;
    return total;
  }

  private dispatch(thread: QueryThread, pending: Pending): void {
    const { job } = pending;
    const refs = job.graphs.map((handle) => this.refOf(handle.version));
    const running: Running = { ...pending, id: this.nextId++, startedAt: Date.now(), deadline: Number.POSITIVE_INFINITY, refs };
    thread.running = running;
    if (this.running++ === 0) this.watchdog?.ref();
    this.runningByWorkspace.set(job.workspaceId, (this.runningByWorkspace.get(job.workspaceId) ?? 0) + 1);
    const drop = this.makeRoom(thread, job.graphs, refs);
    // Encoded graphs travel once per thread: a resident graph is named by its number alone.
    let load: GraphLoad[] | undefined;
    for (let at = 0; at < refs.length; at++) {
      const ref = refs[at];
      if (thread.resident.has(ref)) thread.resident.delete(ref);
      else {
        (load ??= []).push({ ref, graph: job.graphs[at].graph });
        thread.residentTriples += triplesOf(job.graphs[at]);
      }
      // Most recently used last.
      thread.resident.set(ref, triplesOf(job.graphs[at]));
    }
    // A loaded thread that was sent every graph before has their stores (almost always): the clock
    // starts now. A thread still loading its engine may not read the query for seconds.
    const clockStarted = thread.loaded && !load;
    const request: QueryRequest = { type: 'query', id: running.id, text: job.text, limits: job.limits, graphs: refs, answer: job.answer, clockStarted };
    if (job.baseIri !== undefined) request.baseIri = job.baseIri;
    if (load) request.load = load;
    if (drop.length) request.drop = drop;
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
    // Started again when a thread had to build stores after all: the limit counts from the build's end.
    running.startedAt = Date.now();
    running.deadline = running.startedAt + running.job.limits.timeoutMs + TERMINATION_GRACE_MS;
    if (running.deadline < this.watchdogAt) this.armWatchdog(running.deadline);
  }

  /** A thread builds stores after all (a fresh entity index): the build is the data's cost, not the query's. */
  private stopClock(thread: QueryThread, id: number): void {
    if (thread.running?.id === id) thread.running.deadline = Number.POSITIVE_INFINITY;
  }

  private armWatchdog(at: number): void {
    clearTimeout(this.watchdog);
    this.watchdogAt = at;
    this.watchdog = setTimeout(() => this.replaceOverdue(), Math.max(0, at - Date.now()));
    if (this.running === 0) this.watchdog.unref();
  }

  /** Replaces every thread whose query passed its deadline, and arms the watchdog for the next deadline. */
  private replaceOverdue(): void {
    this.watchdog = undefined;
    this.watchdogAt = Number.POSITIVE_INFINITY;
    if (this.closed) return;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const thread of [...this.threads]) {
      const running = thread.running;
      if (!running) continue;
      if (running.deadline > now) {
        next = Math.min(next, running.deadline);
        continue;
      }
      const { job } = running;
      logger.warn({ thread: thread.index, workspaceId: job.workspaceId, ms: now - running.startedAt }, 'a SPARQL query passed its time limit; its thread is replaced');
      this.replace(thread, timeoutError(job.limits.timeoutMs));
    }
    if (next < this.watchdogAt) this.armWatchdog(next);
  }

  /**
   * Keeps the threads' stores within the budget once `graphs` are loaded into `thread`: drops the
   * least recently used graphs that no running query uses, this thread's first. Returns what this
   * thread drops before the query; other idle threads are told at once.
   */
  private makeRoom(thread: QueryThread, graphs: GraphHandle[], refs: number[]): number[] {
    let incoming = 0;
    for (let at = 0; at < refs.length; at++) if (!thread.resident.has(refs[at])) incoming += triplesOf(graphs[at]);
    let total = this.keptTriples() + incoming;
    if (total <= this.settings.keptTriples) return [];
    const wanted = new Set(refs);
    const dropped = new Map<QueryThread, number[]>();
    for (const candidate of [thread, ...this.threads.filter((t) => t !== thread)]) {
      for (const [ref, triples] of candidate.resident) {
        if (total <= this.settings.keptTriples) break;
        if (candidate === thread ? wanted.has(ref) : candidate.running) continue;
        candidate.resident.delete(ref);
        candidate.residentTriples -= triples;
        total -= triples;
        dropped.set(candidate, [...(dropped.get(candidate) ?? []), ref]);
      }
    }
    for (const [other, refsDropped] of dropped) if (other !== thread) other.worker.postMessage({ type: 'drop', graphs: refsDropped } satisfies DropRequest);
    // A graph dropped elsewhere that this query loads here keeps its number.
    this.forgetUnkept([...dropped.values()].flat().filter((ref) => !wanted.has(ref)));
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

/**
 * Query threads start with a semi-space of `mb` instead of V8's 1 MB, which it grows only when
 * many young objects survive: a query's garbage dies young, so it stayed at 1 to 2 MB, and with a
 * million triples in the thread's old generation each scavenge cost about 2 ms (its parallel tasks
 * on V8's helper threads too). A query allocating tens of megabytes paid one every 2 MB: at 1M,
 * half the thread's time in the aggregate queries, and CPU the API's loop and the client wanted.
 * With 16 MB the mix in the thread went from 2.08 to 1.60 ms (agg-rating-by-type 90 to 69,
 * distinct-vendors 243 to 174), for about 30 MB more per thread. V8 reads the flag when an isolate
 * is made; the API's own isolate exists already and keeps its size. The flag is the process's (set
 * again before each thread, as the spawning pool's settings say).
 */
function youngGenerationFrom(mb: number): void {
  setFlagsFromString(`--min-semi-space-size=${mb}`);
}

/**
 * One runtime's query threads: its pool, started on first use (the API starts it when it listens),
 * so a runtime that never queries starts none. The runtime builds it (runtimeState:
 * ServiceDependencies.sparqlQueries) and closes it with its state; queries reach it through their
 * context (ctx.deps.sparqlQueries).
 */
export class SparqlQueryThreads {
  private started?: SparqlQueryPool;

  /**
   * The runtime's SPARQL settings (WEFT_SPARQL_*), read once when it is built; every query of the
   * runtime reads them here (ctx.deps.sparqlQueries.settings). A test changes them for its own
   * runtimes; a pool keeps the ones it was started with.
   */
  constructor(readonly settings: SparqlSettings = sparqlSettingsFromEnvironment()) {}

  /** The pool, started now if it is not yet. */
  pool(): SparqlQueryPool {
    return (this.started ??= new SparqlQueryPool({ ...this.settings }));
  }

  /** Whether the pool has been started (and not closed since). */
  get running(): boolean {
    return this.started !== undefined;
  }

  /** Stops the threads; a later query starts a new pool. Safe to call any number of times. */
  async close(): Promise<void> {
    const closing = this.started;
    this.started = undefined;
    await closing?.close();
  }
}
