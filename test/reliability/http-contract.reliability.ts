import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import fc from 'fast-check';
import { allRoutes } from '../../api/app';
import { inputOf } from '../../api/route-spec';
import { RESULT_TYPES } from '../../services/ontology/sparql-operations';
import { env } from '../support/environment';
import { request } from '../support/fixtures';
import { fuzzTenant, FuzzTenant } from './support/fuzz-tenant';
import { problemFormatViolations, rawRequest, RawResponse } from './support/raw-http';

/**
 * The HTTP contract around the operations:
 *  - every method a path does not serve (OPTIONS, TRACE, HEAD where there is no GET, and methods
 *    no route uses) is a 405 problem with an Allow header listing exactly the served methods —
 *    never a 5xx or 501; a path no route serves is a 404;
 *  - requests node itself refuses (oversized request line, malformed request) still get a problem;
 *  - the OpenAPI document states every request-header constraint the server enforces
 *    (Idempotency-Key, Content-Type, Accept, Stripe-Signature), and each is enforced as stated.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const STANDARD = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];
/** Methods node's parser reads but no Weft route uses (CONNECT is left out: node hands it to a 'connect' listener, never to the app). */
const UNUSED = ['PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'SEARCH', 'REPORT', 'PURGE', 'LINK', 'UNLINK', 'QUERY', 'MERGE', 'NOTIFY', 'SUBSCRIBE', 'ACL', 'BIND', 'MKCALENDAR'];
const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

let document: Record<string, any>;
let tenant: FuzzTenant;
let baseUrl: string;

const toTemplate = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** A concrete path for a template: ids of the tenant where it has one, well-formed values otherwise. */
function concrete(template: string): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => tenant.params[name]?.[0] ?? (name.endsWith('_id') ? randomUUID() : name === 'version' ? '1' : 'Name'));
}

