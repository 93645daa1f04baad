import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation } from '../../../db/models';
import { findCapability } from '../../../plugins';
import { capabilityContext } from '../../../services/endpoints/data-endpoints';
import { qualified, workspaceSchema } from '../../../plugins/managed-table/storage';
import { env } from '../../support/environment';
import { as, request } from '../../support/fixtures';
import { activeOntology, bind, OntologyTenant, ontologyTenant, overrideSparqlSettings, seededTable } from '../../support/ontology';
import { scrape, total } from '../../support/prometheus';

// Bound managed tables larger than the reach bound (WEFT_SPARQL_MAX_REACHED_TRIPLES, set low
// here): a query its first solutions answer (LIMIT with no ORDER BY, aggregate or DISTINCT over
// one triple pattern or one subject's star, ASK) reads pages of records until it has them, and
// its answer is a valid one (each row a row of the answer over every record, as many as that
// answer allows); a query that still reaches a table whole past the bound is refused from
// PostgreSQL's count of its triples, before any record is read.

const BOUND = 200;
const OFFERS = 300;
const VENDORS = 20;
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const OFFER = (id: number) => `https://ex.test/offers/${id}`;
const VENDOR = (id: number) => `https://ex.test/vendors/${id}`;

const offers = Array.from({ length: OFFERS }, (_, id) => ({
  id,
  price: id % 7 === 0 ? null : id * 1.5,
  label: `offer ${id}`,
  tags: id % 3 === 0 ? ['a', 'b', 'a'] : id % 3 === 1 ? 'single' : [],
  vendor: id % VENDORS,
  // Only three offers have it: a pattern over it reads every offer before its LIMIT is met.
  ...(id % 100 === 50 ? { rare: id } : {}),
}));
const vendors = Array.from({ length: VENDORS }, (_, id) => ({ id, name: `vendor ${id}` }));
/** The triples the mapping makes of the offers: the type, one per value or element, the link. */
const offerTriples = offers.reduce((sum, offer) => sum + 1 + (offer.price === null ? 0 : 1) + 1 + (Array.isArray(offer.tags) ? offer.tags.length : 1) + 1 + (offer.rare === undefined ? 0 : 1), 0);

type JsonTerm = { type: string; value: string; datatype?: string; 'xml:lang'?: string };
const termText = (term: JsonTerm) => (term.type === 'uri' ? `<${term.value}>` : `${JSON.stringify(term.value)}^^<${term.datatype ?? `${XSD}string`}>`);

