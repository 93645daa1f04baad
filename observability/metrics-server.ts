/**
 * GET /metrics on a port of its own, beside the API's and off its authentication: Prometheus
 * scrapes it from inside the deployment. It binds to loopback unless told otherwise.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { logger } from '../core/logger';
import { registry } from './metrics';

export type MetricsRole = 'api' | 'worker';

const PORT_VARIABLE: Record<MetricsRole, string> = { api: 'WEFT_METRICS_PORT', worker: 'WEFT_WORKER_METRICS_PORT' };
const DEFAULT_PORT: Record<MetricsRole, number> = { api: 9464, worker: 9465 };

/** Where a role serves its metrics: WEFT_METRICS_PORT / WEFT_WORKER_METRICS_PORT (`off` disables), on WEFT_METRICS_HOST. */
export function metricsSettings(role: MetricsRole, env: NodeJS.ProcessEnv = process.env): { host: string; port: number } | undefined {
  const raw = env[PORT_VARIABLE[role]]?.trim();
  if (raw === 'off') return undefined;
  const port = raw ? Number(raw) : DEFAULT_PORT[role];
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${PORT_VARIABLE[role]} must be a TCP port or "off", got "${raw}".`);
  return { host: env.WEFT_METRICS_HOST?.trim() || '127.0.0.1', port };
}

export interface MetricsServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * Serves the registry's metrics, followed by `more()` (the Temporal SDK's own, on the worker).
 * A port already taken is logged and leaves the process serving without metrics: metrics never
 * keep the API or the worker from starting.
 */
export async function startMetricsServer(role: MetricsRole, settings: { host: string; port: number }, more?: () => Promise<string>): Promise<MetricsServer | undefined> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is served here.\n');
      return;
    }
    void Promise.all([registry.metrics(), more?.() ?? ''])
      .then(([own, extra]) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(req.method === 'HEAD' ? undefined : own + extra))
      .catch((error: Error) => res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end(`Collecting the metrics failed: ${error.message}\n`));
  });
  try {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(settings.port, settings.host, resolve));
  } catch (error) {
    logger.error({ role, host: settings.host, port: settings.port, err: (error as Error).message }, 'metrics endpoint not started');
    return undefined;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}/metrics`;
  logger.info({ role, url }, 'metrics endpoint serving');
  return {
    url,
    stop: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
