import type { ExecutionDependencies } from '../services/pipelines/run-execution';
import { createPipelineRunActivities } from './pipeline-runs';
import { createBillingActivities } from './billing';
import { createPublishedQueryActivities } from './published-queries';
import { createSourceWriteActivities } from './source-writes';
import { createSystemActivities } from './system-check';

export type ActivityDependencies = ExecutionDependencies;

/** Every activity the worker registers, built from their dependencies. */
export function createActivities(deps: ActivityDependencies) {
  return {
    ...createSystemActivities(deps),
    ...createPipelineRunActivities(deps),
    ...createSourceWriteActivities(deps),
    ...createPublishedQueryActivities(deps),
    ...createBillingActivities(deps),
  };
}
