import type { ServiceDependencies } from '../services/operations/context';
import { createPipelineRunActivities } from './pipeline-runs';
import { createBillingActivities } from './billing';
import { createPublishedQueryActivities } from './published-queries';
import { createSourceWriteActivities } from './source-writes';
import { createSystemActivities } from './system-check';

/**
 * Every activity the worker registers, built on the worker's dependencies (workerDependencies,
 * which reach Temporal only through the workflow).
 */
export function createActivities(deps: ServiceDependencies) {
  return {
    ...createSystemActivities(deps),
    ...createPipelineRunActivities(deps),
    ...createSourceWriteActivities(deps),
    ...createPublishedQueryActivities(deps),
    ...createBillingActivities(deps),
  };
}
