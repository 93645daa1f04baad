import assert from 'node:assert/strict';
import type { JsonSchema } from '../../core/schema-validator';
import { listCapabilities } from '../../plugins';
import { isCredentialName, looksLikeCredential, targetCredentialProblems } from '../../services/endpoints/target-credentials';

// Secrets never sit in an endpoint's target (any endpoints:read key reads it): names are judged by
// their words, URLs by their query parameter names and userinfo, values by their look.

const SECRET = 'Zq8vN3kLp0XwT7yRb2MhC9dFs4GjA6uE';

const refused: Array<[string, unknown, string]> = [
  ['an X-Api-Key header', { request: { url: 'https://api.example.com/v1/items', headers: { 'X-Api-Key': 'abc' } } }, '/request/headers/X-Api-Key'],
  ['auth_token', { request: { url: 'https://api.example.com/v1/items' }, auth_token: 'abc' }, '/auth_token'],
  ['api_token', { api_token: 'abc' }, '/api_token'],
  ['access_key', { access_key: 'abc' }, '/access_key'],
  ['sig', { request: { query: { sig: 'abc' } } }, '/request/query/sig'],
  ['?api_key= in request.url', { request: { url: `https://api.example.com/v1/items?page=1&api_key=${SECRET}` } }, '/request/url'],
  ['?access_token= in a relative url', { request: { url: '/v1/items?access_token=abc' } }, '/request/url'],
  ['an Authorization header', { request: { headers: { Authorization: `Bearer ${SECRET}` } } }, '/request/headers/Authorization'],
  ['a Bearer value under another name', { request: { headers: { 'X-Custom': `Bearer ${SECRET}` } } }, '/request/headers/X-Custom'],
  ['a JWT value', { note: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' }, '/note'],
  ['a Stripe live key value', { note: 'sk_live_51Habcdefghijklmnop' }, '/note'],
  ['an AWS access key id value', { note: 'AKIAIOSFODNN7EXAMPLE' }, '/note'],
  ['a 32-character random value', { note: SECRET }, '/note'],
  ['user:pass@ in a URL', { request: { url: 'https://user:hunter2@api.example.com/v1/items' } }, '/request/url'],
  ['a password field', { password: 'hunter2' }, '/password'],
  ['a clientSecret field', { oauth: undefined, clientSecret: 'abc' }, '/clientSecret'],
  ['a host setting', { host: 'db.internal' }, '/host'],
  // A bare "key" is how many APIs name theirs (?key=…, Google Maps, YouTube…): short values too.
  ['?key= in request.url', { request: { url: 'https://api.example.com/v1/items?key=abc123' } }, '/request/url'],
  ['key in request.query', { request: { url: 'https://api.example.com/v1/items', query: { key: 'abc123' } } }, '/request/query/key'],
  ['a key field', { key: 'abc123' }, '/key'],
  ['api_key in request.query', { request: { url: 'https://api.example.com/v1/items', query: { api_key: 'abc' } } }, '/request/query/api_key'],
  ['?user_key= in request.url', { request: { url: 'https://api.example.com/v1/items?user_key=abc' } }, '/request/url'],
  ['an X-Key header', { request: { headers: { 'X-Key': 'abc' } } }, '/request/headers/X-Key'],
  ['a Key-Id header', { request: { headers: { 'Key-Id': 'abc' } } }, '/request/headers/Key-Id'],
];

const accepted: Array<[string, unknown]> = [
  ['a managed table', { table: 'orders_2026', primaryKey: ['id'] }],
  ['a managed table with a composite key', { table: 't_58f364a75004aa', primaryKey: ['order_id', 'line_no'] }],
  ['a postgres table', { schema: 'public', table: 'customer_accounts', primaryKeys: ['id'] }],
  ['an http dataset with paging and a window', {
    request: { url: 'http://127.0.0.1:8090/events?sort=created_at&per_page=25', method: 'GET', query: { include: 'lines', sort_key: 'id' } },
    response: { format: 'json', recordsPath: 'data.items' },
    primaryKeys: ['id'],
    pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 25 },
    window: { startParameter: 'since', lookback: 'PT6H' },
  }],
  ['ids, dates and long plain words', { authorId: '9b2f6c1e-3d4a-4b5c-8d7e-1f2a3b4c5d6e', since: '2026-11-24T15:14:12.000Z', description: 'customers_with_a_long_but_entirely_readable_table_name' }],
];

describe('Credentials in endpoint targets', () => {
  for (const [label, target, path] of refused) {
    it(`refuses ${label}, at ${path}, without echoing the value`, () => {
      const problems = targetCredentialProblems(target);
      assert.ok(problems.some((p) => p.path === path), JSON.stringify(problems));
      for (const problem of problems) {
        for (const secret of [SECRET, 'hunter2', 'AKIAIOSFODNN7EXAMPLE', 'sk_live_51Habcdefghijklmnop']) assert.ok(!problem.message.includes(secret), problem.message);
        assert.match(problem.message, /plugin installation/);
      }
    });
  }

  for (const [label, target] of accepted) {
    it(`accepts ${label}`, () => {
      assert.deepEqual(targetCredentialProblems(target), []);
    });
  }

  it('reads names by their words: a key is a credential unless it names a record key (primary, sort…) or a key field', () => {
    for (const name of ['key', 'Key', 'keys', 'apiKey', 'API_KEY', 'x-api-key', 'apikey', 'access_key', 'AccessKeyId', 'subscription-key', 'user_key', 'key_id', 'x-key', 'authToken', 'Cookie', 'oauth_signature']) assert.equal(isCredentialName(name), true, name);
    for (const name of ['primaryKey', 'primaryKeys', 'primary_key', 'keyField', 'key_fields', 'sortKey', 'sort_key', 'partitionKey', 'author', 'authorId', 'pageSizeParameter', 'cursor', 'signal', 'design', 'keyboard', 'monkey']) assert.equal(isCredentialName(name), false, name);
  });

  it('accepts every property a capability’s target schema declares: a structural field is never taken for a credential', () => {
    const declared = (schema: JsonSchema | undefined, at = ''): string[] => {
      const properties = (schema?.properties ?? {}) as Record<string, JsonSchema>;
      return Object.entries(properties).flatMap(([name, inner]) => [`${at}/${name}`, ...declared(inner, `${at}/${name}`), ...declared(inner.items as JsonSchema | undefined, `${at}/${name}/0`)]);
    };
    const checked: string[] = [];
    for (const capability of listCapabilities()) {
      const schema = capability.definition.targetSchema;
      for (const path of declared(schema)) {
        // A target with just this field (and its parents) set to a plain value.
        const target: Record<string, unknown> = {};
        let at: Record<string, unknown> = target;
        const names = path.split('/').slice(1);
        names.forEach((name, i) => {
          if (i === names.length - 1) at[name] = 'id';
          else at = (at[name] = /^\d+$/.test(names[i + 1]) ? [] : {}) as Record<string, unknown>;
        });
        assert.deepEqual(targetCredentialProblems(target, schema), [], `${capability.definition.name} ${path}`);
        checked.push(`${capability.definition.name}${path}`);
      }
    }
    assert.ok(checked.includes('managed_table/primaryKey') && checked.includes('http_dataset/primaryKeys'), checked.join(', '));
  });

  it('judges by the bare-key rule only names the target schema leaves free (query parameters, headers, unknown fields)', () => {
    const schema: JsonSchema = { type: 'object', properties: { keyPrefix: { type: 'string' }, request: { type: 'object', properties: { query: { type: 'object', additionalProperties: { type: 'string' } } } } } };
    assert.deepEqual(targetCredentialProblems({ keyPrefix: 'logs/2026/' }, schema), [], 'a declared field is structural');
    assert.equal(targetCredentialProblems({ keyPrefix: 'logs/2026/' }).length, 1, 'without the schema it is judged by its words');
    assert.equal(targetCredentialProblems({ request: { query: { key: 'abc' } } }, schema).length, 1, 'a query parameter named key is a credential');
    assert.equal(targetCredentialProblems({ password: 'x' }, { type: 'object', properties: { password: { type: 'string' } } }).length, 1, 'declaring a password does not make it structural');
  });

  it('tells random secrets from long readable values', () => {
    assert.equal(looksLikeCredential(SECRET), true);
    assert.equal(looksLikeCredential('9b2f6c1e-3d4a-4b5c-8d7e-1f2a3b4c5d6e'), false, 'a UUID is an id');
    assert.equal(looksLikeCredential('data.results.items.records.values'), false);
    assert.equal(looksLikeCredential('2026-11-24T15:14:12.000Z'), false);
  });
});
