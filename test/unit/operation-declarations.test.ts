import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { allRoutes } from '../../api/app';
import { buildOpenApiDocument } from '../../api/openapi';
import { defineRoute, inputOf, requestInput, responsesOf, RouteSpec } from '../../api/route-spec';
import { apiRoutes } from '../../api/routes';
import { projectRoot } from '../../core/paths';
import type { JsonSchema } from '../../core/schema-validator';
import { isScope } from '../../core/scopes';
import { tools } from '../../mcp/tools';
import type { Caller } from '../../services/operations/context';
import { execute } from '../../services/operations/invoke';
import { defineOperation, isKeyless, isOperator, isPublic, RequestInput, Requirement, scopesOf } from '../../services/operations/operation';
import { sparqlUpdateOperation } from '../../services/ontology/sparql-operations';
import { operations, operationsByName } from '../../services/operations/registry';
import { FLOORS } from '../support/doors';
import { idParams, listQuery } from '../../schemas/common';

const label = (route: RouteSpec) => `${route.method.toUpperCase()} ${route.path}`;
const pathParams = (route: RouteSpec) => (route.path.match(/:([A-Za-z_]+)/g) ?? []).map((p) => p.slice(1));
const publicRoute = (route: RouteSpec) => isPublic(route.operation.access);

/**
 * POST routes that only read (checks, validations, query executions) may go without an accountable
 * actor; every other non-GET route changes state and must declare one (SPEC 5.1). Add an
 * operation name here only with the reason.
 */
const NON_MUTATING_POSTS: Record<string, string> = {
  validateDataEndpoint: 'validates a stored endpoint against its capability contract; stores nothing (SPEC 4.4: read scope as applicable)',
  executeQuery: 'executes a published release for a consumer: reads data, changes none (SPEC 4.5)',
  executeOntologyQuery: 'the alias of executeQuery',
  sparqlQueryPost: 'the SPARQL protocol’s POST hands a query to sparqlQuery (reads) and an update to sparqlUpdate, which needs the accountable actor itself (checked in the next test)',
};

/** The operations that declare no output, each with the reason. Add one only with its reason. */
const WITHOUT_OUTPUT: Record<string, string> = {
  readiness: 'a health probe: its answers (200, 503) are HTTP’s alone, stated on its route (api/routes/health.ts)',
  liveness: 'a health probe: its answer is HTTP’s alone, stated on its route (api/routes/health.ts)',
  staticContent: 'serves every page and asset (the document, /docs, /sparql, the console’s): each route states its own answer and media type',
};

