import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { TLSConfig } from '@temporalio/client';
import { projectRoot } from './paths';

/** The contents of temporal.yaml: the only place namespace, task queues and dev-server settings are written. */
export interface TemporalSettings {
  namespace: string;
  taskQueues: { main: string };
  searchAttributes: Record<string, 'Keyword' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime' | 'KeywordList'>;
  devServer: { cliVersion: string; ip: string; port: number; uiPort: number; dbFile: string };
  /** The Java test server's Maven version (scripts/infra/temporal-test-server.ts). */
  testServer: { version: string };
}

let cached: TemporalSettings | undefined;

function portSetting(name: string): number | undefined {
  const value = process.env[name]?.trim();
  if (!value) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${name} must be a TCP port, got "${value}".`);
  return port;
}

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
      // WEFT_TEMPORAL_PORT / WEFT_TEMPORAL_UI_PORT give a clone a dev server of its own.
      devServer: {
        ...parsed.devServer,
        port: portSetting('WEFT_TEMPORAL_PORT') ?? parsed.devServer.port,
        uiPort: portSetting('WEFT_TEMPORAL_UI_PORT') ?? parsed.devServer.uiPort,
      },
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

/**
 * How the client and the worker reach Temporal: the address plus, for a secured cluster, TLS
 * (server CA, mTLS client certificate, server name) and an API key (Temporal Cloud). The same
 * options object suits Connection.connect and NativeConnection.connect.
 */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
}

/** The settings that secure the connection, named as the Temporal CLI names them. */
export const TEMPORAL_SECURITY_SETTINGS = [
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CERT_PATH',
  'TEMPORAL_TLS_KEY_PATH',
  'TEMPORAL_TLS_CA_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_API_KEY',
] as const;

function readSettingFile(env: NodeJS.ProcessEnv, name: string): Buffer | undefined {
  const file = env[name]?.trim();
  if (!file) return undefined;
  try {
    return readFileSync(file);
  } catch (error) {
    throw new Error(`${name} names ${file}, which cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`, { cause: error });
  }
}

/**
 * Reads TEMPORAL_TLS_* and TEMPORAL_API_KEY. TLS is on when any TLS setting is given
 * (TEMPORAL_TLS=true alone trusts the system's CAs); an API key alone also turns TLS on (the
 * SDK's default, as Temporal Cloud wants), unless TEMPORAL_TLS=false.
 */
export function temporalConnectionOptions(address = temporalAddress(), env: NodeJS.ProcessEnv = process.env): TemporalConnectionOptions {
  const flag = env.TEMPORAL_TLS?.trim().toLowerCase();
  if (flag && !['true', 'false', '1', '0'].includes(flag)) throw new Error(`TEMPORAL_TLS must be true or false, got "${env.TEMPORAL_TLS}".`);
  const hasCert = Boolean(env.TEMPORAL_TLS_CERT_PATH?.trim());
  const hasKey = Boolean(env.TEMPORAL_TLS_KEY_PATH?.trim());
  if (hasCert !== hasKey) {
    throw new Error(`TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH form the client certificate pair for mTLS: set both or neither (only ${hasCert ? 'the certificate' : 'the key'} is set).`);
  }
  const crt = readSettingFile(env, 'TEMPORAL_TLS_CERT_PATH');
  const key = readSettingFile(env, 'TEMPORAL_TLS_KEY_PATH');
  const ca = readSettingFile(env, 'TEMPORAL_TLS_CA_PATH');
  const serverName = env.TEMPORAL_TLS_SERVER_NAME?.trim();
  const apiKey = env.TEMPORAL_API_KEY?.trim() || undefined;
  const configured = Boolean(crt || ca || serverName);
  if ((flag === 'false' || flag === '0') && configured) {
    throw new Error('TEMPORAL_TLS=false contradicts the TEMPORAL_TLS_* certificate settings: remove one or the other.');
  }
  const options: TemporalConnectionOptions = { address };
  if (configured) {
    options.tls = {
      ...(crt && key ? { clientCertPair: { crt, key } } : {}),
      ...(ca ? { serverRootCACertificate: ca } : {}),
      ...(serverName ? { serverNameOverride: serverName } : {}),
    };
  } else if (flag) {
    options.tls = flag === 'true' || flag === '1';
  }
  if (apiKey) options.apiKey = apiKey;
  return options;
}

/** Whether any setting that secures the connection is given (they make sense only with TEMPORAL_ADDRESS). */
export function temporalSecurityConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return TEMPORAL_SECURITY_SETTINGS.some((name) => Boolean(env[name]?.trim()));
}
