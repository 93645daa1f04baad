import assert from 'node:assert/strict';
import { as, newKey, newWorkspace, raiseRequestLimits } from '../../support/fixtures';
import type { BootstrapResult } from '../../../services/tenancy/workspaces';

describe('Ontology definitions: collections, versions, branches, compile and activate', function () {
  this.timeout(60_000);
  let ws: BootstrapResult;
  let client: ReturnType<typeof as>;
  let base: string;
  before(async () => {
    ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    client = as(await newKey(ws, { scopes: ['ontologies:read', 'ontologies:write'] }));
    base = `/api/v1/projects/${ws.projectId}/ontology`;
  });

  it('answers 404 before any package is compiled, then compiles terms, links and shapes into an active package', async () => {
    assert.equal((await client.get(base)).status, 404);
    const customer = await client.post(`${base}/terms`, { id: 'Customer', kind: 'class', label: 'Customer' });
    assert.equal(customer.status, 201, JSON.stringify(customer.body));
    assert.equal(customer.body.term.id, 'Customer');
    assert.equal(customer.body.version.number, 2);
    for (const term of [
      { id: 'Order', kind: 'class' },
      { id: 'name', kind: 'property', domain: 'Customer', datatype: 'xsd:string', minCount: 1, maxCount: 1 },
      { id: 'total', kind: 'property', domain: 'Order', datatype: 'xsd:decimal' },
    ]) assert.equal((await client.post(`${base}/terms`, term)).status, 201);
    assert.equal((await client.post(`${base}/links`, { id: 'placedBy', from: 'Order', to: 'Customer', maxCount: 1 })).status, 201);
    assert.equal((await client.post(`${base}/shapes`, { id: 'OrderShape', targetClass: 'Order', properties: [{ path: 'total', minInclusive: 0 }] })).status, 201);
    assert.equal((await client.post(`${base}/imports`, { id: 'skos', kind: 'vocabulary', vocabulary: 'skos' })).status, 201);

    const compiled = await client.post(`${base}/compile`, {});
    assert.equal(compiled.status, 201, JSON.stringify(compiled.body));
    const pkg = compiled.body.package;
    assert.match(pkg.contentHash, /^sha256:[0-9a-f]{64}$/);
    const again = await client.post(`${base}/compile`, {});
    assert.equal(again.status, 200);
    assert.equal(again.body.package.id, pkg.id, 'the same definition compiles to the same package');

    const turtle = await client.get(`${base}/packages/${pkg.id}`, { headers: { Accept: 'text/turtle' } });
    assert.equal(turtle.status, 200);
    assert.match(String(turtle.body), /owl:ObjectProperty/);

    assert.equal((await client.post(`${base}/activate`, { packageId: pkg.id })).status, 200);
    const ontology = await client.get(base);
    assert.equal(ontology.status, 200, JSON.stringify(ontology.body));
    assert.equal(ontology.body.ontology.package.id, pkg.id);
    assert.equal(ontology.body.ontology.counts.terms, 4);
    assert.equal(ontology.body.ontology.counts.links, 1);
  });

  it('lists every compile problem with its element, and compiles nothing', async () => {
    const branch = await client.post(`${base}/branches`, { name: 'broken' });
    assert.equal(branch.status, 201, JSON.stringify(branch.body));
    assert.equal((await client.post(`${base}/terms?branch=broken`, { id: 'price', kind: 'property', domain: 'Product', datatype: 'xsd:decimal' })).status, 201);
    assert.equal((await client.post(`${base}/links?branch=broken`, { id: 'soldTo', from: 'Product', to: 'Customer' })).status, 201);
    const res = await client.post(`${base}/compile`, { branch: 'broken' });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.code, 'ontology_invalid');
    const elements = res.body.problems.map((p: { element: string }) => p.element).sort();
    assert.deepEqual(elements, ['links/soldTo', 'terms/price']);

    const diff = await client.get(`${base}/compare?base=main&head=broken`);
    assert.equal(diff.status, 200);
    assert.deepEqual(diff.body.added.terms.map((t: { id: string }) => t.id), ['price']);
    assert.deepEqual(diff.body.added.links.map((t: { id: string }) => t.id), ['soldTo']);
  });

  it('imports an uploaded Turtle document whole, and refuses a broken one', async () => {
    const upload = await client.post(`${base}/imports/documents?id=legacy&branch=main`, undefined, {
      rawBody: '@prefix ex: <https://example.com/> . ex:Legacy a <http://www.w3.org/2002/07/owl#Class> .',
      headers: { 'Content-Type': 'text/turtle' },
    });
    assert.equal(upload.status, 201, JSON.stringify(upload.body));
    assert.equal(upload.body.document.tripleCount, 1);
    const broken = await client.post(`${base}/imports/documents?id=broken`, undefined, { rawBody: 'ex:Legacy a', headers: { 'Content-Type': 'text/turtle' } });
    assert.equal(broken.status, 422);
    assert.equal(broken.body.code, 'invalid_rdf');
  });

  it('answers an empty upload with 422: no body at all, or a document without a triple', async () => {
    const before = await client.get(`${base}/imports?branch=main`);
    const none = await client.post(`${base}/imports/documents?id=nothing`, undefined, { rawBody: '', headers: { 'Content-Type': 'text/turtle' } });
    assert.equal(none.status, 422, JSON.stringify(none.body));
    assert.equal(none.body.code, 'body_required');
    for (const [type, text] of [['text/turtle', '@prefix ex: <https://example.com/> .\n# only a comment\n'], ['application/n-triples', '   '], ['application/ld+json', '{}']]) {
      const empty = await client.post(`${base}/imports/documents?id=empty`, undefined, { rawBody: text, headers: { 'Content-Type': type } });
      assert.equal(empty.status, 422, `${type}: ${JSON.stringify(empty.body)}`);
      assert.equal(empty.body.code, 'empty_document');
    }
    assert.deepEqual((await client.get(`${base}/imports?branch=main`)).body, before.body, 'nothing was added');
  });
});
