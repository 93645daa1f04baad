import { logger } from '../../core/logger';
import { declaresGrants, Principal } from '../tenancy/access';
import { isKeyless, Operation } from './operation';

// The operation a piece of work runs for, so that checks made deep in the service layer can hold
// it to its declaration: the data guard and the write policy check named grants, which depend on
// the endpoint, and refuse to do so for an operation that did not declare them. The operation
// rides on the principal its context hands out (those checks are always made with it), not in an
// AsyncLocalStorage: in this Node that one's promise hooks cost on every await of every request.

const running = new WeakMap<Principal, Operation>();

/** The key as `operation` acts with it (invoke() gives every operation's context one): the same fields, its own object. */
export function actingFor(principal: Principal, operation: Operation): Principal {
  const acting = { ...principal };
  running.set(acting, operation);
  return acting;
}

/**
 * Named grants are about to be checked for the operation `principal` acts for: it must declare
 * them. A missing declaration is a defect of the operation, not of the caller: it fails tests, and
 * in production it is logged and the check still runs (the caller is not refused for Weft's mistake).
 */
export function checkingGrants(principal: Principal, kind: 'read' | 'write'): void {
  const operation = running.get(principal);
  if (!operation || isKeyless(operation.access) || declaresGrants(operation.access.grants, kind)) return;
  const message = `${operation.name} checks named ${kind} grants but does not declare them (access.grants)`;
  if (process.env.NODE_ENV === 'test') throw new Error(message);
  logger.error({ operation: operation.name, grants: kind }, message);
}
