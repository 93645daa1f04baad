import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import querystring from 'node:querystring';
import fc from 'fast-check';
import Stripe from 'stripe';
import { allRoutes } from '../../api/app';
import { inputOf, type RouteSpec } from '../../api/route-spec';
import { JsonSchema, schemaProblems } from '../../core/schema-validator';
import { env } from '../support/environment';
import { raiseRequestLimits, request } from '../support/fixtures';
import { problemFormatViolations, rawRequest, RawResponse } from './support/raw-http';
import { deeplyNested, invalidArbitrary, SchemaContext, validArbitrary } from './support/schema-arbitrary';
import { changedTables, Digester, tenantDigester } from './support/tenant-digest';
import { fuzzTenant, FuzzTenant } from './support/fuzz-tenant';

/**
 * Property-based fuzzing of every operation in the OpenAPI document (GET /api/v1/openapi.json):
 * path parameters, query strings, headers and bodies generated from the operation's own schemas,
 * valid and invalid, sent to the real server with a key holding every scope in a fully populated
 * tenant. For every answer:
 *   - never a 5xx (except the documented billing_unavailable of an environment without Stripe);
 *   - every error is a problem+json (type, title, status, code, message, requestId = X-Request-Id);
 *   - a request the server's own validator refuses (params, query, body, Idempotency-Key, media
 *     type, malformed JSON) is a 4xx;
 *   - a refused request (4xx) changed no stored row of the tenant (one digest before and after),
 *     except the failed write action a refused governed write keeps by design (AUDITED_REFUSALS);
 *   - the status is one the operation documents.
 * Pipeline launches get invalid input only (INVALID_ONLY); billing answers its documented 503
 * without Stripe; the webhook is fuzzed with a known signing secret, signed and unsigned.
 *
 * Seeded: FUZZ_SEED (default below) and FUZZ_RUNS (runs per operation) reproduce a run; a failure
 * names the operation, the seed and fast-check's counterexample path.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);

/** Valid requests here would start heavy or long work; they get invalid input only. */
const INVALID_ONLY: Record<string, string> = {
  executePipeline: 'a valid request starts a Temporal pipeline run',
  launchProjectRun: 'a valid request starts a Temporal pipeline run',
  launchRun: 'a valid request starts a Temporal pipeline run',
};

/** At most this many runs (FUZZ_RUNS caps them too): each valid request does bounded but real work (a preview, a compile, a SPARQL evaluation, a governed write). */
const BOUNDED_RUNS: Record<string, number> = {
  previewPipeline: 10,
  compileOntology: 10,
  executeQuery: 10,
  executeOntologyQuery: 10,
  sparqlQueryGet: 30,
  sparqlQueryPost: 30,
  submitSourceWrite: 15,
};

/** 5xx answers that are the documented behaviour of this environment, not failures. */
const EXPECTED_5XX: Record<string, { status: number; code: string; why: string }> = {
  startBillingCheckout: { status: 503, code: 'billing_unavailable', why: 'no STRIPE_SECRET_KEY in the test environment' },
  openBillingPortal: { status: 503, code: 'billing_unavailable', why: 'no STRIPE_SECRET_KEY in the test environment' },
  downgradePlan: { status: 503, code: 'billing_unavailable', why: 'no STRIPE_SECRET_KEY in the test environment' },
  listInvoices: { status: 503, code: 'billing_unavailable', why: 'no STRIPE_SECRET_KEY in the test environment' },
};

const WEBHOOK_SECRET = 'whsec_fuzz_0123456789';
const HTTP_METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

interface Operation {
  method: string;
  /** OpenAPI path template: /api/v1/projects/{project_id}. */
  template: string;
  operationId: string;
  spec: Record<string, any>;
  route: RouteSpec;
}

/** One generated request, and what the server's own validator says about it. */
interface FuzzCase {
  kind: 'valid' | 'invalid';
  /** What was made wrong (or "valid"): reported with a failure. */
  note: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** The request breaks a rule the server checks before doing anything: it must be a 4xx. */
  mustReject: boolean;
}

type Part<T> = { value: T; note: string; wrong: boolean };

let document: Record<string, any>;
let tenant: FuzzTenant;
let key: string;
let digester: Digester;
let ctx: SchemaContext;
const stripe = new Stripe('sk_test_fuzz', { telemetry: false });

function operations(): Operation[] {
  const routes = new Map(allRoutes().map((r) => [r.operation.name, r]));
  const out: Operation[] = [];
  for (const [template, item] of Object.entries<Record<string, any>>(document.paths)) {
    for (const method of HTTP_METHODS) {
      const spec = item[method];
      if (!spec) continue;
      const route = routes.get(spec.operationId);
      assert.ok(route, `${spec.operationId} is in the document but not a route`);
      out.push({ method: method.toUpperCase(), template, operationId: spec.operationId, spec, route });
    }
  }
  // Deletions last: they remove the real resources the other operations are fuzzed against.
  return out.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
}

const seedOf = (operationId: string) => (SEED ^ createHash('sha256').update(operationId).digest().readInt32BE(0)) | 0;

