import { Requirement, ScopeRule, scopesOf } from '../tenancy/access';
import type { JsonSchema } from '../../core/schema-validator';
import type { OperationContext } from './context';

/**
 * Who may call: `public` anyone, with no key (health, the document); `operator` the operator of the
 * installation, through the admin door only (the admin CLI), with no key either; otherwise a key
 * meeting the requirement.
 */
export type Access = { public: string } | { operator: string } | Requirement;

/**
 * - read: no transaction, safe to retry.
 * - write: one transaction (the whole operation commits or nothing does), once per idempotency key.
 * - external: reaches remote systems or Temporal and manages its own transactions, so none is held
 *   open while it waits.
 */
export type Effect = 'read' | 'write' | 'external';

/**
 * The request an operation reads, by part: `params` the identifiers in the path (snake_case, as the
 * path names them: project_id), `query` its options, `body` its JSON payload. The HTTP router
 * validates each part against these schemas and the OpenAPI document publishes them; what is
 * transport only (a non-JSON body, headers) stays on the route. Every operation that reads a
 * request takes it as these parts (RequestInput); invoke() checks them for every door but HTTP,
 * whose router already did.
 */
export interface InputSchema {
  params?: JsonSchema;
  query?: JsonSchema;
  body?: JsonSchema;
  /**
   * The body as the HTTP doors (the API and the console) take it, where that is narrower than
   * `body`: a field only a tool sends (SPEC 4.3: the HTTP draft save takes no basedOnVersionId).
   * The router validates and the OpenAPI document publishes this one; invoke() checks `body`.
   */
  httpBody?: JsonSchema;
}

/**
 * One answer an operation gives, by status: what it means and the JSON Schema of its body. The
 * OpenAPI document publishes these for the operation's routes (api/openapi.ts).
 */
export interface ResponseSpec {
  description: string;
  schema?: JsonSchema;
  /** The media type of `schema`; several, comma-separated, when the Accept header chooses among them. */
  contentType?: string;
  /** Other media types of the same answer, chosen by the Accept header; documented as text. */
  alternatives?: readonly string[];
  /** Response headers the answer carries, beyond the request-limit headers every keyed answer has. */
  headers?: Record<string, { description: string; schema: JsonSchema }>;
}

export interface Operation<I = any, O = any> {
  /** Stable name, the OpenAPI operationId of its route. */
  name: string;
  summary: string;
  access: Access;
  effect: Effect;
  /** The request it reads: the one declaration of its input's schema, for every door. */
  input?: InputSchema;
  /**
   * The answers it gives, by status (200, 201 and 202 where its Reply chooses, 204): the one
   * declaration of its output, which its routes publish. Errors are derived from the declaration
   * (access, input) and the route's transport, not listed here.
   */
  output?: Record<number, ResponseSpec>;
  /** Accepts an idempotency key (write operations only). */
  idempotent?: boolean;
  run(ctx: OperationContext, input: I): Promise<O>;
}

/** Identity helper that keeps the input and output types inferred. */
export const defineOperation = <I = Record<string, never>, O = unknown>(operation: Operation<I, O>): Operation<I, O> => operation;

export const isPublic = (access: Access): access is { public: string } => 'public' in access;
export const isOperator = (access: Access): access is { operator: string } => 'operator' in access;
/** Public and operator operations: no key asks. */
export const isKeyless = (access: Access): access is { public: string } | { operator: string } => isPublic(access) || isOperator(access);

export { scopesOf };
export type { Requirement, ScopeRule };

/**
 * The input of an operation reached by its identifiers, options and payload: `params` names what
 * it acts on (ids), `query` how (filters, paging, branch), `body` the payload. `projectId`, when
 * the operation names a project, is checked by invoke().
 */
export interface RequestInput<P = Record<string, string>, Q = Record<string, never>, B = undefined> {
  projectId?: string;
  params: P;
  query: Q;
  body: B;
  /** The media type of a payload that is not JSON (an RDF document, SPARQL text). */
  bodyType?: string;
  /** Protocol parameters as sent, for operations whose protocol defines them (SPARQL 1.1). */
  rawQuery?: Record<string, unknown>;
  /** Request headers the operation reads (lowercase names): Accept, Idempotency-Key, Stripe-Signature. */
  headers?: Record<string, string | undefined>;
  /** Content negotiation over the caller's Accept header: the first acceptable type, or false. */
  accepts?: (...types: string[]) => string | false;
}

/** What an operation answers when its status and headers are part of the outcome (201 vs 200, 202 while pending). */
export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  contentType?: string;
}
