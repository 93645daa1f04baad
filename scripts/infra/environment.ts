import { temporalSettings } from '../../core/temporal-config';
import { connectTemporal, ensureNamespaceAndSearchAttributes } from '../../core/temporal';
import { dropDatabase, ensureDatabase, startLocalPostgres } from './postgres';
import { startLocalTemporal } from './temporal-server';
import { say } from './process';
import { startShared } from './leases';

export interface Infrastructure {
  databaseUrl: string;
  temporalAddress: string;
  /** Web UI of the local dev server; undefined for an external cluster. */
  temporalUiUrl?: string;
  /** Stops what this process started (and nothing it merely reused). */
  stop(): Promise<void>;
}

/**
 * PostgreSQL and Temporal for this process: external ones when DATABASE_URL / TEMPORAL_ADDRESS
 * are set, otherwise the project-local cluster and the Temporal dev server, started on demand.
 */
export async function prepareInfrastructure(options: {
  database: string;
  recreateDatabase?: boolean;
  /** Drop the database when stopping (a test run's own database). */
  dropDatabaseOnStop?: boolean;
  temporal: boolean;
}): Promise<Infrastructure> {
  const stops: Array<() => Promise<void> | void> = [];
  try {
    let databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) {
      const { server: postgres, release } = await startShared('postgres', startLocalPostgres, (server) => server.stop());
      stops.push(release);
      await ensureDatabase(postgres.urlFor('postgres'), options.database, { recreate: options.recreateDatabase });
      databaseUrl = postgres.urlFor(options.database);
      if (options.dropDatabaseOnStop) stops.push(() => dropDatabase(postgres.urlFor('postgres'), options.database));
    }

    let temporalAddress = process.env.TEMPORAL_ADDRESS ?? '';
    let temporalUiUrl: string | undefined;
    if (options.temporal) {
      if (!temporalAddress) {
        const { server: temporal, release } = await startShared('temporal', startLocalTemporal, (server) => server.stop());
        stops.push(release);
        temporalAddress = temporal.address;
        temporalUiUrl = temporal.uiUrl;
      } else {
        say(`using the Temporal cluster at ${temporalAddress} (namespace ${temporalSettings().namespace})`);
      }
      const connection = await connectTemporal(temporalAddress);
      await ensureNamespaceAndSearchAttributes(connection);
      await connection.close();
    }

    return {
      databaseUrl,
      temporalAddress,
      temporalUiUrl,
      async stop() {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => undefined);
    throw error;
  }
}