/* ---------------- path parameters ---------------- */

function realValues(name: string): string[] {
  return tenant.params[name] ?? [];
}

/** Path segments (already percent-encoded) a path parameter must refuse or not find. */
const HOSTILE_SEGMENTS = ['not-a-uuid', 'a%20b', '%00', '..', '%2e%2e', '%F0%9F%98%80', 'x'.repeat(3000), '0', '%27%3B%20DROP%20TABLE%20x', '%ED%A0%80', '%zz', '%', '%2F', 'null', '-1', '1e9999'];

const safeDecode = (segment: string) => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

function pathParameters(op: Operation): Array<{ name: string; schema: JsonSchema }> {
  return (op.spec.parameters as Array<Record<string, any>>).filter((p) => p.in === 'path').map((p) => ({ name: p.name as string, schema: p.schema as JsonSchema }));
}

function validPath(op: Operation): fc.Arbitrary<Part<string>> {
  const params = pathParameters(op);
  const segments = params.map(({ name, schema }) => {
    const real = realValues(name);
    const generated = validArbitrary(schema, { ...ctx, uuids: [] }).map((v) => encodeLoose(String(v)));
    // Mostly the tenant's own resource, its main one first (the default project holds everything): a fresh id mostly proves only the 404.
    return real.length ? fc.oneof({ arbitrary: fc.constant(real[0]), weight: 3 }, { arbitrary: fc.constantFrom(...real), weight: 1 }, { arbitrary: generated, weight: 1 }) : generated;
  });
  return fc.tuple(...segments).map((values) => ({ value: fill(op.template, params, values), note: 'valid path', wrong: false }));
}

function invalidPath(op: Operation): fc.Arbitrary<Part<string>> | undefined {
  const params = pathParameters(op);
  if (!params.length) return undefined;
  return fc.tuple(validPath(op), fc.nat({ max: params.length - 1 }), fc.oneof(fc.constantFrom(...HOSTILE_SEGMENTS), fc.uuid().map((u) => u.toUpperCase()))).map(([valid, index, segment]) => {
    // The valid path with one parameter replaced.
    const parts = matchTemplate(op.template, valid.value) ?? {};
    const filled = params.map(({ name }, i) => (i === index ? segment : parts[name]));
    const decoded = Object.fromEntries(params.map(({ name }, i) => [name, safeDecode(filled[i])]));
    const schema = inputOf(op.route).params;
    const wrong = schema ? schemaProblems(schema, decoded).length > 0 : false;
    return { value: fill(op.template, params, filled), note: `path parameter ${params[index].name} = ${segment.slice(0, 40)}`, wrong };
  });
}

function fill(template: string, params: Array<{ name: string }>, values: string[]): string {
  let path = template;
  params.forEach(({ name }, i) => {
    path = path.replace(`{${name}}`, values[i]);
  });
  return path;
}

