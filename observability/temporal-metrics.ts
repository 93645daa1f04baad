/**
 * The Temporal SDK's own worker metrics (task slots, pollers, schedule-to-start and poll
 * latencies, sticky cache) come from its Rust core, which serves them in Prometheus text on an
 * address of its own (Runtime telemetry options). The worker's /metrics fetches that text and
 * appends it, so one scrape of the worker has both.
 */
import http from 'node:http';
import net from 'node:net';
import type { TelemetryOptions } from '@temporalio/worker';

/** A loopback address with a free port for the core's exporter (it is read only by this process). */
export function loopbackMetricsAddress(): Promise<string> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject).listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(`127.0.0.1:${port}`));
    });
  });
}

/** The Runtime's telemetry options: Prometheus conventions (seconds, unit and _total suffixes). */
export function temporalTelemetryOptions(bindAddress: string): TelemetryOptions {
  return { metrics: { prometheus: { bindAddress, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } } };
}

/** The core's metrics text; a comment saying why when it cannot be read (the scrape still succeeds). */
export function temporalCoreMetrics(bindAddress: string): Promise<string> {
  return new Promise((resolve) => {
    const request = http.get(`http://${bindAddress}/metrics`, { timeout: 2000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve(res.statusCode === 200 ? (text.endsWith('\n') ? text : `${text}\n`) : `# temporal core metrics: HTTP ${res.statusCode}\n`));
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', (error) => resolve(`# temporal core metrics unavailable: ${error.message}\n`));
  });
}
