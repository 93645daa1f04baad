import { temporalSecurityConfigured, temporalSettings } from '../../core/temporal-config';
import { createThrowawayDatabase, dropDatabase, ensureDatabase, startLocalPostgres } from './postgres';
import { startLocalTemporal, temporalLease } from './temporal-server';
import { say } from './process';
import { cloneLease, formerPortLease, startShared } from './leases';

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
  /**
   * A throwaway database (a test run's own), dropped when stopping. With DATABASE_URL set it is
   * created on that server under a unique name, and the named database is left untouched.
   */
  dropDatabaseOnStop?: boolean;
  temporal: boolean;
}): Promise<Infrastructure> {
  const stops: Array<() => Promise<void> | void> = [];
  try {
    let databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) {
      const { server: postgres, release } = await startShared(cloneLease('postgres'), startLocalPostgres, (server) => server.stop());
      stops.push(release);
      await ensureDatabase(postgres.urlFor('postgres'), options.database, { recreate: options.recreateDatabase });
      databaseUrl = postgres.urlFor(options.database);
      if (options.dropDatabaseOnStop) stops.push(() => dropDatabase(postgres.urlFor('postgres'), options.database));
    } else if (options.dropDatabaseOnStop) {
      const throwaway = await createThrowawayDatabase(databaseUrl, options.database);
      stops.push(() => throwaway.drop());
      say(`using database ${throwaway.name} on the DATABASE_URL server (dropped at the end; the named database is not touched)`);
      databaseUrl = throwaway.url;
    }

    let temporalAddress = process.env.TEMPORAL_ADDRESS ?? '';
    let temporalUiUrl: string | undefined;
    if (options.temporal) {
      if (!temporalAddress) {
        if (temporalSecurityConfigured()) {
          throw new Error('TEMPORAL_TLS_* / TEMPORAL_API_KEY secure the connection to an external cluster: set TEMPORAL_ADDRESS too (the local dev server speaks plaintext).');
        }
        // Also leased where earlier scripts look (the clone's folder before the port-keyed leases, the
        // runtime folder before the fixed root), so runs of every kind can share one server while a
        // change-over is under way.
        const former = [cloneLease('temporal'), formerPortLease(temporalLease())].filter((folder) => folder !== undefined);
        const { server: temporal, release } = await startShared(temporalLease(), startLocalTemporal, (server) => server.stop(), { alsoLeasedIn: former });
        stops.push(release);
        temporalAddress = temporal.address;
        temporalUiUrl = temporal.uiUrl;
      } else {
        say(`using the Temporal cluster at ${temporalAddress} (namespace ${temporalSettings().namespace})`);
      }
      // Loaded on use: the Temporal client is most of the start-up of a process that prepares no Temporal (the operator CLI).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { connectTemporal, ensureNamespaceAndSearchAttributes } = require('../../core/temporal') as typeof import('../../core/temporal');
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