/** The parameter values of a concrete path, by its template. */
function matchTemplate(template: string, path: string): Record<string, string> | undefined {
  const names: string[] = [];
  const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  })}$`);
  const match = pattern.exec(path);
  return match ? Object.fromEntries(names.map((name, i) => [name, match[i + 1]])) : undefined;
}

/* ---------------- query strings ---------------- */

function queryParameters(op: Operation): Array<{ name: string; required: boolean; schema: JsonSchema }> {
  return (op.spec.parameters as Array<Record<string, any>>).filter((p) => p.in === 'query').map((p) => ({ name: p.name as string, required: Boolean(p.required), schema: p.schema as JsonSchema }));
}

/**
 * encodeURIComponent, except that a lone surrogate (a hostile string, or one cut in half) is sent
 * as the three bytes a careless client would send (WTF-8) instead of throwing.
 */
function encodeLoose(text: string): string {
  return text.replace(/[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]|[^\ud800-\udfff]+/g, (part) => {
    if (part.length !== 1 || part.charCodeAt(0) < 0xd800 || part.charCodeAt(0) > 0xdfff) return encodeURIComponent(part);
    const c = part.charCodeAt(0);
    return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
  });
}

function serializeQuery(values: Record<string, unknown>): string {
  const parts: string[] = [];
  const one = (name: string, value: unknown) => {
    const text = value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
    parts.push(`${encodeLoose(name)}=${encodeLoose(text)}`);
  };
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) value.forEach((item) => one(name, item));
    else one(name, value);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Field names of the tenant's tables, and names no table has. */
const FIELD = fc.constantFrom('id', 'total', 'missing', '__proto__', '', 'a"b', 'x'.repeat(300), 'ü');
/** Values of every JSON kind, hostile ones included, for filters and bindings. */
const ANY_VALUE = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(1e308, -1e308, 0, -0, 2 ** 63, '1', '', 'x'.repeat(5000), true, null, [], {}, [1, 2], { a: 1 }, '\u0000', '\ud800'));
/** A records filter: mostly well-formed conditions on real and unknown fields, with values of every kind. */
const WHERE = fc.array(
  fc.record({ field: FIELD, op: fc.constantFrom('eq', 'ne', 'in', 'exists', 'gt', 'gte', 'lt', 'lte', 'like'), value: ANY_VALUE, values: fc.array(ANY_VALUE, { maxLength: 4 }) }, { requiredKeys: ['field', 'op'] }),
  { maxLength: 4 },
).map((conditions) => JSON.stringify(conditions));
const ORDER_BY = fc.array(fc.record({ field: FIELD, direction: fc.constantFrom('asc', 'desc', 'sideways') }, { requiredKeys: ['field'] }), { maxLength: 3 }).map((order) => JSON.stringify(order));
/** SPARQL from a small grammar: real terms, hostile literals, functions, aggregates, paths, odd limits. */
const TERM = fc.oneof(fc.constantFrom('?s', '?o', ':Order', ':total', 'a', '<https://example.com/x>', '<>', '"x"@en', '"1e309"^^xsd:double', '"\\u0000"', '"😀"', '1e309', '-0', '_:b'), fc.string({ maxLength: 8 }).map((t) => JSON.stringify(t)));
const SPARQL = fc
  .record({
    patterns: fc.array(fc.tuple(TERM, fc.constantFrom('?p', ':total', 'a', ':next+', '(:next|:total)*', '^:next'), TERM), { minLength: 1, maxLength: 3 }),
    filter: fc.option(fc.constantFrom('FILTER(?o > 1e308)', 'FILTER(regex(str(?o), "(a+)+$"))', 'FILTER(?o / 0 = 1)', 'FILTER(STRLEN(?o) > -1)', 'FILTER(LANG(?o) = "")', 'BIND(SHA512(STR(?o)) AS ?h)', 'VALUES ?s { <https://example.com/a> }'), { nil: undefined }),
    head: fc.constantFrom('SELECT *', 'SELECT DISTINCT ?s', 'SELECT (COUNT(*) AS ?n) (SUM(?o) AS ?t)', 'ASK', 'CONSTRUCT { ?s ?p ?o }', 'DESCRIBE ?s'),
    tail: fc.constantFrom('', 'LIMIT 0', 'LIMIT 99999999999999999999', 'OFFSET 18446744073709551616', 'ORDER BY DESC(?o) LIMIT 5', 'GROUP BY ?s'),
  })
  .map(({ patterns, filter, head, tail }) => `PREFIX : <https://weft.dev/ontology/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> ${head} WHERE { ${patterns.map((p) => p.join(' ')).join(' . ')} ${filter ?? ''} } ${tail}`);

/**
 * Values that take a valid request past the business rules of parameters whose schema says only
 * "string" (a branch that exists, a filter on a real field, a SPARQL query), mixed with generated ones.
 */
const QUERY_SAMPLES: Record<string, fc.Arbitrary<string>> = {
  branch: fc.constant('main'),
  where: fc.oneof(WHERE, fc.constantFrom('[{"field":"id","op":"gte","value":1}]', '[{"field":"total","op":"in","values":[10,20]}]', '[]')),
  orderBy: fc.oneof(ORDER_BY, fc.constant('[{"field":"id","direction":"desc"}]')),
  select: fc.oneof(fc.constantFrom('id', 'id,total'), fc.array(FIELD, { maxLength: 3 }).map((f) => f.join(','))),
  query: fc.oneof(SPARQL, fc.constantFrom('SELECT * WHERE { ?s ?p ?o } LIMIT 3', 'ASK { ?s ?p ?o }', 'CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 2')),
};

function validQuery(op: Operation): fc.Arbitrary<Part<string>> {
  const params = queryParameters(op);
  if (!params.length) return fc.constant({ value: '', note: 'no query', wrong: false });
  const required = params.filter((p) => p.required).map((p) => p.name);
  const arbitrary = (p: { name: string; schema: JsonSchema }) => (QUERY_SAMPLES[p.name] ? fc.oneof({ arbitrary: validArbitrary(p.schema, ctx), weight: 1 }, { arbitrary: QUERY_SAMPLES[p.name], weight: 3 }) : validArbitrary(p.schema, ctx));
  const all = fc.record(Object.fromEntries(params.map((p) => [p.name, arbitrary(p)])), { requiredKeys: required });
  // Each optional parameter can refuse on its own (a branch that does not exist, a refused graph
  // parameter): a third of the runs send only the required ones and those with sampled values.
  const minimal = fc.record(Object.fromEntries(params.filter((p) => p.required || QUERY_SAMPLES[p.name]).map((p) => [p.name, arbitrary(p)])), { requiredKeys: required });
  return fc.oneof({ arbitrary: all, weight: 2 }, { arbitrary: minimal, weight: 1 }).map((values) => ({ value: serializeQuery(values), note: 'valid query', wrong: false }));
}

