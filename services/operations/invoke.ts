import type { Knex } from 'knex';
import { AuthenticationError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import type { Executor } from '../../db/connection';
import type { Project } from '../../db/models';
import { authorize, Principal } from '../tenancy/access';
import { requireProject } from '../tenancy/projects';
import type { Caller, OperationContext } from './context';
import { domainErrorFromDatabase } from './database-errors';
import { requestFingerprint, runIdempotently } from './idempotency';
import { actingFor } from './current-operation';
import { committing } from '../../db/after-commit';
import { isKeyless, isOperator, Operation, RequestInput } from './operation';

export interface Invocation<O> {
  output: O;
  /** The answer is the stored one of an earlier call with the same idempotency key. */
  replayed: boolean;
}

/**
 * What makes two calls the same call: the input without what the transport added to it (request
 * headers, which differ per hop and process, and the negotiation callback).
 */
function contentOf(input: unknown): unknown {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return input;
  const content = { ...(input as Record<string, unknown>) };
  // The HTTP door's query as sent is read through an accessor, which a spread leaves out.
  if ('rawQuery' in input) content.rawQuery = (input as { rawQuery?: unknown }).rawQuery;
  delete content.headers;
  delete content.accepts;
  return content;
}

/** The key-level layers of the operation's access; the principal, or none for public operations. */
function admitKey(caller: Caller, operation: Operation): Principal | undefined {
  // The admin door is the operator's, and only the operator's operations are reached through it.
  if (isOperator(operation.access) !== (caller.door === 'admin')) throw new Error(`${operation.name} cannot be invoked through the ${caller.door} door`);
  if (isKeyless(operation.access)) return undefined;
  if (!caller.principal) throw new AuthenticationError('missing_credential', 'Send an API key in the header Authorization: Bearer <API_KEY>.');
  authorize(caller.principal, operation.access);
  return caller.principal;
}

/**
 * Would invoke() admit this principal to the operation, before its input is read? (The console's
 * navigation shows the pages whose operations the member may call.)
 */
export function admits(principal: Principal, operation: Operation): boolean {
  if (isKeyless(operation.access)) return !isOperator(operation.access);
  try {
    authorize(principal, operation.access);
    return true;
  } catch {
    return false;
  }
}

/**
 * The access checks that need no input beyond a project id, for doors that check access before
 * they validate the rest of a request (a key without the scope learns nothing of the body's
 * schema). execute() checks again; hand it the project returned here to spare a lookup.
 */
export async function admit(caller: Caller, operation: Operation, projectId?: string): Promise<Project | undefined> {
  const principal = admitKey(caller, operation);
  if (!principal || isKeyless(operation.access) || !operation.access.project || projectId === undefined) return undefined;
  return requireProject(caller.deps, caller.deps.db, principal, projectId);
}

function projectIdOf(input: unknown, operation: Operation): string {
  const projectId = (input as { projectId?: unknown } | undefined)?.projectId;
  if (typeof projectId !== 'string') throw new Error(`${operation.name} declares a project but its input has no projectId`);
  return projectId;
}

/**
 * The parts of an operation's request (RequestInput), checked against its declared schemas as the
 * HTTP router checks a request, with the same 422 answers: an absent part is empty, as on HTTP,
 * and each part is checked on a copy, since defaults (and the query's coercion) fill it in.
 */
function checkRequestParts<I>(operation: Operation<I>, input: I): I {
  const declared = operation.input;
  if (!declared) return input;
  const parts = (input ?? {}) as Partial<RequestInput<unknown, unknown, unknown>>;
  const checked = { ...parts };
  if (declared.params) checked.params = validateWithSchema(declared.params, structuredClone(parts.params ?? {}), 'path');
  if (declared.query) checked.query = validateWithSchema(declared.query, structuredClone(parts.query ?? {}), 'query string', { query: true });
  if (declared.body) checked.body = validateWithSchema(declared.body, structuredClone(parts.body ?? {}), 'request body');
  return checked as I;
}

/**
 * The one way into the service layer, for every door: checks the operation's declared access
 * against the caller's key (scopes, restrictions, accountable actor), loads and checks the project
 * its input names, validates the request parts it declares (unless the door already did:
 * `validated`, the HTTP router) and runs it; a write runs in one transaction, once per idempotency
 * key. Database errors leave as business errors.
 */
export async function execute<I, O>(caller: Caller, operation: Operation<I, O>, input: I, options: { admitted?: Project; transaction?: Knex.Transaction; validated?: boolean } = {}): Promise<Invocation<O>> {
  const principal = admitKey(caller, operation);
  const checked = options.validated ? input : checkRequestParts(operation, input);
  try {
    let project: Project | undefined;
    if (principal && !isKeyless(operation.access) && operation.access.project) {
      const projectId = projectIdOf(checked, operation);
      project = options.admitted?.id === projectId ? options.admitted : await requireProject(caller.deps, caller.deps.db, principal, projectId);
    }
    // The key as this operation acts with it: checks of named grants hold the operation to its declaration.
    const acting = principal && actingFor(principal, operation);
    // Reads make no closure: under tsx every named closure made per call is also renamed (__name).
    if (operation.effect !== 'write') return { output: await operation.run(new InvocationContext(caller.deps.db, caller, operation.name, acting, project), checked), replayed: false };
    const context = (db: Executor): OperationContext => new InvocationContext(db, caller, operation.name, acting, project);
    const inTransaction = async (trx: Knex.Transaction): Promise<Invocation<O>> => {
      if (!caller.idempotencyKey || !principal || !operation.idempotent) return { output: await operation.run(context(trx), checked), replayed: false };
      const fingerprint = requestFingerprint(operation.name, { projectId: project?.id ?? null }, contentOf(checked));
      const outcome = await runIdempotently(trx, principal, caller.idempotencyKey, operation.name, fingerprint, async () => ({ body: await operation.run(context(trx), checked) }));
      return { output: outcome.body as O, replayed: Boolean(outcome.replayed) };
    };
    if (options.transaction) return await inTransaction(options.transaction);
    // Work the operation left for after its commit (afterCommit) runs before it answers.
    const invocation = await committing(caller.deps.db, inTransaction);
    // What the write changed is this runtime's to see at once; others hear of it by NOTIFY.
    if (principal) caller.deps.definitions.changed(principal.workspaceId);
    else caller.deps.definitions.changedEverywhere();
    return invocation;
  } catch (error) {
    throw domainErrorFromDatabase(error) ?? error;
  }
}

/**
 * The context execute() hands an operation. A class: an object literal with the two accessors cost
 * about 2 µs to create, on every call. inTransaction() copies it with its prototype.
 */
class InvocationContext implements OperationContext {
  readonly deps: Caller['deps'];
  readonly door: Caller['door'];
  readonly requestId: string;
  readonly idempotencyKey: string | undefined;
  readonly signal: AbortSignal | undefined;

  constructor(
    public db: Executor,
    caller: Caller,
    private readonly operationName: string,
    private readonly acting: Principal | undefined,
    private readonly checkedProject: Project | undefined,
  ) {
    this.deps = caller.deps;
    this.door = caller.door;
    this.requestId = caller.requestId;
    this.idempotencyKey = caller.idempotencyKey;
    this.signal = caller.signal;
  }

  get principal(): Principal {
    if (!this.acting) throw new Error(`${this.operationName} is public and has no principal`);
    return this.acting;
  }

  get project(): Project {
    if (!this.checkedProject) throw new Error(`${this.operationName} declares no project`);
    return this.checkedProject;
  }
}

/** execute() for callers that need only the output. */
export async function invoke<I, O>(caller: Caller, operation: Operation<I, O>, input: I): Promise<O> {
  return (await execute(caller, operation, input)).output;
}

/**
 * An operation that hands part of its work to another operation (a SPARQL request to its query or
 * update, an update to governed writes) invokes it as the same key, checked again by that
 * operation's own declared access; `door` names how the inner operation was reached.
 */
export async function invokeWithin<I, O>(ctx: OperationContext, door: Caller['door'], operation: Operation<I, O>, input: I): Promise<Invocation<O>> {
  const caller: Caller = { deps: ctx.deps, principal: ctx.principal, door, requestId: ctx.requestId, idempotencyKey: ctx.idempotencyKey, signal: ctx.signal };
  let admitted: Project | undefined;
  try {
    admitted = ctx.project;
  } catch {
    admitted = undefined;
  }
  return execute(caller, operation, input, { admitted });
}
