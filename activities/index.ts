import type { Db } from '../db/connection';
import { createSystemActivities } from './system-check';

export interface ActivityDependencies {
  db: Db;
}

/** Every activity the worker registers, built from their dependencies. */
export function createActivities(deps: ActivityDependencies) {
  return {
    ...createSystemActivities(deps),
  };
}