/** Raw query strings no parameter schema describes: malformed escapes, NUL, repeats, unknown names, a credential. */
const HOSTILE_QUERIES = ['?%zz=1', '?limit=%zz', '?limit=%00', '?limit=1&limit=2', '?limit=-1', '?limit=1e999', '?unknownParameter=1', '?cursor=' + 'c'.repeat(6000), '?a[b][c]=1', '?__proto__[x]=1', '?where=%5B%7B%22field%22%3A%22id%22%2C%22op%22%3A%22drop%22%7D%5D', '?orderBy=%7B%7D', '?select=%00', '?api_key=x', '?%F0%9F%98%80=%ED%A0%80', '?&&&=&='];

function invalidQuery(op: Operation): fc.Arbitrary<Part<string>> {
  const params = queryParameters(op);
  const hostile = fc.constantFrom(...HOSTILE_QUERIES).map((q) => ({ value: q, note: `query ${q.slice(0, 60)}`, wrong: classifyQuery(op, q) }));
  if (!params.length) return hostile;
  const mutated = fc
    .tuple(validQuery(op), fc.constantFrom(...params))
    // Values are cut at 4 000 characters: node refuses a request line over 16 KB before Weft sees it.
    .chain(([valid, param]) => invalidArbitrary(param.schema, ctx).map((generated) => {
      const bad = typeof generated === 'string' ? generated.slice(0, 4000) : generated;
      const rest = valid.value.replace(/^\?/, '').split('&').filter((p) => p && !p.startsWith(`${encodeURIComponent(param.name)}=`)).join('&');
      const value = `?${[rest, serializeQuery({ [param.name]: bad }).slice(1)].filter(Boolean).join('&')}`.slice(0, 8000).replace(/%[0-9A-Fa-f]?$/, '');
      return { value, note: `query parameter ${param.name} = ${JSON.stringify(bad)?.slice(0, 60)}`, wrong: classifyQuery(op, value) };
    }));
  return fc.oneof(hostile, mutated);
}

/** What the server's validator says about a query string, parsed as Koa parses it. */
function classifyQuery(op: Operation, query: string): boolean {
  const schema = inputOf(op.route).query;
  if (!schema) return false;
  const parsed = { ...querystring.parse(query.replace(/^\?/, '')) };
  return schemaProblems(schema, parsed, { query: true }).length > 0;
}

/* ---------------- bodies ---------------- */

interface BodyPart {
  text?: string | Buffer;
  contentType?: string;
  note: string;
  wrong: boolean;
}

const RAW_SAMPLES: Record<string, string[]> = {
  'text/turtle': ['@prefix ex: <https://example.com/fuzz/> .\nex:Thing a <http://www.w3.org/2000/01/rdf-schema#Class> .\n', '@prefix : <#> . :a :b "c"@en .'],
  'application/n-triples': ['<https://example.com/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/2000/01/rdf-schema#Class> .\n'],
  'application/n-quads': ['<https://example.com/a> <https://example.com/p> "x" <https://example.com/g> .\n'],
  'application/ld+json': ['{"@id":"https://example.com/a","@type":"http://www.w3.org/2000/01/rdf-schema#Class"}', '{"@context":{"@vocab":"https://example.com/"},"@id":"a","name":"x"}'],
  'application/sparql-query': ['SELECT * WHERE { ?s ?p ?o } LIMIT 5', 'ASK { ?s ?p ?o }', 'CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o } LIMIT 3', 'DESCRIBE <https://example.com/x>', 'SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }'],
  'application/sparql-update': ['INSERT DATA { <https://example.com/a> <https://example.com/p> "x" }', 'DELETE DATA { <https://example.com/a> <https://example.com/p> "x" }', 'CLEAR ALL', 'LOAD <https://example.com/x>'],
  'application/x-www-form-urlencoded': ['query=SELECT%20*%20WHERE%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D%20LIMIT%201', 'update=CLEAR%20ALL', 'query=&update=', 'query=%zz'],
};

function stripeEvent(): fc.Arbitrary<string> {
  const customer = fc.constantFrom('cus_fuzz', 'cus_other', undefined);
  const type = fc.constantFrom('customer.subscription.updated', 'customer.subscription.deleted', 'invoice.paid', 'invoice.finalized', 'charge.succeeded', '');
  const object = fc.record({
    id: fc.string({ maxLength: 20 }),
    customer,
    status: fc.constantFrom('active', 'trialing', 'canceled', 'paid', 'draft', 7, null),
    amount_due: fc.oneof(fc.integer(), fc.constantFrom('12', 'NaN', null, 1e308, -5, 'x')),
    amount_paid: fc.oneof(fc.integer(), fc.constantFrom('NaN', null, {})),
    currency: fc.oneof(fc.constantFrom('usd', 'eur'), fc.string({ maxLength: 300 })),
    hosted_invoice_url: fc.oneof(fc.webUrl(), fc.constant(null), fc.integer()),
    period_start: fc.oneof(fc.integer({ min: 0, max: 4_102_444_800 }), fc.constantFrom(-1, 1e20, 'x', null)),
    period_end: fc.oneof(fc.integer({ min: 0, max: 4_102_444_800 }), fc.constantFrom(8.64e15, 'x', null)),
  }, { requiredKeys: ['id'] });
  return fc.record({ id: fc.string({ minLength: 1, maxLength: 40 }).map((s) => `evt_${s}`), type, object }).map(({ id, type: t, object: o }) =>
    JSON.stringify({ id, object: 'event', type: t, data: { object: o } }),
  );
}

