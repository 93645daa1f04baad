import type { Db } from '../db/connection';
import { workerDependencies } from '../services/operations/context';
import { createPipelineRunActivities } from './pipeline-runs';
import { createBillingActivities } from './billing';
import { createPublishedQueryActivities } from './published-queries';
import { createSourceWriteActivities } from './source-writes';
import { createSystemActivities } from './system-check';

/**
 * Every activity the worker registers, built from the worker's database and encryption key: their
 * service dependencies reach Temporal only through the workflow (workerDependencies).
 */
export function createActivities({ db, encryptionKey }: { db: Db; encryptionKey: Buffer }) {
  const deps = workerDependencies({ db, encryptionKey });
  return {
    ...createSystemActivities(deps),
    ...createPipelineRunActivities(deps),
    ...createSourceWriteActivities(deps),
    ...createPublishedQueryActivities(deps),
    ...createBillingActivities(deps),
  };
}
