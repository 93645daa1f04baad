import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { env } from '../../support/environment';
import { as, newWorkspace, raiseRequestLimits } from '../../support/fixtures';

// Two downgrades at once (a double click, a retry after a timeout) both read the subscription as
// paying and both cancel it at Stripe, since no lock is held across a Stripe call. Stripe refuses
// to cancel a canceled subscription (404 resource_missing), which stripe-mock, keeping no state,
// cannot show: this peer answers the subscription calls as Stripe does, holding the first cancel
// until the second arrives. Review s30 found the second downgrade answering 500.
describe('Two downgrades at once', function () {
  this.timeout(60_000);
  const saved = { key: process.env.STRIPE_SECRET_KEY, url: process.env.STRIPE_API_URL };
  let server: http.Server;
  const canceled = new Set<string>();
  const deletes: string[] = [];
  let held: (() => void) | undefined;

  before(async () => {
    // Stripe's behaviour for DELETE /v1/subscriptions/:id, the first call held until a second arrives.
    server = http.createServer((req, res) => {
      req.resume();
      const id = /^\/v1\/subscriptions\/([^/?]+)/.exec(req.url ?? '')?.[1];
      if (req.method === 'GET' && id) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, object: 'subscription', status: canceled.has(id) ? 'canceled' : 'active' }));
        return;
      }
      if (req.method !== 'DELETE' || !id) {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'invalid_request_error', message: `unexpected ${req.method} ${req.url}` } }));
        return;
      }
      deletes.push(id);
      const answer = () => {
        if (canceled.has(id)) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { type: 'invalid_request_error', code: 'resource_missing', param: 'id', message: `No such subscription: '${id}'` } }));
          return;
        }
        canceled.add(id);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, object: 'subscription', status: 'canceled' }));
      };
      if (!held) {
        const timer = setTimeout(() => {
          held = undefined;
          answer();
        }, 5000);
        held = () => {
          clearTimeout(timer);
          answer();
        };
      } else {
        const first = held;
        held = undefined;
        first();
        answer();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    process.env.STRIPE_SECRET_KEY = 'sk_test_probe';
    process.env.STRIPE_API_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    if (saved.key === undefined) delete process.env.STRIPE_SECRET_KEY;
    else process.env.STRIPE_SECRET_KEY = saved.key;
    if (saved.url === undefined) delete process.env.STRIPE_API_URL;
    else process.env.STRIPE_API_URL = saved.url;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('both answer 200, the subscription is canceled once, and the workspace is on the free plan', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const sub = `sub_probe_${ws.workspaceId.slice(0, 8)}`;
    await env().db('workspaces').where({ id: ws.workspaceId }).update({ stripe_customer_id: `cus_probe_${ws.workspaceId.slice(0, 8)}`, plan: 'team', stripe_subscription_id: sub });
    await env().db('stripe_subscriptions').insert({ id: sub, workspace_id: ws.workspaceId, status: 'active', updated_at: new Date() });

    const admin = as(ws.apiKey);
    const answers = await Promise.all([admin.post('/api/v1/billing/downgrade', {}), admin.post('/api/v1/billing/downgrade', {})]);
    const row = await env().db('workspaces').where({ id: ws.workspaceId }).first();
    assert.deepEqual(
      answers.map((res) => res.status),
      [200, 200],
      `Stripe saw ${deletes.length} DELETEs; answers: ${JSON.stringify(answers.map((res) => [res.status, res.body]))}; plan now ${row.plan}`,
    );
    assert.equal(row.plan, 'free');
    assert.equal((await env().db('stripe_subscriptions').where({ id: sub }).first()).status, 'canceled');
  });
});