/**
 * Valid bodies that reach past business rules random values never satisfy (a capability target, a
 * pipeline graph over real endpoints, a write against the real snapshot), mixed with generated ones.
 */
const BODY_SAMPLES: Record<string, () => fc.Arbitrary<unknown>> = {
  createDataEndpoint: () => fc.tuple(fc.uuid(), fc.constantFrom('source', 'destination')).map(([id, role]) => ({
    name: `fz_${id.slice(0, 8)}`, namespace: 'fuzz', role, contractKind: role === 'source' ? 'source_stream' : 'sink_table',
    pluginCapabilityInstallationId: tenant.installationId, target: { table: `fz_${id.slice(0, 8)}`, primaryKey: ['id'] },
  })),
  createPipeline: () => fc.uuid().map((id) => ({ name: `fz-${id.slice(0, 8)}`, document: pipelineDocument() })),
  replacePipelineDocument: () => fc.constant({ document: pipelineDocument() }),
  savePipelineDraft: () => fc.constant({ document: pipelineDocument() }),
  previewPipeline: () => fc.constant({ sampleSize: 5 }),
  submitSourceWrite: () => fc.tuple(fc.uuid(), fc.integer({ min: 100, max: 10_000 }), fc.constantFrom('append', 'upsert', 'delete')).map(([id, row, operation]) => ({
    actionId: id, projectId: tenant.ws.projectId, idempotencyKey: `fz-${id}`,
    input: { contractVersion: 1, expectedSourceSnapshot: tenant.snapshot, operation, ...(operation === 'delete' ? { where: [{ field: 'id', op: 'eq', value: row }] } : { rows: [{ id: row, total: row }] }) },
  })),
  createQuery: () => fc.uuid().map((id) => ({ name: `fz-${id.slice(0, 8)}`, sparql: 'SELECT ?order ?total WHERE { ?order a :Order ; :total ?total }', inputSchema: { type: 'object', properties: {} }, outputSchema: { type: 'object', properties: {} } })),
  executeQuery: () => fc.constantFrom({ input: {} }, { input: {}, options: { limit: 1 } }),
  executeOntologyQuery: () => fc.constant({ input: {} }),
};

function pipelineDocument() {
  const [source, destination] = tenant.params.endpoint_id;
  return {
    nodes: [{ id: 'src', type: 'source', endpointId: source, mode: 'full' }, { id: 'dst', type: 'destination', endpointId: destination, writeMode: 'upsert' }],
    edges: [{ from: 'src', to: 'dst' }],
  };
}

function validBody(op: Operation): fc.Arbitrary<BodyPart> {
  const route = op.route;
  if (op.operationId === 'stripeWebhook') return stripeEvent().map((text) => ({ text, contentType: 'application/json', note: 'signed event', wrong: false }));
  if (route.rawBody) {
    const types = route.rawBody.mediaTypes;
    return fc.constantFrom(...types).chain((type) =>
      fc.oneof(fc.constantFrom(...(RAW_SAMPLES[type] ?? ['x'])), fc.string({ maxLength: 200 }), ...(type === 'application/sparql-query' ? [SPARQL] : type === 'application/x-www-form-urlencoded' ? [SPARQL.map((q) => `query=${encodeURIComponent(q)}`)] : [])).map((text) => ({ text, contentType: type, note: `${type} body`, wrong: false })),
    );
  }
  const schema = op.spec.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined;
  if (!schema) return fc.constant({ note: 'no body', wrong: false });
  const sample = BODY_SAMPLES[op.operationId];
  const values = sample ? fc.oneof(validArbitrary(schema, ctx), sample()) : validArbitrary(schema, ctx);
  return values.map((value) => ({ text: JSON.stringify(value), contentType: 'application/json', note: 'valid body', wrong: classifyBody(op, value) }));
}

function classifyBody(op: Operation, value: unknown): boolean {
  const schema = inputOf(op.route).body;
  return schema ? schemaProblems(schema, structuredClone(value)).length > 0 : false;
}

const INVALID_UTF8 = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]);

