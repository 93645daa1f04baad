import assert from 'node:assert/strict';
import Koa from 'koa';
import Router from '@koa/router';
import type { AddressInfo } from 'node:net';
import { metricsSettings, startMetricsServer } from '../../observability/metrics-server';
import { observeRequests } from '../../observability/http-requests';
import { tracingConfigured } from '../../observability/tracing';
import { scrape, total, unboundedLabels } from '../support/prometheus';

/*
 * The metrics endpoint's settings and the request middleware, with no database: a Koa app on a
 * real port, requests over HTTP, and its registry scraped from a real metrics server.
 */
describe('Observability settings and the request metrics', () => {
  it('reads the metrics ports and host from the environment, `off` turning an endpoint off', () => {
    assert.deepEqual(metricsSettings('api', {}), { host: '127.0.0.1', port: 9464 });
    assert.deepEqual(metricsSettings('worker', {}), { host: '127.0.0.1', port: 9465 });
    assert.deepEqual(metricsSettings('worker', { WEFT_WORKER_METRICS_PORT: '9100', WEFT_METRICS_HOST: '0.0.0.0' }), { host: '0.0.0.0', port: 9100 });
    assert.equal(metricsSettings('api', { WEFT_METRICS_PORT: 'off' }), undefined);
    assert.throws(() => metricsSettings('api', { WEFT_METRICS_PORT: 'ninety' }), /WEFT_METRICS_PORT must be a TCP port or "off"/);
  });

  it('traces only with an OTLP endpoint', () => {
    assert.equal(tracingConfigured({}), false);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
  });

  it('labels requests by route template, never by raw path, and a port already taken leaves no endpoint', async () => {
    const app = new Koa();
    app.use(observeRequests());
    const router = new Router();
    router.get('/unit-things/:id', (ctx) => void (ctx.body = { ok: true }));
    app.use(router.routes());
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const metrics = (await startMetricsServer('api', { host: '127.0.0.1', port: 0 }))!;
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const id of ['3f1c6f7e-3c1a-4b8e-9d55-0a4f7c1e2b9d', 'secret-value-1', 'x']) assert.equal((await fetch(`${base}/unit-things/${id}`)).status, 200);
      assert.equal((await fetch(`${base}/elsewhere/3f1c6f7e-3c1a-4b8e-9d55-0a4f7c1e2b9d`)).status, 404);
      const { samples } = await scrape(metrics.url);
      assert.equal(total(samples, 'weft_http_request_duration_seconds_count', { route: '/unit-things/:id', method: 'GET', status: '200' }), 3);
      assert.ok(total(samples, 'weft_http_request_duration_seconds_count', { route: 'unmatched', status: '404' }) >= 1);
      assert.deepEqual(unboundedLabels(samples, ['secret-value-1']), []);
      // Only /metrics is served there.
      assert.equal((await fetch(metrics.url.replace(/\/metrics$/, '/other'))).status, 404);
      assert.equal(await startMetricsServer('api', { host: '127.0.0.1', port: Number(new URL(metrics.url).port) }), undefined);
    } finally {
      await metrics.stop();
      server.close();
    }
  });
});
