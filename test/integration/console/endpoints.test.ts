import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { acceptAndSignInPage, browserPages, invite, signedIn, guideScreenshot } from '../../support/console';
import { env } from '../../support/environment';
import { as, newKey } from '../../support/fixtures';
import { bindAs, guardTenant, GuardTenant, tableEndpoint } from '../../support/guarded-data';

// The Endpoints page: its records preview is the records read itself, so its pages, its where
// filter, its refusals and its metering are those of GET /api/v1/data-endpoints/{id}/records.

const ROWS = Array.from({ length: 120 }, (_, i) => ({ id: i + 1, name: `row ${i + 1}`, team: (i + 1) % 3 === 0 ? 'a' : 'b' }));
const TEAM_A = JSON.stringify([{ field: 'team', op: 'eq', value: 'a' }]);
/** Valid JSON, but not a condition the read takes (no such op). */
const BAD_WHERE = JSON.stringify([{ field: 'team', op: 'like', value: 'a' }]);
const PEOPLE = { subjectTemplate: 'https://example.com/people/{id}', properties: { name: 'full_name', age: 'years' } };

/** A cell as the preview shows it: strings as they are, other values as JSON. */
const cellText = (value: unknown) => (value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value));

describe('The console Endpoints page in headless Chromium', function () {
  this.timeout(600_000);
  const browsing = browserPages();
  let t: GuardTenant;
  /** A managed table of 120 records and one guarded by the named read grant `payroll`. */
  let open: { id: string; name: string };
  let guarded: string;
  /** A key that reads records (data:read) and holds no named grant. */
  let reader: ReturnType<typeof as>;
  const base = () => env().baseUrl;

  /** Appends rows through the governed write of the public API (a policy that takes appends, then one write). */
  async function appendThroughApi(client: ReturnType<typeof as>, endpointId: string, rows: Array<Record<string, unknown>>): Promise<void> {
    const policy = await client.put(`/api/v1/data-endpoints/${endpointId}/write-policy`, { allowedOperations: ['append'] });
    assert.equal(policy.status, 201, JSON.stringify(policy.body));
    const written = await client.post(`/api/v1/data-endpoints/${endpointId}/writes`, {
      actionId: randomUUID(),
      projectId: t.ws.projectId,
      idempotencyKey: `console-${randomUUID()}`,
      input: { contractVersion: 1, expectedSourceSnapshot: { id: 'empty', version: '0' }, operation: 'append', rows },
    });
    assert.equal(written.status, 200, JSON.stringify(written.body));
  }

  const recordsPath = (endpointId: string, query: Record<string, string> = {}) => {
    const search = new URLSearchParams(query).toString();
    return `/api/v1/data-endpoints/${endpointId}/records${search ? `?${search}` : ''}`;
  };

  /** The preview's rows as text, under its header's columns. */
  async function previewRows(p: Page): Promise<{ columns: string[]; rows: string[][] }> {
    const table = p.getByRole('table', { name: 'Records' });
    const columns = await table.locator('thead th').allTextContents();
    const rows: string[][] = [];
    for (const row of await table.locator('tbody tr').all()) rows.push(await row.locator('td').allTextContents());
    return { columns, rows };
  }

  /** Asserts the preview shows exactly this page of the HTTP read. */
  async function assertShows(p: Page, data: Array<Record<string, unknown>>): Promise<void> {
    const shown = await previewRows(p);
    assert.deepEqual([...shown.columns].sort(), [...new Set(data.flatMap((row) => Object.keys(row)))].sort());
    assert.deepEqual(shown.rows, data.map((row) => shown.columns.map((column) => cellText(row[column]))));
  }

  before(async () => {
    t = await guardTenant(['payroll']);
    const table = `console_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
    open = { id: await tableEndpoint(t.owner, t.managedInstallationId, table, { name: table, primaryKey: ['id'] }), name: table };
    await appendThroughApi(t.owner, open.id, ROWS);
    const salaries = `salaries_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
    guarded = await tableEndpoint(t.granted, t.managedInstallationId, salaries, { primaryKey: ['id'] });
    await appendThroughApi(t.granted, guarded, [{ id: 1, full_name: 'Ada', years: 36 }, { id: 2, full_name: 'Bob', years: 41 }]);
    await bindAs(t.granted, t, { termId: 'Customer', dataEndpointId: guarded, mapping: PEOPLE, requiredReadPermissions: ['payroll'] });
    reader = as(await newKey(t.ws, { scopes: ['endpoints:read', 'data:read'] }));
  });

  it('an admin opens an endpoint: the preview pages with the read’s cursors and filters with where as GET …/records does, a bad where shows its code, and each preview is metered as a records read', async () => {
    const p = browsing.page;
    const admin = await invite(t.ws.workspaceId, 'admin');
    await acceptAndSignInPage(p, admin);
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Endpoints' }).click();
    const filters = p.getByRole('form', { name: 'Filter endpoints' });
    await filters.getByLabel('Name', { exact: true }).fill(open.name);
    await filters.getByRole('button', { name: 'Filter' }).click();
    await p.getByRole('status', { name: 'Page' }).filter({ hasText: '1–1 of 1' }).waitFor();
    await p.getByRole('table', { name: 'Endpoints' }).getByRole('link', { name: open.name }).click();
    await p.getByRole('heading', { name: `Endpoint guards/${open.name}` }).waitFor();
    assert.equal(new URL(p.url()).pathname, `/console/endpoints/${open.id}`);

    // The first page, then the next with the read's cursor: each the page GET …/records answers the key.
    const status = p.getByRole('status', { name: 'Preview page' });
    await status.filter({ hasText: 'Page 1 · 100 records · more follow' }).waitFor();
    await guideScreenshot(p, 'endpoint-preview');
    const first = (await reader.get(recordsPath(open.id))).body;
    assert.equal(first.data.length, 100);
    await assertShows(p, first.data);
    await p.getByRole('button', { name: 'Next page' }).click();
    await status.filter({ hasText: 'Page 2 · 20 records · last page' }).waitFor();
    const second = (await reader.get(recordsPath(open.id, { cursor: first.metadata.nextCursor }))).body;
    assert.equal(second.metadata.nextCursor, null);
    await assertShows(p, second.data);
    assert.equal(await p.getByRole('button', { name: 'Next page' }).isDisabled(), true);
    await p.getByRole('button', { name: 'Previous page' }).click();
    await status.filter({ hasText: 'Page 1 · 100 records · more follow' }).waitFor();
    await assertShows(p, first.data);

    // where narrows the rows as it narrows the HTTP read.
    const preview = p.getByRole('form', { name: 'Preview records' });
    await preview.getByLabel('Where').fill(TEAM_A);
    await preview.getByRole('button', { name: 'Preview' }).click();
    await status.filter({ hasText: 'Page 1 · 40 records · last page' }).waitFor();
    const teamA = (await reader.get(recordsPath(open.id, { where: TEAM_A }))).body;
    assert.equal(teamA.data.length, 40);
    await assertShows(p, teamA.data);

    // A bad where is the read's own 4xx: its code and message, in the page as over HTTP.
    const refusal = await reader.get(recordsPath(open.id, { where: BAD_WHERE }));
    assert.ok(refusal.status >= 400 && refusal.status < 500, JSON.stringify(refusal.body));
    await preview.getByLabel('Where').fill(BAD_WHERE);
    await preview.getByRole('button', { name: 'Preview' }).click();
    const error = p.getByRole('alert', { name: 'Preview error' });
    await error.waitFor();
    assert.equal(await error.textContent(), `${refusal.body.message} (${refusal.body.code})`);
    assert.equal(refusal.body.code, 'invalid_where');

    // Target, schema and snapshot, as the API answers them.
    assert.match((await p.getByRole('region', { name: 'Target' }).textContent())!, new RegExp(`"table": "${open.name}"`));
    const schema = (await t.owner.get(`/api/v1/data-endpoints/${open.id}/schema`)).body;
    const fields = await p.getByRole('table', { name: 'Discovered fields' }).locator('tbody tr td:first-child').allTextContents();
    assert.deepEqual(fields, schema.fields.map((f: { name: string }) => f.name));
    const snapshot = (await reader.get(`/api/v1/data-endpoints/${open.id}/snapshot`)).body.snapshot;
    assert.ok((await p.getByLabel('Current snapshot').textContent())!.startsWith(`${snapshot.id} (version ${snapshot.version}`));
    // A preview of one committed snapshot: the read's snapshotId, and the snapshot the read reports.
    await preview.getByLabel('Where').fill('');
    await preview.getByLabel('Snapshot id').fill(snapshot.id);
    await preview.getByRole('button', { name: 'Preview' }).click();
    await status.filter({ hasText: 'Page 1 · 100 records · more follow' }).waitFor();
    const ofSnapshot = (await reader.get(recordsPath(open.id, { snapshotId: snapshot.id }))).body;
    await assertShows(p, ofSnapshot.data);
    assert.equal(ofSnapshot.metadata.snapshot.id, snapshot.id);
    assert.ok((await p.getByLabel('Preview snapshot').textContent())!.startsWith(`${snapshot.id} (version ${snapshot.version}`));

    // Check and validate answer what their operations answer.
    const checked = (await t.owner.post(`/api/v1/data-endpoints/${open.id}/check`, {})).body;
    await p.getByRole('button', { name: 'Check connection' }).click();
    await p.getByLabel('Check result').filter({ hasText: `OK: ${checked.message}` }).waitFor();
    await p.getByRole('button', { name: 'Validate' }).click();
    await p.getByLabel('Validation result').filter({ hasText: 'Valid: the configuration matches its capability contract.' }).waitFor();

    // Every preview was a records read of the member (no key), metered as one: 100, 20, 100, 40 and 100 records; the refused one none.
    const operations = (await t.owner.get('/api/v1/usage/operations?limit=200')).body.operations as Array<{ kind: string; actorMemberId: string | null; apiKeyId: string | null; quantities: { record: number } }>;
    const previews = operations.filter((o) => o.kind === 'records_read' && o.actorMemberId === admin.memberId);
    assert.deepEqual(previews.map((o) => o.quantities.record).sort((a, b) => a - b), [20, 40, 100, 100, 100]);
    assert.ok(previews.every((o) => o.apiKeyId === null));
  });

  it('a member without the named read grant is refused the guarded preview with the code a key without it gets; given the grant, the preview reads', async () => {
    const overHttp = await reader.get(recordsPath(guarded));
    assert.equal(overHttp.status, 403);
    assert.equal(overHttp.body.code, 'read_grant_required');

    const p = browsing.page;
    const member = await invite(t.ws.workspaceId, 'member');
    await acceptAndSignInPage(p, member);
    await p.goto(`${base()}/console/endpoints/${guarded}`);
    const error = p.getByRole('alert', { name: 'Preview error' });
    await error.waitFor();
    assert.equal(await error.textContent(), `${overHttp.body.message} (${overHttp.body.code})`);
    // The records of the open table are a member's to read (data:read); checking a connection needs endpoints:write, as for a key.
    const readOnly = as(await newKey(t.ws, { scopes: ['endpoints:read'] }));
    const checkOverHttp = await readOnly.post(`/api/v1/data-endpoints/${guarded}/check`, {});
    await p.getByRole('button', { name: 'Check connection' }).click();
    await p.getByLabel('Check result').filter({ hasText: `(${checkOverHttp.body.code})` }).waitFor();
    assert.equal(checkOverHttp.body.code, 'insufficient_scope');

    // An owner gives the member the grant on the Members page's route: the preview reads at once, as the granted key does.
    const owner = await signedIn(t.ws.workspaceId, 'owner');
    const granted = await owner.client.request('PATCH', `/console/api/members/${member.memberId}`, { readPermissions: ['payroll'] });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    await p.reload();
    await p.getByRole('status', { name: 'Preview page' }).filter({ hasText: 'Page 1 · 2 records · last page' }).waitFor();
    await assertShows(p, (await t.granted.get(recordsPath(guarded))).body.data);
  });

  it('cursors are the caller’s: a console member’s cursor is refused to a key and to another member, as a key’s is to another key', async () => {
    const first = await signedIn(t.ws.workspaceId, 'admin');
    const other = await signedIn(t.ws.workspaceId, 'admin');
    const consoleRecords = (query = '') => `/console/api/data-endpoints/${open.id}/records${query}`;
    const opened = await first.client.request('GET', consoleRecords('?limit=50'));
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    const cursor = encodeURIComponent(opened.body.metadata.nextCursor);
    const followed = await first.client.request('GET', consoleRecords(`?limit=50&cursor=${cursor}`));
    assert.equal(followed.status, 200);
    assert.deepEqual(followed.body.data, (await reader.get(recordsPath(open.id, { limit: '50', cursor: (await reader.get(recordsPath(open.id, { limit: '50' }))).body.metadata.nextCursor }))).body.data);
    const byOther = await other.client.request('GET', consoleRecords(`?limit=50&cursor=${cursor}`));
    assert.equal(byOther.status, 422, JSON.stringify(byOther.body));
    assert.equal(byOther.body.code, 'cursor_not_yours');
    const byKey = await reader.get(`${recordsPath(open.id, { limit: '50' })}&cursor=${cursor}`);
    assert.equal(byKey.status, byOther.status);
    assert.equal(byKey.body.code, 'cursor_not_yours');
  });

  it('the list pages on the server by the list’s nextOffset and filters by namespace and role, as GET /api/v1/data-endpoints does', async () => {
    const namespace = `paged-${randomUUID().slice(0, 6)}`;
    for (let i = 0; i < 27; i += 1) {
      const table = `paged_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
      const made = await t.owner.post('/api/v1/data-endpoints', {
        name: `e${String(i).padStart(2, '0')}`, namespace, role: i === 26 ? 'destination' : 'source', contractKind: i === 26 ? 'sink_table' : 'source_stream',
        pluginCapabilityInstallationId: t.managedInstallationId, target: { table },
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
    }
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(t.ws.workspaceId, 'member'));
    await p.getByRole('link', { name: 'Endpoints' }).click();
    const filters = p.getByRole('form', { name: 'Filter endpoints' });
    await filters.getByLabel('Namespace').fill(namespace);
    await filters.getByRole('button', { name: 'Filter' }).click();
    const pageStatus = p.getByRole('status', { name: 'Page' });
    await pageStatus.filter({ hasText: '1–25 of 27' }).waitFor();
    const names = () => p.getByRole('table', { name: 'Endpoints' }).getByRole('link').allTextContents();
    const api1 = (await reader.get(`/api/v1/data-endpoints?namespace=${namespace}&limit=25`)).body;
    assert.deepEqual(await names(), api1.dataEndpoints.map((e: { name: string }) => e.name));
    assert.equal(api1.pagination.nextOffset, 25);
    await p.getByRole('button', { name: 'Next page' }).click();
    await pageStatus.filter({ hasText: '26–27 of 27' }).waitFor();
    const api2 = (await reader.get(`/api/v1/data-endpoints?namespace=${namespace}&limit=25&offset=25`)).body;
    assert.deepEqual(await names(), api2.dataEndpoints.map((e: { name: string }) => e.name));
    assert.equal(await p.getByRole('button', { name: 'Next page' }).isDisabled(), true);

    await filters.getByLabel('Role').selectOption('destination');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await pageStatus.filter({ hasText: '1–1 of 1' }).waitFor();
    assert.deepEqual(await names(), ['e26']);
  });
});