/** Bodies broken below the schema: not JSON, not UTF-8, too large, too deep, or of the wrong media type. */
function transportBodies(op: Operation): fc.Arbitrary<BodyPart> {
  // The body parser reads POST, PUT and PATCH bodies only (of every route: a POST without a body
  // schema still refuses malformed JSON); GET and DELETE bodies are never read.
  const parsed = ['POST', 'PUT', 'PATCH'].includes(op.method);
  const takesBody = Boolean(inputOf(op.route).body || (op.route.rawBody && !op.route.rawBody.optional));
  const json = 'application/json';
  const cases: BodyPart[] = [
    { text: '{"a":', contentType: json, note: 'truncated JSON', wrong: parsed },
    { text: "{'a':1}", contentType: json, note: 'single-quoted JSON', wrong: parsed },
    { text: '[1,]', contentType: json, note: 'trailing comma', wrong: parsed },
    { text: '{"a":1}garbage', contentType: json, note: 'JSON followed by garbage', wrong: parsed },
    { text: 'NaN', contentType: json, note: 'NaN', wrong: parsed },
    { text: '\u0000', contentType: json, note: 'a NUL byte', wrong: parsed },
    // Decoded leniently (invalid bytes become U+FFFD) by the body parser: it must not fail, and need not refuse.
    { text: INVALID_UTF8, contentType: json, note: 'invalid UTF-8', wrong: false },
    { text: '['.repeat(100_000) + ']'.repeat(100_000), contentType: json, note: '100 000 nested arrays', wrong: parsed },
    { text: JSON.stringify(deeplyNested(2_000, true)), contentType: json, note: '2 000 nested objects', wrong: parsed },
    { text: `{"x":"${'a'.repeat(1_100_000)}"}`, contentType: json, note: 'a body over 1 MB', wrong: parsed },
    { text: '{"a":"\\u0000"}', contentType: json, note: 'an escaped NUL', wrong: parsed },
    { text: '{"a":"\\ud800"}', contentType: json, note: 'an escaped lone surrogate', wrong: false },
    { text: '{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}}}', contentType: json, note: 'prototype keys', wrong: false },
    { text: '{}', contentType: 'text/plain', note: 'JSON as text/plain', wrong: takesBody },
    { text: '<a/>', contentType: 'application/xml', note: 'XML', wrong: takesBody },
    { text: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded', note: 'a form', wrong: takesBody && !op.route.rawBody?.mediaTypes.includes('application/x-www-form-urlencoded') },
    { text: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n', contentType: 'multipart/form-data; boundary=x', note: 'multipart', wrong: takesBody },
    { text: '{}', contentType: undefined, note: 'a body without Content-Type', wrong: takesBody },
    { text: '{}', contentType: 'application/json; charset=utf-16', note: 'JSON declared UTF-16', wrong: false },
    { text: '{}', contentType: 'application/vnd.api+json', note: 'a JSON flavour', wrong: false },
  ];
  return fc.constantFrom(...cases);
}

function invalidBody(op: Operation): fc.Arbitrary<BodyPart> {
  const schema = op.spec.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined;
  if (!schema || !inputOf(op.route).body) return transportBodies(op);
  const mutated = invalidArbitrary(schema, ctx).map((value): BodyPart => {
    let text: string;
    try {
      text = JSON.stringify(value);
    } catch {
      text = '"unserializable"';
    }
    return { text, contentType: 'application/json', note: `body ${text.slice(0, 120)}`, wrong: classifyBody(op, value) };
  });
  return fc.oneof({ arbitrary: mutated, weight: 3 }, { arbitrary: transportBodies(op), weight: 1 });
}

/* ---------------- headers ---------------- */

const idempotencyKey = fc.stringMatching(/^[\x21-\x7e]{8,60}$/);
const BAD_IDEMPOTENCY_KEYS = ['short', 'seven77', 'x'.repeat(201), 'has a space', 'tab\there12', 'latin1-\u00e9\u00e9\u00e9\u00e9'];

/** Whether the route reads Idempotency-Key (the router's idempotent routes, or the document says so). */
const takesIdempotencyKey = (op: Operation) => (op.spec.parameters as Array<Record<string, any>>).some((p) => p.in === 'header' && p.name === 'Idempotency-Key');

function validHeaders(op: Operation): fc.Arbitrary<Part<Record<string, string>>> {
  const base = { Authorization: `Bearer ${key}` };
  const accept = accepts(op);
  return fc
    .record({
      idem: takesIdempotencyKey(op) ? fc.option(idempotencyKey, { nil: undefined }) : fc.constant(undefined),
      accept: accept.length ? fc.option(fc.constantFrom(...accept, '*/*'), { nil: undefined }) : fc.constant(undefined),
      requestId: fc.option(fc.constantFrom('fuzz-request-1', 'bad id with spaces', 'x'.repeat(300), '%00'), { nil: undefined }),
    })
    .map(({ idem, accept: a, requestId }) => ({
      value: { ...base, ...(idem ? { 'Idempotency-Key': idem } : {}), ...(a ? { Accept: a } : {}), ...(requestId ? { 'X-Request-Id': requestId } : {}) },
      note: 'valid headers',
      wrong: false,
    }));
}

function invalidHeaders(op: Operation): fc.Arbitrary<Part<Record<string, string>>> | undefined {
  const options: Array<fc.Arbitrary<Part<Record<string, string>>>> = [];
  if (takesIdempotencyKey(op)) {
    options.push(fc.constantFrom(...BAD_IDEMPOTENCY_KEYS).map((bad) => ({ value: { Authorization: `Bearer ${key}`, 'Idempotency-Key': bad }, note: `Idempotency-Key ${JSON.stringify(bad.slice(0, 30))}`, wrong: true })));
  }
  if (accepts(op).length) {
    options.push(fc.constantFrom('application/x-nonsense', 'text/html', 'image/png;q=1, */*;q=0').map((a) => ({ value: { Authorization: `Bearer ${key}`, Accept: a }, note: `Accept ${a}`, wrong: false })));
  }
  return options.length ? fc.oneof(...options) : undefined;
}

/** Media types the operation answers 200 in, when it negotiates (more than one). */
function accepts(op: Operation): string[] {
  const types = Object.keys(op.spec.responses?.['200']?.content ?? {});
  return types.length > 1 ? types : [];
}

/* ---------------- requests ---------------- */

function assemble(op: Operation, kind: FuzzCase['kind'], path: Part<string>, query: Part<string>, headers: Part<Record<string, string>>, body: BodyPart): FuzzCase {
  const all = { ...headers.value };
  if (op.operationId === 'stripeWebhook' && typeof body.text === 'string' && kind === 'valid') {
    all['Stripe-Signature'] = stripe.webhooks.generateTestHeaderString({ payload: body.text, secret: WEBHOOK_SECRET });
  }
  if (body.text !== undefined && body.contentType) all['Content-Type'] = body.contentType;
  const wrong = [path, query, headers, body].filter((p) => p.wrong);
  return {
    kind,
    note: wrong.length ? wrong.map((p) => p.note).join('; ') : [path, query, headers, body].map((p) => p.note).join('; '),
    method: op.method,
    path: path.value + query.value,
    headers: all,
    body: body.text,
    mustReject: wrong.length > 0,
  };
}

function caseArbitrary(op: Operation): fc.Arbitrary<FuzzCase> {
  const path = validPath(op);
  const query = validQuery(op);
  const headers = validHeaders(op);
  const body = validBody(op);
  const valid = fc.tuple(path, query, headers, body).map(([p, q, h, b]) => assemble(op, 'valid', p, q, h, b));
  const badPath = invalidPath(op);
  const badHeaders = invalidHeaders(op);
  const invalid = fc.oneof(
    ...[
      badPath && fc.tuple(badPath, query, headers, body).map(([p, q, h, b]) => assemble(op, 'invalid', p, q, h, b)),
      (queryParameters(op).length || op.method === 'GET') && fc.tuple(path, invalidQuery(op), headers, body).map(([p, q, h, b]) => assemble(op, 'invalid', p, q, h, b)),
      badHeaders && fc.tuple(path, query, badHeaders, body).map(([p, q, h, b]) => assemble(op, 'invalid', p, q, h, b)),
      fc.tuple(path, query, headers, invalidBody(op)).map(([p, q, h, b]) => assemble(op, 'invalid', p, q, h, b)),
    ].filter((a): a is fc.Arbitrary<FuzzCase> => Boolean(a)),
  );
  // Only requests that must be refused: an accepted one would start the heavy work.
  if (INVALID_ONLY[op.operationId]) return invalid.filter((c) => c.mustReject);
  return fc.oneof(valid, invalid);
}

/** Everything wrong with one answer; [] when it keeps every promise. */
/**
 * Refusals that store a record by design: a governed write that fails after validation (a stale
 * snapshot, a duplicate key) is kept as one failed write action with its 'failed' log event, so a
 * retry with the same idempotency key gets the same outcome (services/endpoints/source-writes.ts, SPEC 2.9).
 * Nothing else may change: not the table (its catalog snapshots), not any other row.
 */
const AUDITED_REFUSALS: Record<string, readonly string[]> = {
  submitSourceWrite: ['write_action_events', 'write_actions'],
  sparqlQueryPost: ['write_action_events', 'write_actions'],
};

/** The refusal's write action, when the answer names one: it must be stored as failed. */
async function auditedRefusal(op: Operation, res: RawResponse, changed: string[]): Promise<boolean> {
  const allowed = AUDITED_REFUSALS[op.operationId];
  if (!allowed || !changed.every((table) => allowed.includes(table))) return false;
  const actionId = (res.json as { actionId?: string } | undefined)?.actionId;
  if (!actionId) return false;
  const action = await env().db('write_actions').where({ workspace_id: tenant.ws.workspaceId, action_id: actionId }).first('status');
  return action?.status === 'failed';
}

async function violations(op: Operation, c: FuzzCase, res: RawResponse, changed: string[]): Promise<string[]> {
  const out: string[] = [];
  const code = (res.json as { code?: string } | undefined)?.code;
  if (res.status >= 500) {
    const expected = EXPECTED_5XX[op.operationId];
    if (!expected || expected.status !== res.status || expected.code !== code) out.push(`answered ${res.status} ${code ?? ''}`);
  }
  if (res.status >= 400) out.push(...problemFormatViolations(c.method, res));
  if (c.mustReject && res.status < 400) out.push(`accepted (${res.status}) a request its schema refuses`);
  if (res.status >= 400 && changed.length && !(await auditedRefusal(op, res, changed))) out.push(`refused (${res.status} ${code ?? ''}) but changed ${changed.join(', ')}`);
  if (!op.spec.responses[String(res.status)]) out.push(`answered ${res.status} ${code ?? ''}, which the document does not list for ${op.operationId}`);
  return out;
}

const timing = { digestMs: 0, requestMs: 0, requests: 0 };

async function send(c: FuzzCase): Promise<{ res: RawResponse; changed: string[] }> {
  let t = Date.now();
  // Charges earlier requests were answered from a charge lease are written in the background: now,
  // before the digest, so none lands between this request's two digests.
  await env().settledCharges(tenant.ws.workspaceId);
  const before = await digester.take();
  timing.digestMs += Date.now() - t;
  t = Date.now();
  const res = await rawRequest(env().baseUrl, { method: c.method, path: c.path, headers: c.headers, body: c.body });
  timing.requestMs += Date.now() - t;
  timing.requests += 1;
  t = Date.now();
  const after = await digester.take();
  timing.digestMs += Date.now() - t;
  return { res, changed: changedTables(before, after) };
}

/** Per-operation clean-up after each request, where a valid request would change what later requests need. */
async function afterEach(op: Operation): Promise<void> {
  // A valid PUT /api-limits lowers the limits to anything from 1: put them out of the way again.
  if (op.operationId === 'putApiLimits') await raiseRequestLimits(tenant.ws.workspaceId);
}

const stats = new Map<string, Map<string, number>>();

describe('Request fuzzing from the OpenAPI document', function () {
  this.timeout(0);

  before(async function () {
    this.timeout(300_000);
    document = (await request('GET', '/api/v1/openapi.json')).body;
    tenant = await fuzzTenant();
    key = tenant.key;
    // Signed webhooks for this tenant reach its invoices and plan.
    await env().db('workspaces').where({ id: tenant.ws.workspaceId }).update({ stripe_customer_id: 'cus_fuzz' });
    digester = await tenantDigester(process.env.DATABASE_URL as string, [tenant.ws.workspaceId]);
    ctx = { root: document, uuids: tenant.uuids, maxDepth: 5 };
  });

  after(async () => {
    await digester?.close();
    const lines = [...stats].map(([op, counts]) => `  ${op}: ${[...counts].sort().map(([s, n]) => `${s}×${n}`).join(' ')}`);
    if (process.env.FUZZ_STATS === '1') console.log(JSON.stringify(timing));
    if (process.env.FUZZ_STATS === '1') console.log(`statuses by operation (seed ${SEED}, ${RUNS} runs):\n${lines.join('\n')}`);
  });

  it('covers every operation of the document', () => {
    const ops = operations();
    assert.ok(ops.length >= 100, `only ${ops.length} operations in the document`);
  });

  // The document is only known once the server answers: one test per operation is declared from the routes the document is generated from.
  const declared = allRoutes().filter((r) => !r.internal).sort((a, b) => Number(a.method === 'delete') - Number(b.method === 'delete'));
  for (const route of declared) {
    const label = `${route.method.toUpperCase()} ${route.path} (${route.operation.name})`;
    it(label, async function () {
      const op = operations().find((o) => o.operationId === route.operation.name);
      assert.ok(op, `${route.operation.name} is not in the OpenAPI document`);
      const webhook = op.operationId === 'stripeWebhook';
      const saved = { key: process.env.STRIPE_SECRET_KEY, secret: process.env.STRIPE_WEBHOOK_SECRET };
      if (webhook) {
        // Verification is local: a secret key that never reaches Stripe, and a known webhook secret.
        process.env.STRIPE_SECRET_KEY = 'sk_test_fuzz';
        process.env.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET;
      }
      const counts = new Map<string, number>();
      stats.set(op.operationId, counts);
      const seed = seedOf(op.operationId);
      const numRuns = INVALID_ONLY[op.operationId] ? Math.ceil(RUNS / 2) : Math.min(RUNS, BOUNDED_RUNS[op.operationId] ?? RUNS);
      try {
        await fc.assert(
          fc.asyncProperty(caseArbitrary(op), async (c) => {
            const { res, changed } = await send(c);
            await afterEach(op);
            const key = `${c.kind}:${res.status}`;
            counts.set(key, (counts.get(key) ?? 0) + 1);
            const wrong = await violations(op, c, res, changed);
            if (wrong.length) {
              throw new Error(`${c.method} ${c.path.slice(0, 300)} [${c.kind}: ${c.note}]\n  ${wrong.join('\n  ')}\n  answer: ${res.status} ${res.text.slice(0, 400)}`);
            }
          }),
          { seed, numRuns, endOnFailure: process.env.FUZZ_SHRINK !== '1', interruptAfterTimeLimit: 120_000 },
        );
      } catch (error) {
        (error as Error).message = `${label}: reproduce with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS} --grep '${op.operationId}' (operation seed ${seed})\n${(error as Error).message}`;
        throw error;
      } finally {
        if (webhook) {
          if (saved.key === undefined) delete process.env.STRIPE_SECRET_KEY;
          else process.env.STRIPE_SECRET_KEY = saved.key;
          if (saved.secret === undefined) delete process.env.STRIPE_WEBHOOK_SECRET;
          else process.env.STRIPE_WEBHOOK_SECRET = saved.secret;
        }
      }
    });
  }
});
