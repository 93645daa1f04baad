import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { DomainError } from '../../../core/errors';
import { readingWithin } from '../../../services/ontology/sparql-reach-reads';
import { env } from '../../support/environment';
import { as } from '../../support/fixtures';
import { customerOntology, OntologyTenant, ontologyTenant, overrideSparqlSettings } from '../../support/ontology';
import { until } from '../../support/polling';

// A query whose client goes away stops: its SQL statement is cancelled, and its evaluation in a
// query thread stops at the next look at its clock, well before its time limit, in the same
// thread (which keeps its stores).

describe('A SPARQL query whose client goes away', function () {
  this.timeout(120_000);

  const sleeping = async (db: Knex) => (await db.raw<{ rows: unknown[] }>(`SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%'`)).rows.length;

  it('has its table read cancelled in PostgreSQL at once', async () => {
    const { db } = env();
    const client = new AbortController();
    const started = Date.now();
    const read = readingWithin(db, { timeoutMs: 120_000, signal: client.signal }, (trx) => trx.raw('SELECT pg_sleep(60)')).then(() => assert.fail('the sleep ended'), (error: unknown) => error);
    await until('the statement to run', async () => (await sleeping(db)) > 0);
    client.abort();
    const error = await read;
    assert.ok(error instanceof DomainError, String(error));
    assert.equal(error.code, 'client_closed_request');
    assert.ok(Date.now() - started < 60_000);
    assert.equal(await sleeping(db), 0, 'the statement no longer runs');
  });

  describe('over HTTP', () => {
    let t: OntologyTenant;
    let restore: () => void;
    before(async () => {
      t = await ontologyTenant();
      await customerOntology(t);
      assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
      // The time limit is far away: a query that stops did so because its client went.
      restore = overrideSparqlSettings({ timeoutMs: 110_000 });
    });
    after(() => restore());

    it('stops its evaluation in its thread, which keeps its graphs and answers the next query', async () => {
      // The API's threads: the query goes through its door.
      const pool = env().apiDependencies.sparqlQueries.pool();
      // A cross product of the package's triples, five ways: far past any limit.
      const endless = 'SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f . ?g ?s ?h . ?i ?u ?j FILTER(STRLEN(CONCAT(STR(?b), STR(?d), STR(?f), STR(?h), STR(?j))) > 0) }';
      const client = new AbortController();
      const sent = fetch(`${env().baseUrl}${t.base}/sparql`, { method: 'POST', headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/sparql-query' }, body: endless, signal: client.signal }).catch((error: unknown) => error);
      const busy = await until('a thread to take the query', () => pool.residency().find((thread) => thread.busy));
      client.abort();
      assert.equal(((await sent) as Error).name, 'AbortError');
      await until('the thread to stop the query', () => !pool.residency()[busy.thread].busy, 30_000);
      // Not replaced (as a query past its limit is): the same thread still holds the package's graph.
      assert.deepEqual(pool.residency()[busy.thread].versions, busy.versions);
      const next = await fetch(`${env().baseUrl}${t.base}/sparql`, { method: 'POST', headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' }, body: 'ASK { ?s ?p ?o }' });
      assert.equal(next.status, 200);
      assert.equal((await next.json() as { boolean: boolean }).boolean, true);
    });
  });
});