/** Words that state an access rule. A door (api/, mcp/) that contains one restates what an operation declares. */
const ACCESS_RULE = /\b(hasScope|authorize|authorizeProject|missingReadPermissions|requireProject|admitKey)\(|\b(insufficient_scope|accountableActor|administratorActor|projectParam)\b|\bscopes\s*:\s*\{\s*(anyOf|allOf)/;

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(projectRoot, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(folder, file));
}

/** The properties of a declaration: a door declares transport only. */
const declaredKeys = (value: object): string[] => Object.keys(value);

describe('Operation declarations', () => {
  it('the registry holds every operation once, each with an access requirement of known scopes', () => {
    assert.ok(operations.length >= 90, `the registry lost operations: ${operations.length}`);
    const names = operations.map((operation) => operation.name);
    assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), [], 'operation names are unique');
    const problems: string[] = [];
    for (const operation of operations) {
      const access = operation.access as unknown as Record<string, unknown> | undefined;
      if (!access) problems.push(`${operation.name}: no access`);
      else if (isPublic(operation.access)) {
        if (typeof operation.access.public !== 'string' || operation.access.public.trim().length < 5) problems.push(`${operation.name}: public without a reason`);
      } else if (isOperator(operation.access)) {
        if (typeof operation.access.operator !== 'string' || operation.access.operator.trim().length < 5) problems.push(`${operation.name}: operator access without a reason`);
        if (!operation.input) problems.push(`${operation.name}: the admin door validates nothing of its own, so an operator operation declares its input`);
      } else {
        const rule = operation.access.scopes as unknown as Record<string, unknown>;
        const listed = rule && (Array.isArray(rule.anyOf) ? rule.anyOf : rule.allOf);
        if (!Array.isArray(listed) || listed.length === 0 || Object.keys(rule).length !== 1) problems.push(`${operation.name}: scopes must be exactly one non-empty anyOf or allOf`);
        else for (const scope of listed) if (typeof scope !== 'string' || !isScope(scope)) problems.push(`${operation.name}: unknown scope ${String(scope)}`);
      }
      if (operation.idempotent && operation.effect !== 'write') problems.push(`${operation.name}: idempotency records live in the operation's transaction, so only writes may be idempotent`);
    }
    assert.deepEqual(problems, []);
  });

  it('an operation without a valid access declaration does not compile', () => {
    // The type checker (npm test runs it first) fails the build if these stop being errors.
    // @ts-expect-error access is required
    defineOperation({ name: 'x', summary: 'x', effect: 'read', run: async () => ({}) });
    // @ts-expect-error scopes state anyOf or allOf, not a bare list
    defineOperation({ name: 'x', summary: 'x', effect: 'read', access: { scopes: ['org:read'] }, run: async () => ({}) });
    // @ts-expect-error scopes are checked against the scope list
    defineOperation({ name: 'x', summary: 'x', effect: 'read', access: { scopes: { anyOf: ['org:mange'] } }, run: async () => ({}) });
    // @ts-expect-error a route has no access rule of its own
    defineRoute({ method: 'get', path: '/x', tag: 'x', operation: operations[0], auth: { scopes: ['org:read'] } });
    // @ts-expect-error a route states no status: the operation's Reply does (201 vs 200, 202 while pending)
    defineRoute({ method: 'post', path: '/x', tag: 'x', operation: operations[0], status: 201 });
    // @ts-expect-error nor does it reshape the reply
    defineRoute({ method: 'post', path: '/x', tag: 'x', operation: operations[0], respond: () => ({ status: 204 }) });
  });

  it('every route and every MCP tool invokes an operation of the registry and states no access rule of its own', () => {
    const problems: string[] = [];
    for (const route of allRoutes()) {
      if (operationsByName.get(route.operation?.name) !== route.operation) problems.push(`${label(route)}: its operation is not in the registry`);
      const own = declaredKeys({ ...route, operation: undefined }).filter((key) => ['auth', 'access', 'scopes', 'handler', 'projectParam', 'accountableActor'].includes(key));
      if (own.length) problems.push(`${label(route)}: declares ${own.join(', ')}`);
    }
    for (const tool of tools) {
      if (operationsByName.get(tool.operation?.name) !== tool.operation) problems.push(`tool ${tool.name}: its operation is not in the registry`);
      const own = declaredKeys({ ...tool, operation: undefined }).filter((key) => ['auth', 'access', 'scopes', 'handler', 'project'].includes(key));
      if (own.length) problems.push(`tool ${tool.name}: declares ${own.join(', ')}`);
    }
    assert.deepEqual(problems, []);
  });

  it('no door (api/, mcp/, console/server/) states an access rule in its code, and mcp/ imports nothing from api/', () => {
    const problems: string[] = [];
    for (const file of [...sourceFiles('api'), ...sourceFiles('mcp'), ...sourceFiles('console/server')]) {
      const text = readFileSync(path.join(projectRoot, file), 'utf8');
      text.split('\n').forEach((line, index) => {
        if (ACCESS_RULE.test(line) && !line.trim().startsWith('//') && !line.trim().startsWith('*')) problems.push(`${file}:${index + 1}: ${line.trim()}`);
      });
      if (file.startsWith('mcp') && /from '\.\.\/api\//.test(text)) problems.push(`${file}: imports from api/`);
    }
    assert.deepEqual(problems, []);
  });

  it('only health probes, the API description, pricing and the billing callback are public (SPEC 5.1, 6)', () => {
    const unexpected = allRoutes()
      .filter(publicRoute)
      .filter((r) => !r.internal && !(r.method === 'get' && r.path === '/api/v1/pricing') && !(r.method === 'post' && /^\/api\/v1\/billing\/.*webhook$/.test(r.path)))
      .map(label);
    assert.deepEqual(unexpected, [], 'a new public route must be a deliberate, reviewed exception');
    assert.deepEqual(tools.filter((tool) => isPublic(tool.operation.access)).map((tool) => tool.name), [], 'every tool acts as a key');
  });

  it('method-path pairs are unique, and two routes share an operation only as declared aliases', () => {
    const pairs = allRoutes().map(label);
    assert.deepEqual(pairs.filter((p, i) => pairs.indexOf(p) !== i), []);
    // Internal routes (static pages and assets) share the one static-content operation.
    const names = allRoutes().filter((r) => !r.internal).map((r) => r.operation.name);
    assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), []);
  });

  it('versioned API paths start with /api/v1 and every other path is internal', () => {
    for (const route of allRoutes()) {
      if (!route.path.startsWith('/api/v1/')) assert.ok(route.internal, `${label(route)} is outside /api/v1 but not internal`);
    }
    for (const route of apiRoutes.filter((r) => !publicRoute(r))) {
      assert.ok(route.path.startsWith('/api/v1/'), `${label(route)} must be under /api/v1`);
      assert.ok(!route.internal, `${label(route)} needs a key, so it belongs in the OpenAPI document`);
    }
  });

  it('a route carries no request schema: params, query and body are declared by its operation', () => {
    const routes = allRoutes();
    assert.ok(routes.length >= FLOORS.keyedRoutes, `the routes were lost: ${routes.length}`);
    const problems: string[] = [];
    for (const route of routes) {
      const own = declaredKeys(route).filter((key) => ['params', 'query', 'body'].includes(key));
      if (own.length) problems.push(`${label(route)}: declares ${own.join(', ')} (declare them in its operation's input)`);
    }
    assert.deepEqual(problems, []);
  });

  it('every operation a route with path parameters reaches declares them in input.params, each *_id a UUID', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const operation of operations) {
      const names = new Set(allRoutes().filter((route) => route.operation === operation).flatMap(pathParams));
      if (names.size === 0) continue;
      checked += 1;
      const params = operation.input?.params;
      if (!params) {
        problems.push(`${operation.name}: its routes have path parameters (${[...names].join(', ')}) but it declares no input.params`);
        continue;
      }
      const properties = (params.properties ?? {}) as Record<string, JsonSchema>;
      const required = new Set((params.required as string[] | undefined) ?? []);
      for (const name of names) {
        if (!properties[name] || !required.has(name)) problems.push(`${operation.name}: :${name} is not a required property of input.params`);
        else if (name.endsWith('_id') && properties[name].format !== 'uuid') problems.push(`${operation.name}: :${name} is not format uuid`);
      }
    }
    assert.ok(checked >= 80, `too few operations with path parameters were checked (${checked}): was the registry or the route list emptied?`);
    assert.deepEqual(problems, []);
  });

  it('a route to an operation that declares its input hands over the request parts as they are', () => {
    // invoke() takes the parts (RequestInput) at every door and validates them for every door but
    // HTTP: a route's own mapping is for operations that read no request (static pages).
    const problems: string[] = [];
    for (const route of allRoutes()) {
      if (route.operation.input && route.input !== undefined && route.input !== requestInput) problems.push(`${label(route)}: maps the request itself, but ${route.operation.name} takes its parts`);
    }
    assert.deepEqual(problems, []);
  });

  it('an HTTP door takes a body only as narrow as the operation declares for it (httpBody), and every other door the whole body', async () => {
    const draftSave = apiRoutes.find((route) => route.operation.name === 'savePipelineDraft')!;
    const httpFields = Object.keys((inputOf(draftSave).body!.properties ?? {}) as object);
    const toolFields = Object.keys((draftSave.operation.input!.body!.properties ?? {}) as object);
    assert.deepEqual(httpFields.sort(), ['document', 'workspaceState'], 'SPEC 4.3: the HTTP draft save takes no basedOnVersionId');
    assert.deepEqual(toolFields.sort(), ['basedOnVersionId', 'document', 'workspaceState']);
    const narrow = defineOperation({
      name: 'echoNarrowBody',
      summary: 'Answers its input.',
      access: { public: 'a test double' },
      effect: 'read',
      input: { body: { type: 'object', additionalProperties: false, properties: { a: { type: 'string' }, b: { type: 'string' } } }, httpBody: { type: 'object', additionalProperties: false, properties: { a: { type: 'string' } } } },
      run: async (_ctx, input: RequestInput<Record<string, never>, Record<string, never>, { a?: string; b?: string }>) => input.body,
    });
    const caller: Caller = { deps: {} as Caller['deps'], door: 'mcp', requestId: 'test' };
    assert.deepEqual((await execute(caller, narrow, { params: {}, query: {}, body: { a: 'x', b: 'y' } })).output, { a: 'x', b: 'y' });
    assert.deepEqual(Object.keys(inputOf(defineRoute({ method: 'put', path: '/x', tag: 'x', operation: narrow })).body!.properties as object), ['a']);
  });

  it('an operation that names a project is reached by routes whose path names it', () => {
    for (const route of apiRoutes) {
      const access = route.operation.access;
      if (isKeyless(access) || !access.project) continue;
      assert.ok(pathParams(route).includes('project_id') || route.input, `${label(route)}: the operation needs a project, and neither the path nor the route's input mapping gives one`);
    }
  });

  it('every state-changing route invokes an operation that needs an accountable actor', () => {
    const missing = apiRoutes
      .filter((r) => !publicRoute(r) && r.method !== 'get' && !NON_MUTATING_POSTS[r.operation.name])
      .filter((r) => { const access = r.operation.access; return isKeyless(access) || !access.actor; })
      .map(label);
    assert.deepEqual(missing, []);
    // What the SPARQL protocol hands an update to changes state: it needs the actor itself.
    assert.equal((sparqlUpdateOperation.access as Requirement).actor, 'accountable');
  });

  it('Idempotency-Key is offered on write operations only, never by GET routes or key creation', () => {
    for (const route of allRoutes().filter((r) => r.operation.idempotent)) {
      assert.notEqual(route.method, 'get', `${label(route)} is idempotent by nature`);
      assert.ok(!publicRoute(route), `${label(route)}: idempotency records are scoped to a key`);
      assert.equal(route.operation.effect, 'write', `${label(route)}: Idempotency-Key needs the operation's transaction`);
    }
    const createKey = apiRoutes.find((r) => r.operation.name === 'createApiKey');
    assert.ok(createKey && !createKey.operation.idempotent, 'the spec gives key creation no idempotency contract');
  });

  it('the answers are the operation’s: a route states its own only where they are HTTP’s alone or differ from another route’s of the same operation', () => {
    const problems: string[] = [];
    for (const route of allRoutes()) {
      if (!route.responses) {
        if (!route.operation.output) problems.push(`${label(route)}: its operation declares no output`);
        continue;
      }
      // HTTP's alone: pages, assets, the document and the probes, none of them in the document.
      if (route.internal) continue;
      const differs = allRoutes().some((other) => other !== route && other.operation === route.operation && JSON.stringify(responsesOf(other)) !== JSON.stringify(route.responses));
      if (!differs) problems.push(`${label(route)}: states responses its operation should declare as output`);
    }
    assert.deepEqual(problems, []);
  });

  it('every operation declares its output, whichever door reaches it (a route, an MCP tool, the console, the CLI, an activity)', () => {
    const missing = operations.filter((operation) => !operation.output && !(operation.name in WITHOUT_OUTPUT)).map((operation) => operation.name);
    assert.deepEqual(missing, [], 'these operations declare no output');
    const stale = Object.keys(WITHOUT_OUTPUT).filter((name) => !operationsByName.has(name) || operationsByName.get(name)!.output);
    assert.deepEqual(stale, [], 'exemptions of operations that are gone or declare an output now');
    const problems: string[] = [];
    for (const operation of operations.filter((candidate) => candidate.output)) {
      const answers = Object.entries(operation.output!);
      if (!answers.some(([status]) => Number(status) >= 200 && Number(status) < 300)) problems.push(`${operation.name}: no success answer`);
      for (const [status, answer] of answers) if (!answer.description.trim()) problems.push(`${operation.name} ${status}: no description`);
    }
    assert.deepEqual(problems, []);
  });

  it('every route declares a success response', () => {
    for (const route of allRoutes()) {
      assert.ok(Object.keys(responsesOf(route)).some((s) => Number(s) >= 200 && Number(s) < 300), `${label(route)} declares no 2xx response`);
    }
  });

  it('the OpenAPI document lists every keyed route with its operation’s scopes and its 401, 403 and 429 answers', () => {
    const document = buildOpenApiDocument(apiRoutes, { version: 'test' }) as { paths: Record<string, Record<string, any>> };
    for (const route of apiRoutes.filter((r) => !publicRoute(r))) {
      const operation = document.paths[route.path.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[route.method];
      assert.ok(operation, `${label(route)} is missing from the OpenAPI document`);
      const access = route.operation.access;
      if (isKeyless(access)) continue;
      assert.equal(operation.operationId, route.operation.name);
      assert.deepEqual(operation['x-weft-scopes'], scopesOf(access.scopes));
      assert.deepEqual(operation['x-weft-access'], access);
      for (const status of ['401', '403', '429']) assert.ok(operation.responses[status], `${label(route)} does not document ${status}`);
      if (pathParams(route).length) assert.ok(operation.responses['404'], `${label(route)} does not document 404`);
      const { params, query, body } = inputOf(route);
      if (body || query || params) assert.ok(operation.responses['422'], `${label(route)} does not document 422`);
    }
  });
});

