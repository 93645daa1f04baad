import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { EXECUTION_DEFAULTS } from '../../../services/ontology/query-execution';
import { acceptAndSignInPage, browserPages, invite, Person, guideScreenshot } from '../../support/console';
import { env } from '../../support/environment';
import { as, newKey } from '../../support/fixtures';
import { bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../../support/ontology';

// The Queries page: its executions are the execute operation itself, so its rows, its pages, its
// refusals and its jobs are those of POST /api/v1/projects/{id}/queries/{id}/execute.

const QUERY_SCOPES = ['queries:read', 'queries:write', 'queries:publish', 'queries:execute'];
const CUSTOMERS = [
  { id: 1, full_name: 'Ada', years: 36 },
  { id: 2, full_name: 'Bob', years: 17 },
  { id: 3, full_name: 'Cy', years: 40 },
  { id: 4, full_name: 'Dee', years: 50 },
  { id: 5, full_name: 'Eve', years: 29 },
];
/** Two parameters, both required: an integer with a minimum and a number. */
const BETWEEN = {
  sparql: 'SELECT ?name ?age WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age >= ?minAge && ?age <= ?maxAge) } ORDER BY ?name',
  inputSchema: { type: 'object', additionalProperties: false, required: ['minAge', 'maxAge'], properties: { minAge: { type: 'integer', minimum: 0 }, maxAge: { type: 'number', description: 'The oldest age listed.' } } },
  outputSchema: { type: 'object', required: ['name', 'age'], properties: { name: { type: 'string' }, age: { type: 'integer' } } },
};
/** A cell as the page shows it: strings as they are, other values as JSON. */
const cellText = (value: unknown) => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));

