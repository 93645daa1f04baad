import { DomainError } from '../../core/errors';
import { type Actor, principalOfActor } from '../tenancy/actors';
import type { ServiceDependencies } from './context';
import { invoke } from './invoke';
import type { Operation } from './operation';

/**
 * Work started by a key or a member and run later (an async job, a scheduled launch, an approved
 * write, a run's reads and commit) invokes its operation as that actor, rebuilt from its id now
 * (principalOfActor): a key revoked or expired since, a narrowed allowlist, a removed member, a
 * changed role or a withdrawn grant refuses the work like a request would be. `deps` are the
 * worker's (workerDependencies): Temporal only through the workflow.
 */
export async function actAs<I, O>(deps: ServiceDependencies, actor: Actor & { workspaceId: string }, requestId: string, operation: Operation<I, O>, input: I): Promise<O> {
  const principal = await principalOfActor(deps, deps.db, actor.workspaceId, actor);
  return invoke({ deps, principal, door: 'activity', requestId }, operation, input);
}

/**
 * Is this error a refusal of the work, final until someone changes the actor or its access: the key
 * is revoked, expired or unknown or the member removed (unauthenticated), the actor may no longer do this
 * (forbidden), or what the work names is gone (not_found)? The work then fails with the reason
 * recorded. Any other error is not about the key: a lost race or a database briefly away
 * (concurrent_change, database_unavailable, which invoke maps like every door) passes, so the
 * activity throws it and Temporal retries.
 */
export function isRefusal(error: unknown): error is DomainError {
  return error instanceof DomainError && (error.kind === 'unauthenticated' || error.kind === 'forbidden' || error.kind === 'not_found');
}
