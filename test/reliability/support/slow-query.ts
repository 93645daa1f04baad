import assert from 'node:assert/strict';
import { newKey } from '../../support/fixtures';
import type { HttpResponse } from '../../support/fixtures';
import { bind, customerOntology, OntologyTenant, seededTable } from '../../support/ontology';

/** An HTTP call as a key, to the API process that should serve it (publishing starts a workflow there). */
export type KeyedCall = (key: string, method: string, path: string, body?: unknown) => Promise<HttpResponse>;

/** The rows the slow query answers: the adult customers seeded below, by name. */
export const SLOW_QUERY_ROWS = [{ name: 'Ada', age: 36 }, { name: 'Cy', age: 40 }];

/**
 * A published query that takes seconds of real work, so it runs as an asynchronous job whenever
 * the synchronous budget is short: the adult customers, joined with a count over every chain of
 * four paths along a chain of `chainLength` nodes imported into the ontology (with 100 nodes some
 * 97 million solutions, which no evaluation order avoids; the work grows with the fifth power).
 * Answers the executing key and the path to execute it: POST it with `{ input: { minAge: 18 } }`.
 */
export async function publishSlowQuery(t: OntologyTenant, call: KeyedCall, chainLength = 100): Promise<{ key: string; executePath: string }> {
  const packageId = await customerOntology(t);
  const customers = await seededTable(t, [
    { id: 1, full_name: 'Ada', years: 36 },
    { id: 2, full_name: 'Bob', years: 17 },
    { id: 3, full_name: 'Cy', years: 40 },
  ]);
  await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'full_name', age: 'years' } }, requiredReadPermissions: ['customers.read'] });
  const baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
  assert.equal((await t.client.post(`${t.base}/terms`, { id: 'Node', kind: 'class' })).status, 201);
  assert.equal((await t.client.post(`${t.base}/links`, { id: 'next', from: 'Node', to: 'Node' })).status, 201);
  const chain = Array.from({ length: chainLength }, (_, i) => `<${baseIri}n${i}> a <${baseIri}Node> ; <${baseIri}next> <${baseIri}n${i + 1}> .`).join('\n');
  assert.equal((await t.client.post(`${t.base}/imports/documents?id=chain`, undefined, { rawBody: chain, headers: { 'Content-Type': 'text/turtle' } })).status, 201);
  const compiled = await t.client.post(`${t.base}/compile`, {});
  assert.equal((await t.client.post(`${t.base}/activate`, { packageId: compiled.body.package.id })).status, 200);

  const key = await newKey(t.ws, { scopes: ['queries:read', 'queries:write', 'queries:publish', 'queries:execute'], readPermissions: ['customers.read'] });
  const base = `/api/v1/projects/${t.ws.projectId}`;
  const created = await call(key, 'POST', `${base}/ontology/queries`, {
    name: 'adults',
    sparql: 'SELECT ?name ?age WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age >= ?minAge) { SELECT (COUNT(*) AS ?pairs) WHERE { ?a :next* ?b . ?b :next* ?d . ?d :next* ?e . ?e :next* ?f } } } ORDER BY ?name',
    inputSchema: { type: 'object', additionalProperties: false, required: ['minAge'], properties: { minAge: { type: 'integer', minimum: 0 } } },
    outputSchema: { type: 'object', required: ['name', 'age'], properties: { name: { type: 'string' }, age: { type: 'integer' } } },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const { id, version } = created.body.query;
  const released = await call(key, 'POST', `${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: version.id });
  assert.equal(released.status, 201, JSON.stringify(released.body));
  return { key, executePath: `${base}/queries/${id}/execute` };
}