describe('The console Queries page in headless Chromium', function () {
  this.timeout(600_000);
  const browsing = browserPages();
  let t: OntologyTenant;
  let author: ReturnType<typeof as>;
  /** A key that only executes queries, as a consumer over HTTP would. */
  let consumer: ReturnType<typeof as>;
  let base: string;

  async function publish(name: string, definition: Record<string, unknown>): Promise<string> {
    const created = await author.post(`${base}/ontology/queries`, { name, ...definition });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const release = await author.post(`${base}/ontology/queries/${created.body.query.id}/releases`, { expectedQueryVersionId: created.body.query.version.id });
    assert.equal(release.status, 201, JSON.stringify(release.body));
    return created.body.query.id;
  }

  /** Signs in a new person of this role and opens the query's page from the Queries page. */
  async function openQuery(p: Page, role: 'admin' | 'member', name: string, queryId: string): Promise<Person> {
    const person = await invite(t.ws.workspaceId, role);
    await acceptAndSignInPage(p, person);
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Queries' }).click();
    await p.getByRole('table', { name: 'Queries' }).getByRole('link', { name }).click();
    await p.getByRole('heading', { name: `Query ${name}` }).waitFor();
    assert.equal(new URL(p.url()).pathname, `/console/queries/${queryId}`);
    return person;
  }

  /** Fills the form's fields (by their labels) and executes. */
  async function execute(p: Page, input: Record<string, string>, options: { release?: string; rowsPerPage?: string } = {}): Promise<void> {
    const form = p.getByRole('form', { name: 'Execute query' });
    for (const [name, value] of Object.entries(input)) await form.getByLabel(name).fill(value);
    if (options.rowsPerPage) await form.getByLabel('Rows per page').fill(options.rowsPerPage);
    if (options.release) await form.getByLabel('Release').selectOption(options.release);
    await form.getByRole('button', { name: 'Execute' }).click();
  }

  async function assertShows(p: Page, data: Array<Record<string, unknown>>): Promise<void> {
    const table = p.getByRole('table', { name: 'Results' });
    const columns = await table.locator('thead th').allTextContents();
    assert.deepEqual(columns, ['name', 'age'], 'the output contract’s fields, in its order');
    const rows: string[][] = [];
    for (const row of await table.locator('tbody tr').all()) rows.push(await row.locator('td').allTextContents());
    assert.deepEqual(rows, data.map((row) => columns.map((column) => cellText(row[column]))));
  }

  /** What the page shows a refusal as: the problem's message and code, as over HTTP. */
  async function assertRefusal(p: Page, label: string, refusal: { status: number; body: { code: string; message: string } }, code: string): Promise<void> {
    assert.equal(refusal.body.code, code, JSON.stringify(refusal.body));
    // Waits for this refusal's own message: an alert of the same code from the action before may
    // still be shown until the page has the new answer.
    const alert = p.getByRole('alert', { name: label }).filter({ hasText: `${refusal.body.message} (${code})` });
    await alert.waitFor();
    assert.equal(await alert.textContent(), `${refusal.body.message} (${refusal.body.code})`);
  }

  before(async () => {
    t = await ontologyTenant();
    const packageId = await customerOntology(t);
    const customers = await seededTable(t, CUSTOMERS);
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'full_name', age: 'years' } } });
    author = as(await newKey(t.ws, { scopes: QUERY_SCOPES }));
    consumer = as(await newKey(t.ws, { scopes: ['queries:execute'] }));
    base = `/api/v1/projects/${t.ws.projectId}`;
  });

  it('a member executes a release through a form of its contract: the rows and pages POST …/execute answers a key, a bad input’s code, and no retiring', async () => {
    const p = browsing.page;
    const id = await publish('between', BETWEEN);
    const member = await openQuery(p, 'member', 'between', id);

    // One labelled, typed field per parameter of the contract, the required ones marked.
    const form = p.getByRole('form', { name: 'Execute query' });
    const fields = form.getByRole('group', { name: 'Input' }).locator('label');
    assert.deepEqual(await fields.allTextContents(), ['minAge (integer, required)', 'maxAge (number, required)The oldest age listed.']);
    for (const name of ['minAge', 'maxAge']) {
      assert.equal(await form.getByLabel(name).getAttribute('type'), 'number');
      assert.equal(await form.getByLabel(name).getAttribute('aria-required'), 'true');
    }
    assert.equal(await form.getByLabel('minAge').getAttribute('step'), '1');
    assert.equal(await form.getByLabel('maxAge').getAttribute('step'), 'any');

    // Two rows a page: the first page, then the next, each the page the execute route answers a key.
    await execute(p, { minAge: '18', maxAge: '45.5' }, { rowsPerPage: '2' });
    const status = p.getByRole('status', { name: 'Execution status' });
    await status.filter({ hasText: 'Release 1 · page 1 · 2 rows' }).waitFor();
    await guideScreenshot(p, 'query-execute');
    const first = await consumer.post(`${base}/queries/${id}/execute`, { input: { minAge: 18, maxAge: 45.5 }, options: { limit: 2 } });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.data, [{ name: 'Ada', age: 36 }, { name: 'Cy', age: 40 }]);
    await assertShows(p, first.body.data);
    await p.getByRole('button', { name: 'Next page' }).click();
    await status.filter({ hasText: 'page 2 · 1 rows' }).waitFor();
    const second = await consumer.post(`${base}/queries/${id}/execute`, { input: { minAge: 18, maxAge: 45.5 }, options: { limit: 2, offset: 2 } });
    assert.deepEqual(second.body.data, [{ name: 'Eve', age: 29 }]);
    await assertShows(p, second.body.data);
    assert.equal(await p.getByRole('button', { name: 'Next page' }).isDisabled(), true);
    await p.getByRole('button', { name: 'Previous page' }).click();
    await status.filter({ hasText: 'page 1 · 2 rows' }).waitFor();
    await assertShows(p, first.body.data);

    // The executions are the member's, without a key, and metered to them.
    const executions = await as(t.ws.apiKey).get(`/api/v1/query-executions?queryId=${id}`);
    const mine = executions.body.queryExecutions.filter((e: { apiKeyId: string | null }) => e.apiKeyId === null);
    assert.equal(mine.length, 3, JSON.stringify(executions.body));
    assert.ok(mine.every((e: { memberId: string; status: string }) => e.memberId === member.memberId && e.status === 'succeeded'), JSON.stringify(mine));

    // A bad input is the execute route's own 422: its message and code in the page, as over HTTP.
    await execute(p, { minAge: '-1', maxAge: '45' });
    await assertRefusal(p, 'Execution error', await consumer.post(`${base}/queries/${id}/execute`, { input: { minAge: -1, maxAge: 45 } }), 'input_invalid');
    await execute(p, { minAge: '18', maxAge: '' });
    await assertRefusal(p, 'Execution error', await consumer.post(`${base}/queries/${id}/execute`, { input: { minAge: 18 } }), 'input_invalid');

    // A member may not retire (queries:publish): the same refusal as a key without that scope.
    await p.getByRole('button', { name: 'Retire release 1' }).click();
    await p.getByRole('dialog').getByRole('button', { name: 'Retire' }).click();
    await assertRefusal(p, 'Release error', await consumer.patch(`${base}/ontology/queries/${id}/releases/1`, { status: 'retired' }), 'insufficient_scope');
    assert.equal((await author.get(`${base}/ontology/queries/${id}/releases`)).body.releases[0].status, 'published');
  });

  it('an admin retires a release: its page shows it retired, and executing it is refused with the 410 of the HTTP route', async () => {
    const p = browsing.page;
    const id = await publish('to-retire', BETWEEN);
    await openQuery(p, 'admin', 'to-retire', id);
    await p.getByRole('button', { name: 'Retire release 1' }).click();
    await p.getByRole('dialog').getByRole('button', { name: 'Retire' }).click();
    await p.getByRole('cell', { name: 'Release 1 status' }).filter({ hasText: 'retired' }).waitFor();
    const releases = await author.get(`${base}/ontology/queries/${id}/releases`);
    assert.deepEqual(releases.body.releases.map((r: { version: number; status: string }) => `${r.version}:${r.status}`), ['1:retired']);

    await execute(p, { minAge: '18', maxAge: '45' }, { release: '1' });
    const refusal = await consumer.post(`${base}/queries/${id}/execute?version=1`, { input: { minAge: 18, maxAge: 45 } });
    assert.equal(refusal.status, 410, JSON.stringify(refusal.body));
    await assertRefusal(p, 'Execution error', refusal, 'release_retired');
  });

  describe('over the sync budget', () => {
    const budget = EXECUTION_DEFAULTS.syncBudgetMs;
    // A slow query (as in the published-queries tests): the customers with a count over every chain
    // of four paths along a chain of 100 imported nodes, about a second and a half of work.
    const slow = { ...BETWEEN, sparql: 'SELECT ?name ?age WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age >= ?minAge && ?age <= ?maxAge) { SELECT (COUNT(*) AS ?pairs) WHERE { ?a :next* ?b . ?b :next* ?d . ?d :next* ?e . ?e :next* ?f } } } ORDER BY ?name' };
    before(async () => {
      EXECUTION_DEFAULTS.syncBudgetMs = 200;
      const baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
      assert.equal((await t.client.post(`${t.base}/terms`, { id: 'Node', kind: 'class' })).status, 201);
      assert.equal((await t.client.post(`${t.base}/links`, { id: 'next', from: 'Node', to: 'Node' })).status, 201);
      const chain = Array.from({ length: 100 }, (_, i) => `<${baseIri}n${i}> a <${baseIri}Node> ; <${baseIri}next> <${baseIri}n${i + 1}> .`).join('\n');
      const upload = await t.client.post(`${t.base}/imports/documents?id=chain`, undefined, { rawBody: chain, headers: { 'Content-Type': 'text/turtle' } });
      assert.equal(upload.status, 201, JSON.stringify(upload.body));
      const compiled = await t.client.post(`${t.base}/compile`, {});
      assert.equal((await t.client.post(`${t.base}/activate`, { packageId: compiled.body.package.id })).status, 200);
    });
    after(() => {
      EXECUTION_DEFAULTS.syncBudgetMs = budget;
    });

    it('a member’s execution that becomes a job shows it running, then its rows, read through its continuation; the next page is the next execution', async () => {
      const p = browsing.page;
      const id = await publish('slow', slow);
      const member = await openQuery(p, 'member', 'slow', id);
      await execute(p, { minAge: '0', maxAge: '100' }, { rowsPerPage: '3' });
      const status = p.getByRole('status', { name: 'Execution status' });
      await status.filter({ hasText: 'Running: job' }).waitFor();
      // The job is the member's (no key), and the page follows it until its rows come.
      const job = await env().db('query_jobs').where({ queryId: id }).first();
      assert.equal(job.apiKeyId, null);
      assert.equal(job.memberId, member.memberId);
      await status.filter({ hasText: 'page 1 · 3 rows of 3' }).waitFor({ timeout: 60_000 });
      assert.equal((await env().db('query_jobs').where({ id: job.id }).first()).status, 'completed');
      await assertShows(p, [{ name: 'Ada', age: 36 }, { name: 'Bob', age: 17 }, { name: 'Cy', age: 40 }]);
      // A full page: the next is the execution at the next offset, a job again, followed the same way.
      await p.getByRole('button', { name: 'Next page' }).click();
      await status.filter({ hasText: 'Running: job' }).waitFor();
      await status.filter({ hasText: 'page 2 · 2 rows of 2' }).waitFor({ timeout: 60_000 });
      await assertShows(p, [{ name: 'Dee', age: 50 }, { name: 'Eve', age: 29 }]);
      const jobs = await env().db('query_jobs').where({ queryId: id }).orderBy('createdAt');
      assert.deepEqual(jobs.map((j: { status: string; apiKeyId: string | null; input: { page: unknown } }) => [j.status, j.apiKeyId, j.input.page]), [['completed', null, { limit: 3, offset: 0 }], ['completed', null, { limit: 3, offset: 3 }]]);
      assert.equal(await p.getByRole('button', { name: 'Next page' }).isDisabled(), true);
      // Back: the first job's rows again, through its continuation.
      await p.getByRole('button', { name: 'Previous page' }).click();
      await status.filter({ hasText: 'page 1 · 3 rows of 3' }).waitFor();
      await assertShows(p, [{ name: 'Ada', age: 36 }, { name: 'Bob', age: 17 }, { name: 'Cy', age: 40 }]);
    });
  });
});