/** Every route path (the document's and the internal ones) as a matcher, with its methods. */
function routeTable(): Array<{ pattern: RegExp; methods: string[] }> {
  const byPath = new Map<string, Set<string>>();
  for (const route of allRoutes()) {
    const set = byPath.get(route.path) ?? new Set<string>();
    set.add(route.method.toUpperCase());
    byPath.set(route.path, set);
  }
  return [...byPath].map(([path, methods]) => ({
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/:([A-Za-z_]+)/g, '[^/]+')}/?$`),
    methods: [...methods],
  }));
}

/** The methods the router serves on a concrete path: every route whose path matches it (GET brings HEAD). */
function servedOn(path: string, table: ReturnType<typeof routeTable>): string[] {
  const methods = new Set(table.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods));
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
}

function expect405(method: string, path: string, served: string[], res: RawResponse): string[] {
  const out: string[] = [];
  if (res.status !== 405) out.push(`${method} ${path}: ${res.status} instead of 405 ${res.text.slice(0, 160)}`);
  const allow = String(res.headers.allow ?? '').split(',').map((m) => m.trim()).filter(Boolean);
  if (allow.join(', ') !== served.join(', ')) out.push(`${method} ${path}: Allow "${allow.join(', ')}" instead of "${served.join(', ')}"`);
  if (res.status === 405) {
    out.push(...problemFormatViolations(method, res).map((v) => `${method} ${path}: ${v}`));
    if (method !== 'HEAD' && (res.json as { code?: string })?.code !== 'method_not_allowed') out.push(`${method} ${path}: code ${(res.json as { code?: string })?.code}`);
  }
  return out;
}

/** Writes raw bytes on a fresh connection and reads the whole answer (the server closes it). */
function rawExchange(bytes: string): Promise<{ status: number; headers: string; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')));
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body: rest.join('\r\n\r\n') });
    });
  });
}

describe('The HTTP contract around the operations', function () {
  this.timeout(300_000);

  before(async function () {
    baseUrl = env().baseUrl;
    document = (await request('GET', '/api/v1/openapi.json')).body;
    tenant = await fuzzTenant();
  });

  describe('methods a path does not serve', () => {
    it('are a 405 problem with an Allow header of the served methods, for every path and every standard method (HEAD, OPTIONS and TRACE included)', async () => {
      const table = routeTable();
      const paths = [...new Set([...Object.keys(document.paths), ...allRoutes().map((r) => toTemplate(r.path))])];
      const wrong: string[] = [];
      let checked = 0;
      for (const template of paths) {
        const path = concrete(template);
        const served = servedOn(path, table);
        assert.ok(served.length, `${path} serves nothing`);
        for (const method of STANDARD.filter((m) => !served.includes(m))) {
          const res = await rawRequest(baseUrl, { method, path, headers: { Authorization: `Bearer ${tenant.key}` } });
          wrong.push(...expect405(method, path, served, res));
          checked += 1;
        }
      }
      assert.ok(checked > 300, `only ${checked} method-path pairs checked`);
      assert.deepEqual(wrong, [], wrong.join('\n'));
    });

    it('are a 405 with Allow for methods no route uses (PROPFIND, QUERY, …), with or without a key, never a 5xx or 501', async () => {
      const table = routeTable();
      const paths = Object.keys(document.paths);
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...paths), fc.constantFrom(...UNUSED), fc.boolean(), async (template, method, withKey) => {
          const path = concrete(template);
          const res = await rawRequest(baseUrl, { method, path, headers: withKey ? { Authorization: `Bearer ${tenant.key}` } : {} });
          const wrong = expect405(method, path, servedOn(path, table), res);
          assert.deepEqual(wrong, [], wrong.join('\n'));
        }),
        { seed: SEED, numRuns: 120 },
      );
    });

    it('leaves a path no route serves a 404 route_not_found problem, whatever the method', async () => {
      for (const method of [...STANDARD, 'PROPFIND']) {
        const res = await rawRequest(baseUrl, { method, path: `/api/v1/no-such-thing/${randomUUID()}` });
        assert.equal(res.status, 404, `${method}: ${res.status}`);
        if (method !== 'HEAD') {
          assert.deepEqual(problemFormatViolations(method, res), []);
          assert.equal((res.json as { code: string }).code, 'route_not_found');
        }
        assert.equal(res.headers.allow, undefined);
      }
    });
  });

  describe('requests node refuses before the app', () => {
    it('answers a request line over the header limit with a 431 problem', async () => {
      const res = await rawExchange(`GET /api/v1/organization?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      assert.equal(res.status, 431, res.headers);
      assert.match(res.headers, /content-type: application\/problem\+json/i);
      const body = JSON.parse(res.body);
      assert.equal(body.status, 431);
      assert.equal(body.code, 'headers_too_large');
      assert.match(res.headers, new RegExp(`x-request-id: ${body.requestId}`, 'i'));
    });

    it('answers a method node cannot read and a malformed request line with a 400 problem', async () => {
      for (const line of ['FROB /api/v1/organization HTTP/1.1', 'GET /api/v1/organization HTTP/9.9', 'GET  HTTP/1.1', '\u0000\u0001\u0002']) {
        const res = await rawExchange(`${line}\r\nHost: x\r\n\r\n`);
        assert.equal(res.status, 400, `${JSON.stringify(line)}: ${res.headers}`);
        const body = JSON.parse(res.body);
        assert.deepEqual([body.status, body.code, typeof body.requestId, typeof body.type, typeof body.title, typeof body.message], [400, 'malformed_request', 'string', 'string', 'string', 'string']);
      }
    });
  });

  describe('request headers in the OpenAPI document', () => {
    const operations = () =>
      Object.entries<Record<string, any>>(document.paths).flatMap(([template, item]) =>
        Object.entries<Record<string, any>>(item).map(([method, op]) => ({ template, method: method.toUpperCase(), op, route: allRoutes().find((r) => r.operation.name === op.operationId)! })),
      );

    it('states Idempotency-Key (8 to 200 visible ASCII characters, with its pattern) on every operation that reads it', () => {
      const readers = operations().filter(({ route }) => route.operation.idempotent || route.headers?.some((h) => h.name === 'Idempotency-Key'));
      assert.ok(readers.length >= 9, `only ${readers.length} operations read Idempotency-Key`);
      for (const { op } of readers) {
        const parameter = op.parameters.find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'Idempotency-Key');
        assert.ok(parameter, `${op.operationId} does not document Idempotency-Key`);
        assert.deepEqual({ ...parameter.schema }, { type: 'string', minLength: 8, maxLength: 200, pattern: '^[\\x21-\\x7e]{8,200}$' }, op.operationId);
        assert.ok(op.responses['422'], `${op.operationId} does not document the 422 of a bad key`);
      }
      // sparqlQueryPost reads it in its handler: it must be documented there too.
      assert.ok(readers.some(({ op }) => op.operationId === 'sparqlQueryPost'));
    });

    it('enforces Idempotency-Key exactly as documented, on a router-idempotent and a handler-read operation', async () => {
      const spec = document.paths['/api/v1/projects/{project_id}/pipelines/{pipeline_id}/execute'].post.parameters.find((p: { name: string }) => p.name === 'Idempotency-Key').schema;
      const documented = (value: string) => value.length >= spec.minLength && value.length <= spec.maxLength && new RegExp(spec.pattern).test(value);
      // Printable ASCII, space, tab and Latin-1 (what a client can put in a header); node trims the ends (they are not part of a field value).
      const char = fc.oneof({ arbitrary: fc.integer({ min: 0x21, max: 0x7e }), weight: 8 }, { arbitrary: fc.constantFrom(0x20, 0x09, 0xa0, 0xe9, 0xff), weight: 1 }).map((c) => String.fromCharCode(c));
      const value = fc.oneof(fc.string({ unit: char, minLength: 1, maxLength: 12 }), fc.string({ unit: char, minLength: 190, maxLength: 210 }), fc.string({ unit: char, minLength: 8, maxLength: 40 })).map((v) => v.trim()).filter((v) => v.length > 0);
      const P = `/api/v1/projects/${tenant.ws.projectId}`;
      await fc.assert(
        fc.asyncProperty(value, fc.boolean(), async (key, sparql) => {
          // A pipeline that does not exist: a good key gets the 404, a bad one the 422 first; nothing starts either way.
          const res = sparql
            ? await rawRequest(baseUrl, { method: 'POST', path: `${P}/ontology/sparql`, headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/sparql-query', 'Idempotency-Key': key }, body: 'ASK { ?s ?p ?o }' })
            : await rawRequest(baseUrl, { method: 'POST', path: `${P}/pipelines/${randomUUID()}/execute`, headers: { Authorization: `Bearer ${tenant.key}`, 'Idempotency-Key': key } });
          const code = (res.json as { code?: string } | undefined)?.code;
          if (documented(key)) assert.notEqual(code, 'invalid_idempotency_key', `${JSON.stringify(key)} is documented as valid`);
          else assert.deepEqual([res.status, code], [422, 'invalid_idempotency_key'], `${JSON.stringify(key)} is documented as invalid: ${res.status} ${res.text.slice(0, 200)}`);
          assert.equal(res.status < 500, true);
        }),
        { seed: SEED, numRuns: 80 },
      );
    });

    it('states the body media types (Content-Type) and their 415, and answers another media type with a 415 problem', async () => {
      for (const { op, route, method, template } of operations().filter(({ route: r }) => inputOf(r).body || r.rawBody)) {
        const types = Object.keys(op.requestBody?.content ?? {});
        assert.deepEqual(types, inputOf(route).body ? ['application/json'] : [...route.rawBody!.mediaTypes], op.operationId);
        assert.ok(op.responses['415'], `${op.operationId} does not document 415`);
        const res = await rawRequest(baseUrl, { method, path: concrete(template), headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/x-not-a-type' }, body: 'x' });
        // The project, path and query checks come first (the webhook needs a signature): any other answer is the 415.
        const earlier = [404, 400, 503].includes(res.status) || (res.status === 422 && ['path', 'query string'].includes((res.json as { part?: string }).part ?? ''));
        if (!earlier) assert.equal(res.status, 415, `${op.operationId}: ${res.status} ${res.text.slice(0, 200)}`);
        assert.deepEqual(problemFormatViolations(method, res), [], op.operationId);
      }
    });

    it('states what Accept chooses (each media type, and 406), and answers an unacceptable Accept with a 406 problem', async () => {
      const P = `/api/v1/projects/${tenant.ws.projectId}`;
      for (const path of ['/api/v1/projects/{project_id}/ontology/sparql']) {
        for (const method of ['get', 'post']) {
          const op = document.paths[path][method];
          assert.deepEqual(Object.keys(op.responses['200'].content), RESULT_TYPES, `${op.operationId} lists its result media types one by one`);
          assert.ok(op.responses['406'], `${op.operationId} does not document 406`);
        }
      }
      const pkg = document.paths['/api/v1/projects/{project_id}/ontology/packages/{package_id}'].get;
      assert.deepEqual(Object.keys(pkg.responses['200'].content), ['application/json', 'text/turtle', 'application/n-quads']);
      assert.ok(pkg.responses['406'], 'getOntologyPackage does not document 406');

      const headers = { Authorization: `Bearer ${tenant.key}`, Accept: 'image/png' };
      for (const res of [
        await rawRequest(baseUrl, { method: 'GET', path: `${P}/ontology/sparql?query=${encodeURIComponent('ASK { ?s ?p ?o }')}`, headers }),
        await rawRequest(baseUrl, { method: 'POST', path: `${P}/ontology/sparql`, headers: { ...headers, 'Content-Type': 'application/sparql-query' }, body: 'SELECT * WHERE { ?s ?p ?o } LIMIT 1' }),
        await rawRequest(baseUrl, { method: 'GET', path: `${P}/ontology/packages/${tenant.params.package_id[0]}`, headers }),
      ]) {
        assert.equal(res.status, 406, res.text.slice(0, 300));
        assert.deepEqual(problemFormatViolations('GET', res), []);
      }
    });

    it('states Stripe-Signature on the webhook, and refuses a request without it with a 400 problem that changes nothing', async () => {
      const op = document.paths['/api/v1/billing/stripe-webhook'].post;
      const parameter = op.parameters.find((p: { in: string; name: string }) => p.in === 'header' && p.name === 'Stripe-Signature');
      assert.ok(parameter?.required, 'Stripe-Signature is not a required header parameter');
      assert.ok(op.responses['400'] && op.responses['503']);
      const saved = { key: process.env.STRIPE_SECRET_KEY, secret: process.env.STRIPE_WEBHOOK_SECRET };
      process.env.STRIPE_SECRET_KEY = 'sk_test_contract';
      process.env.STRIPE_WEBHOOK_SECRET = 'whsec_contract';
      try {
        const event = JSON.stringify({ id: `evt_${randomUUID()}`, object: 'event', type: 'invoice.paid', data: { object: { id: 'in_x', customer: 'cus_none' } } });
        for (const signature of [undefined, '', 't=1,v1=00', 'garbage']) {
          const res = await rawRequest(baseUrl, { method: 'POST', path: '/api/v1/billing/stripe-webhook', headers: { 'Content-Type': 'application/json', ...(signature === undefined ? {} : { 'Stripe-Signature': signature }) }, body: event });
          assert.equal(res.status, 400, `${JSON.stringify(signature)}: ${res.text}`);
          assert.equal((res.json as { code: string }).code, 'invalid_signature');
          assert.deepEqual(problemFormatViolations('POST', res), []);
        }
      } finally {
        for (const [name, value] of [['STRIPE_SECRET_KEY', saved.key], ['STRIPE_WEBHOOK_SECRET', saved.secret]] as const) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      }
    });

    it('names no header parameter OpenAPI ignores (Accept, Content-Type, Authorization): those constraints live in content, responses and security', () => {
      for (const { op } of operations()) {
        for (const parameter of op.parameters.filter((p: { in: string }) => p.in === 'header')) {
          assert.ok(!['accept', 'content-type', 'authorization'].includes(String(parameter.name).toLowerCase()), `${op.operationId} documents ${parameter.name} as a parameter`);
        }
      }
    });
  });
});