describe('Request parts at every door', () => {
  // A public operation needs no key or database: what it answers is the input invoke() handed it.
  const echo = defineOperation({
    name: 'echoRequest',
    summary: 'Answers its input.',
    access: { public: 'a test double' },
    effect: 'read',
    input: { params: idParams('thing_id'), query: listQuery(), body: { type: 'object', additionalProperties: false, properties: { note: { type: 'string', default: 'none' } } } },
    run: async (_ctx, input: RequestInput<{ thing_id: string }, { limit: number }, { note: string }>) => input,
  });
  const caller = (door: Caller['door']): Caller => ({ deps: {} as Caller['deps'], door, requestId: 'test' });
  const thingId = '0b0e4d5c-0000-4000-8000-000000000001';
  const refusal = async (work: Promise<unknown>) => work.then(() => undefined, (error: { code?: string; message?: string; details?: Record<string, unknown> }) => error);

  it('checks each declared part for doors other than HTTP, with the same 422 problem and the query coerced', async () => {
    const { output } = await execute(caller('mcp'), echo, { params: { thing_id: thingId }, query: { limit: '10' } as never, body: undefined as never });
    assert.deepEqual(output.query, { limit: 10, offset: 0 });
    assert.deepEqual(output.body, { note: 'none' });
    const bad = await refusal(execute(caller('activity'), echo, { params: { thing_id: 'X' }, query: { limit: 10 }, body: { note: 'n' } }));
    assert.equal(bad?.code, 'validation_failed');
    assert.match(String(bad?.message), /^The path is invalid: \/thing_id must match format "uuid"/);
    assert.deepEqual(bad?.details?.part, 'path');
    const extra = await refusal(execute(caller('sparql'), echo, { params: { thing_id: thingId }, query: { limit: 10 }, body: { note: 'n', other: 1 } as never }));
    assert.match(String(extra?.message), /^The request body is invalid: \/other is not an accepted field/);
  });

  it('leaves the parts to the HTTP router, which validated them', async () => {
    const unchecked = { params: { thing_id: 'X' }, query: { limit: 10 }, body: { note: 'n' } };
    assert.deepEqual((await execute(caller('http'), echo, unchecked, { validated: true })).output, unchecked);
  });
});
