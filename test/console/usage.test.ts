import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { env } from '../support/environment';
import { as, newWorkspace } from '../support/fixtures';
import { acceptAndSignInPage, browserPages, invite } from '../support/console';

// The Usage page draws GET /console/api/usage, the operation GET /api/v1/usage runs: its chart's
// points (the data attribute the chart is drawn from) are the API's daily usage for the same range.

interface ChartSeries { measure: string; dates: string[]; series: Array<{ kind: string; values: number[] }> }

describe('The console Usage page in headless Chromium', function () {
  this.timeout(600_000);
  const browsing = browserPages();
  const base = () => env().baseUrl;

  /** Metered operations on chosen days (a database fixture: metering itself is tested in test/billing). */
  async function meteredOn(workspaceId: string, rows: Array<[day: string, kind: string, amount: string]>): Promise<void> {
    await env().db('metered_operations').insert(rows.map(([day, kind, amount], i) => ({
      workspace_id: workspaceId, kind, operation_ref: randomUUID(), quantities: { query: 1 }, amount, created_at: `${day}T${String(i % 24).padStart(2, '0')}:30:00Z`,
    })));
  }

  const chartOf = async (p: Page): Promise<ChartSeries> => JSON.parse((await p.getByRole('figure', { name: 'Daily usage chart' }).getAttribute('data-chart'))!) as ChartSeries;

  it('an admin sees daily usage by kind for a chosen range: the chart’s points equal GET /api/v1/usage for that range', async () => {
    const ws = await newWorkspace();
    await meteredOn(ws.workspaceId, [
      ['2026-06-01', 'sparql_query', '0.002'],
      ['2026-06-01', 'sparql_query', '0.004'],
      ['2026-06-01', 'records_read', '1.25'],
      ['2026-06-03', 'records_read', '0.001'],
      ['2026-06-07', 'governed_write', '0.3'],
      // Outside the range: on neither side of it.
      ['2026-05-31', 'sparql_query', '9'],
      ['2026-06-08', 'records_read', '9'],
    ]);
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'admin'));
    await p.getByRole('link', { name: 'Usage' }).click();
    await p.getByRole('heading', { name: 'Usage' }).waitFor();
    await p.getByLabel('From', { exact: true }).fill('2026-06-01');
    await p.getByLabel('To', { exact: true }).fill('2026-06-07');
    await p.getByRole('button', { name: 'Show' }).click();
    await p.getByLabel('Range total').filter({ hasText: '2026-06-01 to 2026-06-07' }).waitFor();

    const api = (await as(ws.apiKey).get('/api/v1/usage?from=2026-06-01&to=2026-06-07')).body.usage as {
      totalExact: string; daily: Array<{ date: string; byKind: Array<{ kind: string; operations: number; amount: string }> }>;
    };
    assert.equal(api.totalExact, '1.557');
    assert.deepEqual(api.daily.map((d) => d.date), ['2026-06-01', '2026-06-02', '2026-06-03', '2026-06-04', '2026-06-05', '2026-06-06', '2026-06-07']);
    const expected = (measure: 'amount' | 'operations'): ChartSeries => {
      const kinds = [...new Set(api.daily.flatMap((d) => d.byKind.map((k) => k.kind)))].sort();
      return {
        measure,
        dates: api.daily.map((d) => d.date),
        series: kinds.map((kind) => ({ kind, values: api.daily.map((d) => { const k = d.byKind.find((x) => x.kind === kind); return k ? (measure === 'amount' ? Number(k.amount) : k.operations) : 0; }) })),
      };
    };
    const amounts = await chartOf(p);
    assert.deepEqual(amounts, expected('amount'));
    // What the API said, spelled out, so the comparison is not of two empty answers.
    assert.deepEqual(amounts.series, [
      { kind: 'governed_write', values: [0, 0, 0, 0, 0, 0, 0.3] },
      { kind: 'records_read', values: [1.25, 0, 0.001, 0, 0, 0, 0] },
      { kind: 'sparql_query', values: [0.006, 0, 0, 0, 0, 0, 0] },
    ]);
    // The chart is drawn (uPlot's canvas and its legend name the kinds), and the table has a row per day and kind.
    const figure = p.getByRole('figure', { name: 'Daily usage chart' });
    assert.equal(await figure.locator('canvas').count(), 1);
    for (const kind of ['governed_write', 'records_read', 'sparql_query']) await figure.getByText(kind, { exact: true }).first().waitFor();
    const dailyRows = p.getByRole('table', { name: 'Daily usage' }).getByRole('row');
    assert.equal(await dailyRows.count(), 1 + 4);
    assert.match((await dailyRows.nth(1).textContent())!, /2026-06-01.*records_read.*1.*1\.25/);

    await p.getByLabel('Measure').selectOption('operations');
    const operations = await chartOf(p);
    assert.equal(operations.measure, 'operations');
    assert.deepEqual(operations, expected('operations'));
    assert.deepEqual(operations.series.find((s) => s.kind === 'sparql_query')!.values, [2, 0, 0, 0, 0, 0, 0]);
  });

  it('a plain member has no Usage link, and the usage page and route answer 403', async () => {
    const ws = await newWorkspace();
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'member'));
    // The navigation is drawn whole from the session: what it lacks is not still coming.
    const links = await p.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
    assert.ok(links.length > 0 && !links.includes('Usage'), `navigation: ${links.join(', ')}`);
    const usagePage = await p.goto(`${base()}/console/usage`);
    assert.equal(usagePage!.status(), 403);
    await p.getByRole('alert').filter({ hasText: 'Your role cannot use this page' }).waitFor();
    const api = await p.evaluate(async () => {
      const response = await fetch('/console/api/usage?from=2026-06-01&to=2026-06-07');
      return { status: response.status, body: (await response.json()) as { code: string } };
    });
    assert.equal(api.status, 403);
    assert.equal(api.body.code, 'insufficient_scope');
  });
});
