import type { SparqlLimits } from '../sparql-engine';
import type { EncodedGraph } from './encoded-graph';

// What the API process and a query thread say to each other. Graphs travel as shared memory, so a
// query message is small however large its dataset is.

/** One graph of a query's dataset: `version` names its content exactly (a new version is new content). */
export interface GraphHandle {
  version: string;
  graph: EncodedGraph;
}

/**
 * The pool numbers each graph version it sends to threads: a query names its graphs by number (a
 * version is a long string, and cloning nine of them into every message was most of a query
 * message's cost), and carries an encoded graph only to a thread that does not hold it yet.
 */
export interface GraphLoad {
  ref: number;
  graph: EncodedGraph;
}

/** How the answer comes back: serialized for the protocol, or as terms for Weft's own checks (published queries). */
export type AnswerForm = { serializeAs: string } | { terms: true };

export interface QueryRequest {
  type: 'query';
  id: number;
  text: string;
  baseIri?: string;
  limits: SparqlLimits;
  /** The dataset's graphs by number; the thread holds each, or it comes in `load`. */
  graphs: number[];
  /** Graphs this thread is sent now (it keeps them until told to drop them). */
  load?: GraphLoad[];
  /** Graphs the thread drops before it runs this query: the pool keeps the process within its memory budget. */
  drop?: number[];
  answer: AnswerForm;
  /**
   * The pool started the query's clock on dispatch (the thread was sent every graph before). The
   * thread says `started` only when it builds a store all the same (a fresh entity index rebuilds
   * them), which restarts the clock; otherwise the answer is the one message back.
   */
  clockStarted: boolean;
}

/** Graphs an idle thread drops at once, to make room in another thread. */
export interface DropRequest {
  type: 'drop';
  graphs: number[];
}

/** An RDF term as data (structured clone keeps no classes). */
export interface PlainTerm {
  termType: 'NamedNode' | 'BlankNode' | 'Literal' | 'DefaultGraph' | 'Variable';
  value: string;
  language?: string;
  datatype?: string;
}

export type PlainResult =
  | { kind: 'bindings'; variables: string[]; rows: Array<Record<string, PlainTerm>> }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'quads'; quads: Array<[PlainTerm, PlainTerm, PlainTerm]> };

/** The thread's V8 heap as the query left it, in bytes: used, and committed (what it holds of the process's memory). */
export interface ThreadHeap {
  usedBytes: number;
  committedBytes: number;
}

export interface QueryAnswer {
  type: 'answer';
  id: number;
  /** The answering thread's heap (absent where PostgreSQL answered, as services/ontology/sparql.ts builds the same answer). */
  heap?: ThreadHeap;
  /** The serialized result, or the result as terms (see AnswerForm). */
  body?: string;
  result?: PlainResult;
  /** Which evaluator answered (Weft's own fast path or Comunica), for logs and the bench. */
  path?: string;
  /** From the thread's start on the query (its stores found or built) to the result. */
  evaluationMs: number;
  /** Writing the result in the answer's media type (0 for answers sent as terms). */
  serializationMs: number;
}

export interface QueryFailure {
  type: 'failure';
  id: number;
  heap: ThreadHeap;
  error: { domain: boolean; kind?: string; code?: string; message: string; details?: Record<string, unknown> };
}

export interface ThreadReady {
  type: 'ready';
}

/** The thread holds the query's stores and starts evaluating: the query's time limit counts from here. */
export interface QueryStarted {
  type: 'started';
  id: number;
}

/** The thread builds stores for a query whose clock the pool started on dispatch: the clock stops until `started`. */
export interface QueryBuilding {
  type: 'building';
  id: number;
}

export type ThreadMessage = QueryAnswer | QueryFailure | ThreadReady | QueryStarted | QueryBuilding;
