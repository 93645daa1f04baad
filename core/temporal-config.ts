import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from './paths';

/** The contents of temporal.yaml: the only place namespace, task queues and dev-server settings are written. */
export interface TemporalSettings {
  namespace: string;
  taskQueues: { main: string };
  searchAttributes: Record<string, 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList'>;
  devServer: { cliVersion: string; ip: string; port: number; uiPort: number; dbFile: string };
}

let cached: TemporalSettings | undefined;

export function temporalSettings(): TemporalSettings {
  if (!cached) {
    const file = readFileSync(path.join(projectRoot, 'temporal.yaml'), 'utf8');
    const parsed = parse(file) as TemporalSettings;
    cached = {
      ...parsed,
      // TEMPORAL_NAMESPACE lets one cluster host several Weft deployments.
      namespace: process.env.TEMPORAL_NAMESPACE ?? parsed.namespace,
      // WEFT_TASK_QUEUE isolates concurrent test runs sharing one dev server.
      taskQueues: { ...parsed.taskQueues, main: process.env.WEFT_TASK_QUEUE ?? parsed.taskQueues.main },
    };
  }
  return cached;
}

/** Where the worker and client connect: TEMPORAL_ADDRESS, else the local dev server. */
export function temporalAddress(): string {
  const { devServer } = temporalSettings();
  return process.env.TEMPORAL_ADDRESS ?? `${devServer.ip}:${devServer.port}`;
}

/** The Temporal Web UI to link runs to: WEFT_TEMPORAL_UI_URL (set by `npm start` for its dev server), else none. */
export function temporalWebUiUrl(): string | null {
  const url = process.env.WEFT_TEMPORAL_UI_URL?.trim();
  return url ? url.replace(/\/+$/, '') : null;
}
