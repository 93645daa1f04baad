import assert from 'node:assert/strict';
import { chromium, Browser } from 'playwright-core';
import { ensureChromium } from '../../../scripts/infra/chromium';
import { env } from '../../support/environment';
import { as, request } from '../../support/fixtures';
import { customerOntology, OntologyTenant, ontologyTenant } from '../../support/ontology';

describe('The SPARQL query page in headless Chromium', function () {
  // The first run on a machine may install Debian's chromium.
  this.timeout(600_000);
  let browser: Browser;
  let t: OntologyTenant;
  before(async () => {
    browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox'] });
    t = await ontologyTenant();
    await customerOntology(t);
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  });
  after(async () => {
    await browser?.close();
  });

  it('is public, holds no data, and forbids inline scripts', async () => {
    const page = await request('GET', '/sparql', { key: null });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy')!, /default-src 'self'/);
    for (const secret of [t.key, t.ws.apiKey, t.ws.projectId, t.ws.workspaceId]) assert.ok(!String(page.body).includes(secret), 'no tenant data on the page');
    assert.doesNotMatch(String(page.body), /<script>[^<]/, 'no inline script');
  });

  it('runs a query with the pasted key as a Bearer header and shows the results', async () => {
    const page = await browser.newPage();
    const sent: Array<{ url: string; authorization: string | undefined }> = [];
    page.on('request', (req) => {
      if (req.url().includes('/ontology/sparql')) sent.push({ url: req.url(), authorization: req.headers().authorization });
    });
    await page.goto(`${env().baseUrl}/sparql`);
    await page.fill('#project', t.ws.projectId);
    await page.fill('#key', t.key);
    await page.click('button[type=submit]');
    await page.evaluate(() => {
      const yasgui = (globalThis as unknown as { weftYasgui: { getTab(): { setQuery(q: string): void; query(): Promise<unknown> } } }).weftYasgui;
      const tab = yasgui.getTab();
      tab.setQuery('SELECT ?class WHERE { ?class a <http://www.w3.org/2002/07/owl#Class> } ORDER BY ?class');
      return tab.query();
    });
    await page.waitForSelector('.yasr table td', { timeout: 30_000 });
    const cells = await page.$$eval('.yasr table td', (tds) => tds.map((td) => td.textContent ?? ''));
    assert.ok(cells.some((text) => text.includes('Customer')), cells.join(' | '));
    assert.equal(sent.length, 1);
    assert.equal(sent[0].authorization, `Bearer ${t.key}`);
    assert.ok(!sent[0].url.includes(t.key), 'the key never goes into the URL');
  });
});
