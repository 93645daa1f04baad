import { AsyncLocalStorage } from 'node:async_hooks';
import { logger } from '../../core/logger';
import { declaresGrants } from '../tenancy/access';
import { isKeyless, Operation } from './operation';

// The operation a piece of work runs for, so that checks made deep in the service layer can hold
// it to its declaration: the data guard and the write policy check named grants, which depend on
// the endpoint, and refuse to do so for an operation that did not declare them.

const running = new AsyncLocalStorage<Operation>();

/** Runs `work` as `operation` (invoke() does this for every door). */
export const runningAs = <T>(operation: Operation, work: () => Promise<T>): Promise<T> => running.run(operation, work);

/**
 * Named grants are about to be checked for the running operation: it must declare them. A missing
 * declaration is a defect of the operation, not of the caller: it fails tests, and in production
 * it is logged and the check still runs (the caller is not refused for Weft's mistake).
 */
export function checkingGrants(kind: 'read' | 'write'): void {
  const operation = running.getStore();
  if (!operation || isKeyless(operation.access) || declaresGrants(operation.access.grants, kind)) return;
  const message = `${operation.name} checks named ${kind} grants but does not declare them (access.grants)`;
  if (process.env.NODE_ENV === 'test') throw new Error(message);
  logger.error({ operation: operation.name, grants: kind }, message);
}
