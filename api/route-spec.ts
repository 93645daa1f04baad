import type Koa from 'koa';
import type { Client } from '@temporalio/client';
import type { JsonSchema } from '../core/schema-validator';
import type { Db, Executor } from '../db/connection';
import type { AccessRequirement, Principal } from '../services/tenancy/access';
import type { Project } from '../db/models';
import type { KeyUsageRecorder } from '../services/tenancy/key-usage';

/** What every route handler can reach. Built once per process. */
export interface AppDependencies {
  db: Db;
  temporal: Client;
  encryptionKey: Buffer;
  keyUsage: KeyUsageRecorder;
}

/**
 * How a route is authenticated and authorized. Every route must declare one: `auth` is a
 * required field, so a route without a declaration does not compile.
 */
export type RouteAuth =
  | { public: true; reason: string }
  | (AccessRequirement & {
      /** Name of the path parameter holding a project id: enables the project allowlist layer. */
      projectParam?: string;
    });

export interface HandlerContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** The media type of a raw body (routes with `rawBody`), without parameters. */
  bodyType?: string;
  /** The authenticated caller. Throws on public routes, which have none. */
  principal: Principal;
  /** The project named by `auth.projectParam`, already checked against the allowlist. */
  project: Project;
  /** A transaction for mutating routes (the whole request commits or nothing does); the pool for reads. */
  db: Executor;
  deps: AppDependencies;
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

export interface ResponseSpec {
  description: string;
  schema?: JsonSchema;
  /** The media type of `schema`; several, comma-separated, when the Accept header chooses among them. */
  contentType?: string;
  /** Other media types of the same answer, chosen by the Accept header; documented as text. */
  alternatives?: readonly string[];
}

/** A request header the handler reads and enforces, documented as a header parameter. */
export interface HeaderSpec {
  name: string;
  required?: boolean;
  description: string;
  schema: JsonSchema;
}

export interface RouteSpec<P = any, Q = any, B = any> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Koa-style path: /api/v1/projects/:project_id */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: RouteAuth;
  params?: JsonSchema;
  query?: JsonSchema;
  body?: JsonSchema;
  /**
   * A body that is not JSON (an RDF document, a SPARQL query): read as text of one of these media
   * types, up to maxBytes, and handed to the handler as `body` with its media type in `bodyType`.
   * With `form`, application/x-www-form-urlencoded bodies are parsed into an object of strings.
   */
  rawBody?: { mediaTypes: readonly string[]; maxBytes: number; description: string; optional?: boolean; refusals?: Record<string, { code: string; message: string }> };
  /**
   * Mutations run in one transaction by default. Set false for actions that only reach out to
   * remote systems (a connection check), so no transaction is held open while they wait.
   */
  transaction?: boolean;
  /** Accepts an Idempotency-Key header: same key and payload replays the first answer. */
  idempotent?: boolean;
  /** Other request headers the handler reads and enforces (the router validates none of them). */
  headers?: readonly HeaderSpec[];
  responses: Record<number, ResponseSpec>;
  /** Extra error statuses this route can answer beyond those derived from its declaration. */
  errors?: Array<{ status: number; description?: string }>;
  /** Left out of the OpenAPI document (health probes, the document itself). */
  internal?: boolean;
  handler(ctx: HandlerContext<P, Q, B>): Promise<HandlerResult>;
}

/** Identity helper that keeps a route's parameter types inferred in its file. */
export const defineRoute = <P = Record<string, string>, Q = Record<string, never>, B = undefined>(spec: RouteSpec<P, Q, B>): RouteSpec<P, Q, B> => spec;
