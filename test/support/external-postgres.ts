import pg from 'pg';
import { env } from './environment';

/** A client for database `name` on the test cluster, with the user and address of DATABASE_URL. */
export function clientFor(name: string): pg.Client {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return new pg.Client({ connectionString: url.toString() });
}

/** postgres_table installation settings that reach `database` on the test cluster. */
export function installationSettingsFor(database: string): Record<string, unknown> {
  const url = new URL(process.env.DATABASE_URL!);
  return {
    host: url.hostname,
    port: Number(url.port || 5432),
    database,
    user: decodeURIComponent(url.username),
    allowPrivateNetwork: true,
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  };
}

/**
 * A fresh external database for a test file, standing in for a customer's PostgreSQL: created
 * (dropped first if a crashed run left it), connected, and dropped again by `drop`. Name it per
 * file and pid, so concurrent runs on one cluster never share one.
 */
export async function externalDatabase(database: string): Promise<{ client: pg.Client; drop(): Promise<void> }> {
  const admin = clientFor('postgres');
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const client = clientFor(database);
  await client.connect();
  return {
    client,
    async drop() {
      await client.end().catch(() => undefined);
      await env().closePostgresTablePools();
      const dropper = clientFor('postgres');
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).finally(() => dropper.end());
    },
  };
}
