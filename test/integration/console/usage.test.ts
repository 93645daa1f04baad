import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import { CONSOLE_OPERATION_ROUTES } from '../../../console/server';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';
import { acceptAndSignInPage, browserPages, invite, signedIn, guideScreenshot } from '../../support/console';
import { useStripeMock } from '../../support/stripe-mock';
import { useProcessSettings } from '../billing/process-settings';
import { usageOperations } from '../../../services/usage/operations';
import { billingOperations } from '../../../services/usage/billing-operations';

// The Usage page draws GET /console/api/usage, the operation GET /api/v1/usage runs: its chart's
// points (the data attribute the chart is drawn from) are the API's daily usage for the same range.
// Its plan, alerts, operations and invoices are the operations of their /api/v1 routes too, so
// each section is compared with what the API answers.

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

  /** A table's body as the page shows it: each row's cells' text. */
  const cellsOf = (p: Page, table: string): Promise<string[][]> =>
    p.getByRole('table', { name: table, exact: true }).locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent!.trim())));

  const openUsage = async (p: Page) => {
    await p.getByRole('link', { name: 'Usage' }).click();
    await p.getByRole('heading', { name: 'Usage' }).waitFor();
  };

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
    await guideScreenshot(p, 'usage');
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
    assert.ok(!links.includes('Limits'), `navigation: ${links.join(', ')}`);
    assert.equal((await p.goto(`${base()}/console/limits`))!.status(), 403);
  });

  it('the console routes of the usage, billing and limits operations: owners and admins pass their access, a member gets 403 insufficient_scope', async () => {
    const ws = await newWorkspace();
    const covered = new Set([...usageOperations, ...billingOperations, ...CONSOLE_OPERATION_ROUTES.filter((r) => r.path === '/console/api/api-limits').map((r) => r.operation)]);
    const routes = CONSOLE_OPERATION_ROUTES.filter((route) => covered.has(route.operation));
    assert.deepEqual(routes.map((r) => `${r.method} ${r.path}`).sort(), [
      'get /console/api/api-limits',
      'get /console/api/billing/invoices',
      'get /console/api/usage',
      'get /console/api/usage/alerts',
      'get /console/api/usage/billing',
      'get /console/api/usage/operations',
      'get /console/api/usage/operations/:operation_id/charges',
      'post /console/api/billing/checkout',
      'post /console/api/billing/portal',
      'put /console/api/api-limits',
      'put /console/api/usage/alerts',
    ]);
    const people = { owner: await signedIn(ws.workspaceId, 'owner'), admin: await signedIn(ws.workspaceId, 'admin'), member: await signedIn(ws.workspaceId, 'member') };
    for (const route of routes) {
      // Past its access an operation answers 200, 404 (no such operation), 422 (an empty body) or 503 (no Stripe here), never 401 or 403.
      const path = route.path.replace(':operation_id', randomUUID());
      const body = route.method === 'get' ? undefined : {};
      for (const [role, { client }] of Object.entries(people)) {
        const answer = await client.request(route.method.toUpperCase(), path, body);
        if (role === 'member') assert.deepEqual([answer.status, answer.body.code], [403, 'insufficient_scope'], `${route.method} ${route.path} as a member`);
        else assert.ok(answer.status !== 403 && answer.status !== 401, `${route.method} ${route.path} as ${role}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    }
  });

  it('alert settings changed in the page are what GET /api/v1/usage/alerts then answers; a refused change shows the problem’s message and fields and changes nothing', async () => {
    const ws = await newWorkspace();
    const period = new Date().toISOString().slice(0, 7);
    await env().db('usage_alert_events').insert({ workspace_id: ws.workspaceId, period, threshold: 80, amount: '4.2' });
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'owner'));
    await openUsage(p);
    const alerts = p.getByRole('region', { name: 'Alerts' });
    const before = (await as(ws.apiKey).get('/api/v1/usage/alerts')).body.alerts;
    assert.deepEqual([before.monthlyBudget, before.thresholds], [null, [50, 80, 100]]);
    assert.equal(await alerts.getByLabel('Thresholds').inputValue(), '50, 80, 100');
    // The alerts raised, as the API lists them (the page adds when, in the browser's time).
    assert.deepEqual((await cellsOf(p, 'Alerts raised')).map((row) => row.slice(0, 3)), before.events.map((e: { period: string; threshold: number; amount: string }) => [e.period, String(e.threshold), e.amount]));
    assert.deepEqual(before.events.map((e: { threshold: number }) => e.threshold), [80]);

    await alerts.getByLabel('Monthly budget').fill('250.5');
    await alerts.getByLabel('Thresholds').fill('90, 25, 50');
    await alerts.getByRole('button', { name: 'Save alerts' }).click();
    await alerts.getByRole('status').filter({ hasText: 'Alert settings saved' }).waitFor();
    const saved = (await as(ws.apiKey).get('/api/v1/usage/alerts')).body.alerts;
    assert.deepEqual([saved.monthlyBudget, saved.thresholds], ['250.5', [25, 50, 90]]);
    // The form starts again from what was saved, and the plan shows the budget.
    assert.equal(await alerts.getByLabel('Thresholds').inputValue(), '25, 50, 90');
    assert.equal(await alerts.getByLabel('Monthly budget').inputValue(), '250.5');
    await p.getByRole('region', { name: 'Plan' }).getByLabel('Monthly budget').filter({ hasText: '250.5 USD' }).waitFor();

    // Refused: the same refusal as PUT /api/v1/usage/alerts of the same body, each field named.
    await alerts.getByLabel('Monthly budget').fill('-3');
    await alerts.getByLabel('Thresholds').fill('0, 25');
    const refusedOverHttp = await as(ws.apiKey).put('/api/v1/usage/alerts', { monthlyBudget: '-3', thresholds: [0, 25] });
    assert.equal(refusedOverHttp.status, 422);
    await alerts.getByRole('button', { name: 'Save alerts' }).click();
    const alert = alerts.getByRole('alert');
    await alert.filter({ hasText: `${refusedOverHttp.body.message} (${refusedOverHttp.body.code})` }).waitFor();
    const fieldsAtFault = (refusedOverHttp.body.errors as Array<{ path: string; message: string }>).map((e) => `${e.path}: ${e.message}`);
    assert.ok(fieldsAtFault.some((e) => e.startsWith('/thresholds/0')) && fieldsAtFault.some((e) => e.startsWith('/monthlyBudget')), fieldsAtFault.join('; '));
    assert.deepEqual(await alert.getByRole('list', { name: 'Problems' }).getByRole('listitem').allTextContents(), fieldsAtFault);
    const after = (await as(ws.apiKey).get('/api/v1/usage/alerts')).body.alerts;
    assert.deepEqual([after.monthlyBudget, after.thresholds], ['250.5', [25, 50, 90]]);
  });

  it('the operations list pages on the server as GET /api/v1/usage/operations does, and an operation’s charges are what the API lists', async () => {
    const ws = await newWorkspace();
    // 30 operations a minute apart, newest last, so the newest page is the first.
    const inserted: Array<{ id: string }> = await env().db('metered_operations').insert(Array.from({ length: 30 }, (_, i) => ({
      workspace_id: ws.workspaceId, kind: i % 2 ? 'records_read' : 'sparql_query', operation_ref: randomUUID(), quantities: { query: 1, records: i }, amount: `0.00${i + 1}`, created_at: `2026-06-01T10:${String(i).padStart(2, '0')}:00Z`,
    }))).returning('id');
    const charged = inserted[29].id;
    await env().db('operation_charges').insert([
      { operation_id: charged, item: 'query', quantity: 1, unit_price: '0.002', amount: '0.002' },
      { operation_id: charged, item: 'records', quantity: 29, unit_price: '0.0001', amount: '0.0029' },
    ]);
    const p = browsing.page;
    await acceptAndSignInPage(p, await invite(ws.workspaceId, 'admin'));
    await openUsage(p);
    const operations = p.getByRole('region', { name: 'Operations' });
    type Listed = { operations: Array<{ id: string; kind: string; amount: string; createdAt: string }>; pagination: { total: number } };
    const shown = (listed: Listed) => listed.operations.map((o) => [o.id.slice(0, 8), o.createdAt, o.kind, o.amount]);
    const pageCells = async () => (await cellsOf(p, 'Metered operations')).map((row) => [row[0], row[1], row[2], row[4]]);

    const first = (await as(ws.apiKey).get('/api/v1/usage/operations?limit=25&offset=0')).body as Listed;
    assert.equal(first.pagination.total, 30);
    await operations.getByRole('status', { name: 'Page' }).filter({ hasText: '1–25 of 30' }).waitFor();
    assert.deepEqual(await pageCells(), shown(first));
    assert.equal(first.operations[0].id, charged, 'the newest first');

    await operations.getByRole('button', { name: 'Next page' }).click();
    await operations.getByRole('status', { name: 'Page' }).filter({ hasText: '26–30 of 30' }).waitFor();
    const second = (await as(ws.apiKey).get('/api/v1/usage/operations?limit=25&offset=25')).body as Listed;
    assert.equal(second.operations.length, 5);
    assert.deepEqual(await pageCells(), shown(second));
    await operations.getByRole('button', { name: 'Previous page' }).click();
    await operations.getByRole('status', { name: 'Page' }).filter({ hasText: '1–25 of 30' }).waitFor();

    await operations.getByRole('button', { name: `Charges of ${charged}` }).click();
    await operations.getByRole('region', { name: `Charges of ${charged}` }).waitFor();
    const api = (await as(ws.apiKey).get(`/api/v1/usage/operations/${charged}/charges`)).body as { charges: Array<{ item: string; quantity: string; unitPrice: string; amount: string }> };
    assert.deepEqual(api.charges.map((c) => [c.item, c.quantity, c.unitPrice, c.amount]), [['query', '1', '0.002', '0.002'], ['records', '29', '0.0001', '0.0029']]);
    assert.deepEqual(await cellsOf(p, 'Charges'), api.charges.map((c) => [c.item, c.quantity, c.unitPrice, c.amount]));
  });

  describe('with billing through Stripe (stripe-mock)', () => {
    const mock = useStripeMock();
    const settings = useProcessSettings(['STRIPE_SECRET_KEY', 'STRIPE_API_URL', 'STRIPE_WEBHOOK_SECRET', 'WEFT_PUBLIC_URL']);
    const configure = () => settings.set({ STRIPE_SECRET_KEY: 'sk_test_123', STRIPE_API_URL: mock.url, STRIPE_WEBHOOK_SECRET: 'whsec_test_secret', WEFT_PUBLIC_URL: env().baseUrl });

    /** Stripe's pages are not reached from the test: a request to any https page answers a stand-in. */
    const standInForStripe = () => browsing.context.route((url) => url.protocol === 'https:', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<title>Stripe</title><p>Stripe stand-in</p>' }));

    it('shows the plan and invoices as the API has them; Checkout and Billing portal go to the URLs the billing operations answer', async () => {
      configure();
      const ws = await newWorkspace();
      await env().db('invoices').insert([
        { id: `in_${randomUUID().replace(/-/g, '')}`, workspace_id: ws.workspaceId, status: 'paid', amount_due: '49.00', amount_paid: '49.00', currency: 'usd', hosted_invoice_url: 'https://invoice.stripe.com/i/one', period_start: '2026-05-01T00:00:00Z', period_end: '2026-06-01T00:00:00Z' },
        { id: `in_${randomUUID().replace(/-/g, '')}`, workspace_id: ws.workspaceId, status: 'open', amount_due: '52.75', amount_paid: '0', currency: 'usd', hosted_invoice_url: null, period_start: '2026-06-01T00:00:00Z', period_end: '2026-07-01T00:00:00Z' },
      ]);
      await standInForStripe();
      const p = browsing.page;
      await acceptAndSignInPage(p, await invite(ws.workspaceId, 'owner'));
      await openUsage(p);

      const billing = (await as(ws.apiKey).get('/api/v1/usage/billing')).body.billing as { plan: string; includedCredit: string; used: string; currency: string };
      const plan = p.getByRole('region', { name: 'Plan' });
      await plan.getByLabel('Plan name').filter({ hasText: billing.plan }).waitFor();
      assert.equal(await plan.getByLabel('Included credit').textContent(), `${billing.includedCredit} ${billing.currency}`);
      assert.equal(await plan.getByLabel('Used this month').textContent(), `${billing.used} ${billing.currency}`);

      const invoices = (await as(ws.apiKey).get('/api/v1/billing/invoices')).body.invoices as Array<{ id: string; status: string; amountDue: string; amountPaid: string; currency: string; hostedInvoiceUrl: string | null; periodStart: string; periodEnd: string }>;
      assert.deepEqual(invoices.map((i) => i.status), ['open', 'paid'], 'newest first');
      await p.getByRole('table', { name: 'Invoices' }).waitFor();
      assert.deepEqual(await cellsOf(p, 'Invoices'), invoices.map((i) => [i.id, i.status, i.periodStart.slice(0, 10), i.periodEnd.slice(0, 10), i.amountDue, i.amountPaid, i.currency.toUpperCase(), i.hostedInvoiceUrl ? `Open ${i.id}` : '—']));
      assert.equal(await p.getByRole('link', { name: `Open ${invoices[1].id}` }).getAttribute('href'), invoices[1].hostedInvoiceUrl);

      // What the console's checkout and portal routes answer, read on its way to the page (which navigates away at once).
      const answers = new Map<string, { status: number; body: { url?: string } }>();
      await p.route((url) => url.pathname.startsWith('/console/api/billing/'), async (route) => {
        const response = await route.fetch();
        answers.set(new URL(route.request().url()).pathname, { status: response.status(), body: await response.json() });
        await route.fulfill({ response });
      });
      for (const [button, path] of [['Checkout', '/console/api/billing/checkout'], ['Billing portal', '/console/api/billing/portal']] as const) {
        await p.getByRole('button', { name: button, exact: true }).click();
        await p.getByText('Stripe stand-in').waitFor();
        const answer = answers.get(path);
        assert.equal(answer?.status, 200, `${button}: ${JSON.stringify(answer)}`);
        const url = answer!.body.url!;
        assert.match(url, /^https:\/\//);
        // (as the browser spells it: a brace in a path is percent-encoded)
        assert.equal(p.url(), new URL(url).href);
        await p.goto(`${base()}/console/usage`);
        await p.getByRole('heading', { name: 'Usage' }).waitFor();
      }
    });

    it('without Stripe, Checkout and Billing portal show the billing operations’ refusal and the page stays; invoices say the same', async () => {
      settings.set({});
      const ws = await newWorkspace();
      const p = browsing.page;
      await acceptAndSignInPage(p, await invite(ws.workspaceId, 'admin'));
      await openUsage(p);
      const refusal = await as(ws.apiKey).get('/api/v1/billing/invoices');
      assert.deepEqual([refusal.status, refusal.body.code], [503, 'billing_unavailable']);
      const shown = `${refusal.body.message} (${refusal.body.code})`;
      await p.getByRole('region', { name: 'Invoices' }).getByRole('alert').filter({ hasText: shown }).waitFor();
      const plan = p.getByRole('region', { name: 'Plan' });
      for (const button of ['Checkout', 'Billing portal']) {
        await plan.getByRole('button', { name: button, exact: true }).click();
        await plan.getByRole('alert').filter({ hasText: '(billing_unavailable)' }).waitFor();
        assert.equal(new URL(p.url()).pathname, '/console/usage');
        await plan.getByRole('button', { name: button, exact: true }).waitFor();
      }
      // The rest of the page works on: the plan is metered as without Stripe.
      await plan.getByLabel('Plan name').waitFor();
    });
  });
});
