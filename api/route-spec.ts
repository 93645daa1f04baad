import type Koa from 'koa';
import { writesJson } from '../core/json-text';
import type { JsonSchema } from '../core/schema-validator';
import type { InputSchema, Operation, Reply, RequestInput, ResponseSpec } from '../services/operations/operation';

/** An HTTP request as a route's input mapping sees it: validated parts, plus the Koa context for headers. */
export interface HttpRequest<P = any, Q = any, B = any> {
  params: P;
  query: Q;
  body: B;
  /** The media type of a raw body (routes with `rawBody`), without parameters. */
  bodyType?: string;
  requestId: string;
  koa: Koa.Context;
}

export interface HandlerResult {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Content type for non-JSON answers (docs page, SPARQL results). */
  contentType?: string;
}

/** A request header the handler reads and enforces, documented as a header parameter. */
export interface HeaderSpec {
  name: string;
  required?: boolean;
  description: string;
  schema: JsonSchema;
}

/**
 * An HTTP route is transport only: a path and the operation it invokes. Access, the request's
 * schemas (params, query, JSON body), the answer's status and the answers it documents are the
 * operation’s (services/<domain>/operations.ts): a route never states a scope, a request schema
 * or a status, and states answers only where they are HTTP's alone (responses).
 * The router authenticates the key, validates the request against the operation's schemas, hands
 * it the parts and sends its Reply.
 */
export interface RouteSpec<I = any, O = any> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Koa-style path: /api/v1/projects/:project_id */
  path: string;
  operation: Operation<I, O>;
  /** The route's own summary; the operation's by default. */
  summary?: string;
  description?: string;
  tag: string;
  /**
   * A body that is not JSON (an RDF document, a SPARQL query): read as text of one of these media
   * types, up to maxBytes, and handed to the input mapping as `body` with its media type in `bodyType`.
   */
  /** The operation is given a signal that aborts when the client closes the connection before the answer (long reads stop then). */
  stopsWhenClientGoes?: boolean;
  rawBody?: { mediaTypes: readonly string[]; maxBytes: number; description: string; optional?: boolean; refusals?: Record<string, { code: string; message: string }> };
  /** Largest JSON body this route reads, sized from the operation's bounds (default 1 MB). */
  maxJsonBytes?: number;
  /** Other request headers the input mapping reads (the router validates none of them). */
  headers?: readonly HeaderSpec[];
  /**
   * The operation's input from the request, for an operation that declares none (a static page).
   * By default the validated parts (requestInput).
   */
  input?(request: HttpRequest): I;
  /**
   * Answers that are HTTP's alone (a static page, the document, the health probes), or a route
   * whose answers differ from the operation's: these replace the operation's `output`.
   */
  responses?: Record<number, ResponseSpec>;
  /** Extra error statuses this route can answer beyond those derived from its declaration. */
  errors?: Array<{ status: number; description?: string }>;
  /** Left out of the OpenAPI document (health probes, the document itself). */
  internal?: boolean;
}

/** Identity helper that keeps a route's types inferred in its file. */
export const defineRoute = <I, O>(spec: RouteSpec<I, O>): RouteSpec<I, O> => spec;

/** The answers a route documents: its own where it states them, else its operation's. */
export const responsesOf = (route: RouteSpec): Record<number, ResponseSpec> => route.responses ?? route.operation.output ?? {};

/** The route's OpenAPI operationId: its operation's name. */
export const operationIdOf = (route: RouteSpec): string => route.operation.name;

/**
 * The request schemas of the route: its operation's declared input (params, query, JSON body),
 * with the body as HTTP takes it.
 */
export function inputOf(route: RouteSpec): InputSchema {
  const declared = route.operation.input ?? {};
  return declared.httpBody ? { ...declared, body: declared.httpBody } : declared;
}

/**
 * The validated request parts as an operation's input (requestInput). A class: an object literal
 * with accessors cost about 1.5 µs to create, on every request of most routes. The query as sent
 * and the headers are copied when first read: few operations read them (SPARQL, webhooks), and
 * copying every request's headers showed in profiles. Its own enumerable fields are the parts
 * alone (invoke() fingerprints an idempotent call from them and the query as sent).
 */
class HttpRequestInput implements RequestInput<any, any, any> {
  declare projectId?: string;
  params: any;
  query: any;
  body: any;
  bodyType: string | undefined;
  /** An own field, not a method: operations take it out of their input and call it alone. */
  accepts: (...types: string[]) => string | false;
  readonly #koa: Koa.Context;
  #rawQuery: Record<string, unknown> | undefined;
  #headers: Record<string, string | undefined> | undefined;

  constructor(request: HttpRequest) {
    if (typeof request.params?.project_id === 'string') this.projectId = request.params.project_id;
    this.params = request.params;
    this.query = request.query;
    this.body = request.body;
    this.bodyType = request.bodyType;
    const koa = (this.#koa = request.koa);
    this.accepts = (...types) => koa.accepts(...types);
  }

  get rawQuery(): Record<string, unknown> {
    return (this.#rawQuery ??= { ...this.#koa.query });
  }

  get headers(): Record<string, string | undefined> {
    return (this.#headers ??= Object.fromEntries(Object.entries(this.#koa.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : value])));
  }
}

/** The input of operations that take identifiers, options and payload: the validated request parts. */
export const requestInput = (request: HttpRequest): RequestInput<any, any, any> => new HttpRequestInput(request);

/**
 * The answer of an operation whose outcome decides its status and headers. A body that writes its
 * own JSON (a records read's page, kept as the text PostgreSQL wrote) is sent as those bytes.
 */
export const asReply = (output: Reply): HandlerResult =>
  writesJson(output.body) ? { ...output, body: output.body.toJsonBytes(), contentType: output.contentType ?? 'application/json' } : output;
