import { logger } from '../../core/logger';
import { declaresGrants, Principal } from '../tenancy/access';
import { isKeyless, Operation } from './operation';

// The operation a piece of work runs for, so that checks made deep in the service layer can hold
// it to its declaration: the data guard and the write policy check named grants, which depend on
// the endpoint, and refuse to do so for an operation that did not declare them. The operation
// rides on the principal its context hands out (those checks are always made with it), not in an
// AsyncLocalStorage: in this Node that one's promise hooks cost on every await of every request.
// It is an enumerable symbol property, so a copy of the principal ({ ...principal }) keeps it and
// JSON (logs, workflow inputs) never shows it.

const ACTING_FOR = Symbol('weft.actingFor');
type Acting = Principal & { [ACTING_FOR]?: Operation };

/** The key as `operation` acts with it (invoke() gives every operation's context one): the same fields, its own object. */
export function actingFor(principal: Principal, operation: Operation): Principal {
  return { ...principal, [ACTING_FOR]: operation } as Acting;
}

/**
 * Named grants are about to be checked for the operation `principal` acts for: it must declare
 * them. A missing declaration, or a principal no operation hands out, is a defect of Weft, and
 * fails closed in every environment: the work is refused rather than checked against grants its
 * operation never declared.
 */
export function checkingGrants(principal: Principal, kind: 'read' | 'write'): void {
  const operation = (principal as Acting)[ACTING_FOR];
  if (operation && (isKeyless(operation.access) || declaresGrants(operation.access.grants, kind))) return;
  const message = operation
    ? `${operation.name} checks named ${kind} grants but does not declare them (access.grants)`
    : `named ${kind} grants are checked for a principal no operation acts with (made outside invoke)`;
  logger.error({ operation: operation?.name, grants: kind }, message);
  throw new Error(message);
}