describe('SPARQL over bound tables past the reach bound: first solutions and refusals that read nothing', function () {
  this.timeout(120_000);
  let t: OntologyTenant;
  let prefixes: string;
  let offersTable: string;

  const post = async (text: string, accept = 'application/sparql-results+json') => {
    const res = await request('POST', `${t.base}/sparql`, { key: t.key, rawBody: `${prefixes}${text}`, headers: { 'Content-Type': 'application/sparql-query', Accept: accept } });
    return { status: res.status, body: res.body, triples: Number(res.headers.get('weft-dataset-triples')) };
  };
  const rowsOf = (body: { results: { bindings: Array<Record<string, JsonTerm>> } }) => body.results.bindings.map((row) => Object.keys(row).sort().map((name) => `${name}=${termText(row[name])}`).join(' '));
  const triplesOf = (body: string) => String(body).split('\n').map((line) => line.trim()).filter(Boolean);
  /** The answer over every record: tables read whole, under the default bounds. */
  const whole = async (text: string, accept?: string) => {
    const restore = overrideSparqlSettings({ tableReads: 'whole' });
    try {
      const answer = await post(text, accept);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer;
    } finally {
      restore();
    }
  };
  /** Every item of `part` is one of `all`, no more often than there. */
  const within = (part: string[], all: string[], text: string) => {
    const left = new Map<string, number>();
    for (const item of all) left.set(item, (left.get(item) ?? 0) + 1);
    for (const item of part) {
      assert.ok((left.get(item) ?? 0) > 0, `${item} is not an answer over every record\n${text}`);
      left.set(item, left.get(item)! - 1);
    }
  };
  const recordsRead = async () => total((await scrape(env().metricsUrl)).samples, 'weft_sparql_records_read_total');
  /** Records read into the API to reach a table (not the pages of a query answered by its first solutions). */
  const tableRecordsRead = async () => {
    const { samples } = await scrape(env().metricsUrl);
    return total(samples, 'weft_sparql_records_read_total', { read: 'whole' }) + total(samples, 'weft_sparql_records_read_total', { read: 'per_query' });
  };
  const appendOffer = async (row: Record<string, unknown>) => {
    const { target } = (await t.client.get(`/api/v1/data-endpoints/${offersTable}`)).body.dataEndpoint;
    const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().dependencies()), target, { operation: 'append', rows: [row], provenance: { kind: 'write', id: randomUUID() } } as never);
  };
  let packageTriples: number;

  before(async () => {
    t = await ontologyTenant();
    const packageId = await activeOntology(t, {
      terms: [
        { id: 'Offer', kind: 'class' },
        { id: 'Vendor', kind: 'class' },
        { id: 'price', kind: 'property', domain: 'Offer', datatype: 'xsd:decimal' },
        { id: 'label', kind: 'property', domain: 'Offer', datatype: 'xsd:string' },
        { id: 'tag', kind: 'property', domain: 'Offer', datatype: 'xsd:string' },
        { id: 'rare', kind: 'property', domain: 'Offer', datatype: 'xsd:integer' },
        { id: 'name', kind: 'property', domain: 'Vendor', datatype: 'xsd:string' },
      ],
      links: [{ id: 'vendor', from: 'Offer', to: 'Vendor' }],
    });
    prefixes = `PREFIX : <${(await t.client.get(t.base)).body.ontology.baseIri}>\n`;
    offersTable = await seededTable(t, offers, ['id']);
    const vendorsTable = await seededTable(t, vendors, ['id']);
    // Offers first: a query over both reaches the offers' table first.
    await bind(t, { ontologyPackageId: packageId, termId: 'Offer', dataEndpointId: offersTable, mapping: { subjectTemplate: 'https://ex.test/offers/{id}', properties: { price: 'price', label: 'label', tag: 'tags', rare: 'rare' }, links: { vendor: { field: 'vendor', targetTemplate: 'https://ex.test/vendors/{vendor}' } } } });
    await bind(t, { ontologyPackageId: packageId, termId: 'Vendor', dataEndpointId: vendorsTable, mapping: { subjectTemplate: 'https://ex.test/vendors/{id}', properties: { name: 'name' } } });
    // Statistics as autovacuum would keep them: tables this small are evaluated, not answered in SQL.
    for (const endpoint of [offersTable, vendorsTable]) {
      const { table } = (await t.client.get(`/api/v1/data-endpoints/${endpoint}`)).body.dataEndpoint.target;
      await env().db.raw(`ANALYZE ${qualified(workspaceSchema(t.ws.workspaceId), table)}`);
    }
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    packageTriples = (await post(`SELECT ?p ?o WHERE { <urn:none> ?p ?o }`)).triples;
  });

  it('answers LIMIT and ASK queries its first solutions fix, reading a few pages, each row a row of the answer over every record', async () => {
    const restore = overrideSparqlSettings({ maxReachedTriples: BOUND });
    try {
      const cases: Array<{ text: string; all: string; limit: number; offset?: number }> = [
        { text: `SELECT * WHERE { ?s ?p ?o } LIMIT 10`, all: `SELECT * WHERE { ?s ?p ?o }`, limit: 10 },
        { text: `SELECT ?o WHERE { ?o a :Offer } LIMIT 5`, all: `SELECT ?o WHERE { ?o a :Offer }`, limit: 5 },
        { text: `SELECT ?s ?p WHERE { ?s :price ?p } LIMIT 7 OFFSET 3`, all: `SELECT ?s ?p WHERE { ?s :price ?p }`, limit: 7, offset: 3 },
        { text: `SELECT ?s ?t WHERE { ?s :tag ?t } LIMIT 12`, all: `SELECT ?s ?t WHERE { ?s :tag ?t }`, limit: 12 },
        { text: `SELECT ?s ?p ?l ?v WHERE { ?s :price ?p ; :label ?l ; :vendor ?v } LIMIT 6`, all: `SELECT ?s ?p ?l ?v WHERE { ?s :price ?p ; :label ?l ; :vendor ?v }`, limit: 6 },
        { text: `SELECT ?s ?t WHERE { ?s :tag ?t ; :tag "a" } LIMIT 4`, all: `SELECT ?s ?t WHERE { ?s :tag ?t ; :tag "a" }`, limit: 4 },
        { text: `SELECT ?s WHERE { ?s :vendor <${VENDOR(3)}> } LIMIT 4`, all: `SELECT ?s WHERE { ?s :vendor <${VENDOR(3)}> }`, limit: 4 },
        { text: `SELECT ?p ?o WHERE { <${OFFER(42)}> ?p ?o } LIMIT 3`, all: `SELECT ?p ?o WHERE { <${OFFER(42)}> ?p ?o }`, limit: 3 },
        // Three offers have it: every offer is read, and the answer is the whole one (nothing past the bound is kept).
        { text: `SELECT ?s ?r WHERE { ?s :rare ?r } LIMIT 10`, all: `SELECT ?s ?r WHERE { ?s :rare ?r }`, limit: 10 },
      ];
      for (const { text, all, limit, offset = 0 } of cases) {
        const expected = rowsOf((await whole(all)).body);
        const answer = await post(text);
        assert.equal(answer.status, 200, `${text}\n${JSON.stringify(answer.body)}`);
        const rows = rowsOf(answer.body);
        assert.equal(rows.length, Math.min(limit, Math.max(0, expected.length - offset)), `${text}\n${rows.join('\n')}`);
        within(rows, expected, text);
        assert.ok(answer.triples - packageTriples <= BOUND, `${text}: read ${answer.triples - packageTriples} triples of records`);
        // The same text again reads nothing new and answers the same.
        const before = await recordsRead();
        assert.deepEqual(rowsOf((await post(text)).body), rows);
        assert.equal(await recordsRead(), before, `${text}: the records read are kept`);
      }
      const first = await post(`SELECT * WHERE { ?s ?p ?o } LIMIT 10 # once more`);
      assert.ok(first.triples - packageTriples < 50, `LIMIT 10 read ${first.triples - packageTriples} triples of ${offerTriples + 2 * VENDORS}`);

      // A large slice of tables under the bound is read as before: the same slice as over every record, no page read.
      const pagesRead = async () => total((await scrape(env().metricsUrl)).samples, 'weft_sparql_records_read_total', { read: 'first_solutions' });
      const pages = await pagesRead();
      const underBound = `SELECT ?v ?n WHERE { ?v :name ?n } LIMIT 1001`;
      const read = await post(underBound);
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.deepEqual(rowsOf(read.body), rowsOf((await whole(underBound)).body));
      assert.equal(await pagesRead(), pages, `${underBound}: its table is under the bound`);
      // A small slice reads its first records whatever the tables' size: no whole graph for LIMIT 5.
      const smallSlice = `SELECT ?v ?n WHERE { ?v :name ?n } LIMIT 5 # a small slice`;
      const small = await post(smallSlice);
      assert.equal(small.status, 200, JSON.stringify(small.body));
      assert.equal(rowsOf(small.body).length, 5);
      within(rowsOf(small.body), rowsOf((await whole(underBound)).body), smallSlice);
      assert.ok((await pagesRead()) > pages, `${smallSlice}: read a page of first records`);
      assert.ok(small.triples - packageTriples < 2 * VENDORS, `${smallSlice} read ${small.triples - packageTriples} triples of records, fewer than the vendors' ${2 * VENDORS}`);
      // An ASK's answer is the same whichever solution is found: its first records are read under the bound too, and no whole graph built.
      const askUnder = await post(`ASK { ?v :name ?n } # under the bound`);
      assert.equal(askUnder.status, 200, JSON.stringify(askUnder.body));
      assert.equal(askUnder.body.boolean, true);
      assert.ok((await pagesRead()) > pages, 'the ASK read a page of first records');
      assert.ok(askUnder.triples - packageTriples < VENDORS, `the ASK read ${askUnder.triples - packageTriples} triples of records, fewer than the vendors' ${2 * VENDORS}`);

      const construct = `CONSTRUCT { ?s <urn:price> ?p } WHERE { ?s :price ?p } LIMIT 4`;
      const built = await post(construct, 'application/n-triples');
      assert.equal(built.status, 200, String(built.body));
      const allBuilt = triplesOf((await whole(`CONSTRUCT { ?s <urn:price> ?p } WHERE { ?s :price ?p }`, 'application/n-triples')).body);
      assert.equal(triplesOf(built.body).length, 4);
      within(triplesOf(built.body), allBuilt, construct);

      for (const [text, expected] of [
        [`ASK { ?s ?p ?o }`, true],
        [`ASK { ?s :price ?p }`, true],
        [`ASK { ?s :rare 250 }`, true],
        [`ASK { ?s :label "no such offer" }`, false],
        [`ASK { ?s :rare 251 }`, false],
        [`ASK { <${OFFER(7)}> :price ?p }`, false],
        // After an OFFSET, a solution must be left past it: the first one found is not enough.
        [`ASK { ?s :price ?p } OFFSET 5`, true],
        [`ASK { ?s :rare ?r } OFFSET 2`, true],
        [`ASK { ?s :rare ?r } OFFSET 3`, false],
      ] as const) {
        const answer = await post(text);
        assert.equal(answer.status, 200, `${text}\n${JSON.stringify(answer.body)}`);
        assert.equal(answer.body.boolean, expected, text);
        assert.equal((await whole(text)).body.boolean, expected, `${text} over every record`);
      }
    } finally {
      restore();
    }
  });

  it('refuses a query that reaches a table whole past the bound from PostgreSQL’s count, reading no record, and reads a table under it as before', async () => {
    const { table } = (await t.client.get(`/api/v1/data-endpoints/${offersTable}`)).body.dataEndpoint.target;
    // A new snapshot: the whole graph the answers above built is not the current one.
    const added = { id: OFFERS, price: 1, label: 'added', tags: ['x', 'y'], vendor: 1 };
    await appendOffer(added);
    const triples = offerTriples + 1 + 1 + 1 + 2 + 1;
    // Every record at most: PostgreSQL counts them all, and the count is exact.
    const restore = overrideSparqlSettings({ maxReachedTriples: 2 * OFFERS });
    try {
      for (const text of [
        `SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }`,
        `SELECT * WHERE { ?s ?p ?o } ORDER BY ?s LIMIT 10`,
        `SELECT DISTINCT ?p WHERE { ?s ?p ?o } LIMIT 10`,
        `SELECT ?o WHERE { ?o a :Offer }`,
        `SELECT ?s ?l WHERE { ?s :label ?l OPTIONAL { ?s :rare ?r } } LIMIT 5`,
        // A star whose LIMIT single records do not meet: its pages are read (three records), then it is read as any other query.
        `SELECT ?s WHERE { ?s :rare ?r ; :label ?l } LIMIT 10`,
      ]) {
        for (const attempt of ['', ' # again']) {
          const before = await tableRecordsRead();
          const started = Date.now();
          const refused = await post(`${text}${attempt}`);
          assert.equal(refused.status, 422, `${text}\n${JSON.stringify(refused.body)}`);
          assert.equal(refused.body.code, 'query_too_broad');
          assert.equal(refused.body.table, table);
          assert.equal(refused.body.maxReachedTriples, 2 * OFFERS);
          assert.equal(refused.body.reachedTriples, triples, 'PostgreSQL counted every triple the offers make');
          assert.equal(refused.body.reachedTriplesIsLowerBound, false);
          assert.match(refused.body.message, new RegExp(`yields ${triples.toLocaleString('en')} triples`));
          assert.equal(await tableRecordsRead(), before, `${text}${attempt}: refused without reading a record`);
          if (process.env.SPARQL_FIRST_TRACE) process.stderr.write(`    refused in ${Date.now() - started} ms: ${text}${attempt}\n`);
        }
      }
      // The vendors' table is under the bound: counted, then read, and answered as over every record.
      const vendorsOnly = `SELECT (COUNT(*) AS ?n) WHERE { ?s a :Vendor ; ?p ?o }`;
      const answered = await post(vendorsOnly);
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(answered.body.results.bindings[0].n.value, String(2 * VENDORS));
      assert.deepEqual(answered.body, (await whole(vendorsOnly)).body);
    } finally {
      restore();
    }
    // Fewer triples than records in the bound: PostgreSQL counts the records up to it, a lower bound past it.
    await appendOffer({ ...added, id: OFFERS + 1 });
    const lower = overrideSparqlSettings({ maxReachedTriples: OFFERS / 3 });
    try {
      const before = await tableRecordsRead();
      const refused = await post(`SELECT ?o WHERE { ?o a :Offer } # a lower bound`);
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.reachedTriplesIsLowerBound, true);
      assert.ok(refused.body.reachedTriples > OFFERS / 3 && refused.body.reachedTriples < triples, JSON.stringify(refused.body));
      assert.match(refused.body.message, /yields at least [\d,]+ triples/);
      assert.equal(await tableRecordsRead(), before, 'refused without reading a record');
    } finally {
      lower();
    }
  });
});
