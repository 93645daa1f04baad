import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { acceptAndSignInPage, browserPages, invite, Person, signedIn, guideScreenshot } from '../../support/console';
import { as, newKey, request } from '../../support/fixtures';
import { bindAs, guardTenant, GuardTenant, seedTable, tableEndpoint } from '../../support/guarded-data';

// The Ontology page: the project's collections, bindings, compile and activate as the API answers
// them; and the SPARQL editor, whose queries run the protocol's query operation as the member, so
// their named read grants decide what it answers as they would for a key with the same grants.

type SparqlJson = { head: { vars: string[] }; results: { bindings: Array<Record<string, { value: string }>> } };

describe('The console Ontology page in headless Chromium', function () {
  this.timeout(600_000);
  const browsing = browserPages();
  let t: GuardTenant;
  /** A second project whose definition does not compile. */
  let broken: { id: string; name: string };
  /** Customers are guarded by the named read grant `payroll`; orders are open. */
  let query: string;

  /** The SPARQL JSON answer over HTTP to a key with these named read grants (and sparql:query). */
  async function answerOverHttp(readPermissions: string[], text: string) {
    const key = await newKey(t.ws, { scopes: ['sparql:query'], readPermissions });
    return request<SparqlJson>('GET', `${t.base}/sparql?query=${encodeURIComponent(text)}`, { key, headers: { Accept: 'application/sparql-results+json' } });
  }
  const rowsOf = (answer: SparqlJson) => answer.results.bindings.map((row) => answer.head.vars.map((name) => row[name]?.value ?? ''));

  /** The console's results table: its header and its rows as text. */
  async function shownResults(p: Page): Promise<{ vars: string[]; rows: string[][] }> {
    const table = p.getByRole('table', { name: 'Results' });
    const vars = await table.locator('thead th').allTextContents();
    const rows: string[][] = [];
    for (const row of await table.locator('tbody tr').all()) rows.push(await row.locator('td').allTextContents());
    return { vars, rows };
  }

  /** Signs in as a member (with these named read grants, given by an owner) and runs the query in the console's SPARQL editor. */
  async function runInEditor(p: Page, person: Person, text: string): Promise<void> {
    await acceptAndSignInPage(p, person);
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Ontology' }).click();
    await p.getByRole('link', { name: 'SPARQL editor' }).click();
    await p.getByRole('heading', { name: 'SPARQL' }).waitFor();
    assert.equal(new URL(p.url()).searchParams.get('project'), t.ws.projectId);
    await p.getByRole('textbox', { name: 'Query' }).fill(text);
    await p.getByRole('button', { name: 'Run' }).click();
  }

  async function memberWith(readPermissions: string[]): Promise<Person> {
    const person = await invite(t.ws.workspaceId, 'member');
    if (readPermissions.length) {
      const { client: owner } = await signedIn(t.ws.workspaceId, 'owner');
      const granted = await owner.request('PATCH', `/console/api/members/${person.memberId}`, { readPermissions });
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
    }
    return person;
  }

  before(async () => {
    t = await guardTenant(['payroll']);
    const suffix = randomUUID().replace(/-/g, '').slice(0, 8);
    const customers = await tableEndpoint(t.granted, t.managedInstallationId, `customers_${suffix}`, { primaryKey: ['id'] });
    await seedTable(t.managedInstallationId, `customers_${suffix}`, [{ id: 1, full_name: 'Ada', years: 36 }, { id: 2, full_name: 'Bob', years: 41 }]);
    const orders = await tableEndpoint(t.granted, t.managedInstallationId, `orders_${suffix}`, { primaryKey: ['id'] });
    await seedTable(t.managedInstallationId, `orders_${suffix}`, [{ id: 10, amount: 99.5 }]);
    await bindAs(t.granted, t, { termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } }, requiredReadPermissions: ['payroll'] });
    await bindAs(t.granted, t, { termId: 'Order', dataEndpointId: orders, mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' } } });
    query = `PREFIX : <${t.baseIri}> SELECT ?s ?type WHERE { VALUES ?type { :Customer :Order } ?s a ?type } ORDER BY ?s`;
    // An edit since the active package, so that compiling makes a new one.
    assert.equal((await t.granted.post(`${t.base}/terms`, { id: 'Invoice', kind: 'class', label: 'Invoice' })).status, 201);

    const project = await t.owner.post('/api/v1/projects', { name: `broken-${suffix}` });
    assert.equal(project.status, 201, JSON.stringify(project.body));
    broken = { id: project.body.project.id, name: project.body.project.name };
    const term = await t.owner.post(`/api/v1/projects/${broken.id}/ontology/terms`, { id: 'nickname', kind: 'property', domain: 'Nowhere', datatype: 'xsd:string' });
    assert.equal(term.status, 201, JSON.stringify(term.body));
  });

  it('an admin sees the terms and bindings, compiles and activates (the package GET …/ontology then answers), and sees another project’s compile errors as the API answers them', async () => {
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'admin'));
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Ontology' }).click();
    await p.getByRole('heading', { name: 'Ontology' }).waitFor();
    const activeShown = p.getByLabel('Active package', { exact: true });
    await activeShown.filter({ hasText: t.packageId }).waitFor();
    assert.equal(new URL(p.url()).searchParams.get('project'), t.ws.projectId, 'the chosen project is kept in the URL');

    const terms = (await t.owner.get(`${t.base}/terms?limit=200`)).body.terms as Array<{ id: string }>;
    assert.ok(terms.some((term) => term.id === 'Invoice'));
    assert.deepEqual(await p.getByRole('table', { name: 'Terms' }).locator('tbody tr td:first-child').allTextContents(), terms.map((term) => term.id));
    const bindings = (await t.owner.get(`${t.base}/read-bindings`)).body.bindings as Array<{ termId: string; requiredReadPermissions: string[] }>;
    assert.equal(bindings.length, 2);
    const bindingRows = p.getByRole('table', { name: 'Read bindings' }).locator('tbody tr');
    assert.deepEqual(await bindingRows.locator('td:first-child').allTextContents(), bindings.map((binding) => binding.termId));
    assert.deepEqual(await bindingRows.locator('td:nth-child(3)').allTextContents(), bindings.map((binding) => binding.requiredReadPermissions.join(', ') || '—'));

    await p.getByRole('button', { name: 'Compile' }).click();
    const compiled = await p.getByRole('status', { name: 'Compiled package' }).textContent();
    assert.match(compiled!, /^[0-9a-f-]{36}$/);
    assert.notEqual(compiled, t.packageId, 'the edit made a new package');
    assert.equal((await t.owner.get(`${t.base}`)).body.ontology.package.id, t.packageId, 'compiling does not activate');
    await p.getByRole('button', { name: 'Activate' }).click();
    await activeShown.filter({ hasText: compiled! }).waitFor();
    assert.equal((await t.owner.get(`${t.base}`)).body.ontology.package.id, compiled);

    // Another project, through the switcher: its compile fails with the errors the API answers.
    await p.getByLabel('Project').selectOption({ label: broken.name });
    await p.getByRole('table', { name: 'Terms' }).getByRole('cell', { name: 'nickname', exact: true }).waitFor();
    assert.equal(new URL(p.url()).searchParams.get('project'), broken.id);
    await activeShown.filter({ hasText: 'none' }).waitFor();
    await p.getByRole('button', { name: 'Compile' }).click();
    const errors = p.getByRole('list', { name: 'Compile errors' });
    await errors.waitFor();
    const overHttp = await t.owner.post(`/api/v1/projects/${broken.id}/ontology/compile`, {});
    assert.equal(overHttp.status, 422);
    assert.ok(overHttp.body.errors.length > 0);
    assert.deepEqual(await errors.locator('li').allTextContents(), overHttp.body.errors.map((e: { path?: string; message: string }) => `${e.path ? `${e.path}: ` : ''}${e.message}`));
    assert.match(await p.getByRole('alert').first().textContent() ?? '', new RegExp(`\\(${overHttp.body.code}\\)`));
  });

  it('a member with the named read grant runs a SELECT in the console: the table is the SPARQL JSON answer to a key with the same grants', async () => {
    const p = browsing.page;
    const http = await answerOverHttp(['payroll'], query);
    assert.equal(http.status, 200, JSON.stringify(http.body));
    assert.equal(http.headers.get('weft-withheld-bindings'), null);
    assert.equal(http.body.results.bindings.length, 3, 'two customers and an order');
    await runInEditor(p, await memberWith(['payroll']), query);
    await p.getByRole('status', { name: 'Result count' }).filter({ hasText: '3 rows' }).waitFor();
    await guideScreenshot(p, 'sparql');
    assert.deepEqual(await shownResults(p), { vars: http.body.head.vars, rows: rowsOf(http.body) });
    assert.equal(await p.getByRole('note', { name: 'Withheld bindings' }).count(), 0);
  });

  it('a member without the grant a binding requires gets the rows a key without it gets (that binding withheld), and a malformed query shows malformed_query with its message', async () => {
    const p = browsing.page;
    const http = await answerOverHttp([], query);
    assert.equal(http.status, 200, JSON.stringify(http.body));
    assert.equal(http.headers.get('weft-withheld-bindings'), '1');
    assert.equal(http.body.results.bindings.length, 1, 'the order only');
    await runInEditor(p, await memberWith([]), query);
    await p.getByRole('status', { name: 'Result count' }).filter({ hasText: '1 row' }).waitFor();
    assert.deepEqual(await shownResults(p), { vars: http.body.head.vars, rows: rowsOf(http.body) });
    // The console says what Weft-Withheld-Bindings says over HTTP.
    assert.match(await p.getByRole('note', { name: 'Withheld bindings' }).textContent() ?? '', /^1 binding was left out/);

    const malformed = 'SELECT ?s WHERE { ?s ?p';
    const refused = await answerOverHttp([], malformed);
    assert.equal(refused.status, 400);
    assert.equal((refused.body as unknown as { code: string }).code, 'malformed_query');
    await p.getByRole('textbox', { name: 'Query' }).fill(malformed);
    await p.getByRole('button', { name: 'Run' }).click();
    await p.getByRole('alert').filter({ hasText: '(malformed_query)' }).waitFor();
    assert.equal(await p.getByRole('alert').textContent(), `${(refused.body as unknown as { message: string }).message} (malformed_query)`);
    assert.equal(await p.getByRole('table', { name: 'Results' }).count(), 0, 'no stale results beside the refusal');
  });

  it('the SPARQL console route is the query operation as the member: refused to a signed-out client, and updates are not queries', async () => {
    const { client } = await signedIn(t.ws.workspaceId, 'admin');
    const path = `/console/api/projects/${t.ws.projectId}/ontology/sparql?query=`;
    const update = await client.request('GET', `${path}${encodeURIComponent(`PREFIX : <${t.baseIri}> INSERT DATA { <https://example.com/orders/11> a :Order }`)}`);
    const updateOverHttp = await as(t.grantedKey).get(`${t.base}/sparql?query=${encodeURIComponent(`PREFIX : <${t.baseIri}> INSERT DATA { <https://example.com/orders/11> a :Order }`)}`);
    assert.equal(update.status, updateOverHttp.status);
    assert.equal(update.body.code, updateOverHttp.body.code);
    const anonymous = await request('GET', `${path}${encodeURIComponent('ASK {}')}`, { key: null });
    assert.equal(anonymous.status, 401);
  });
});
