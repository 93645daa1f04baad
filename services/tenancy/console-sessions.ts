import { createHmac, randomBytes } from 'node:crypto';
import { verify as argon2Verify } from '@node-rs/argon2';
import { AuthenticationError, InputError, NotFoundError, RateLimitError } from '../../core/errors';
import { sha256Hex } from '../../core/secrets';
import type { Db, Executor } from '../../db/connection';
import type { Member } from '../../db/models';
import { normalEmail } from './members';

// Console sessions: a person signs in with an email and a password, which opens every membership
// with that email whose password it is (or through single sign-on, whose verified email opens
// every membership with it); the session then acts as one of them. Only the SHA-256
// digest of a session id is stored; the id itself lives in the browser's HttpOnly cookie. Every
// console request reads its session and member afresh (one indexed query): a removed member or a
// changed role is seen by the next request in every process, with no cache to drop.

export const SESSION_IDLE_HOURS = 8;
export const SESSION_MAX_DAYS = 7;
/** A session's last activity is written at most this often (a write per request is not needed for an idle limit of hours). */
const TOUCH_EVERY_SECONDS = 60;

export const SIGN_IN_WINDOW_MINUTES = 15;
export const ACCOUNT_FAILURES = 10;
export const ADDRESS_FAILURES = 50;

/** A hash no password matches, verified when no member has the email, so both answers take as long. */
const NO_MEMBER_HASH = '$argon2id$v=19$m=19456,t=2,p=1$bm8tbWVtYmVyLXNhbHQ$0mH5Zyn0CGMxyzcSHRGFr8R5cCQ+wLqNGbvN6JZ2m1k';

export interface Membership {
  memberId: string;
  workspaceId: string;
  workspaceName: string;
  role: Member['role'];
}

/** A session as a console request sees it: the member it acts as (null until one is picked) and the others it may pick. */
export interface ConsoleSession {
  idHash: string;
  email: string;
  member: (Pick<Member, 'id' | 'workspaceId' | 'name' | 'email' | 'role' | 'readPermissions' | 'writePermissions'> & { workspaceName: string }) | null;
  memberships: Membership[];
}

const failedSignIn = () => new AuthenticationError('sign_in_failed', 'The email or password is wrong.');

/** The per-session token every console mutation sends in a header (it cannot be read by another site). */
export function csrfTokenOf(encryptionKey: Buffer, sessionId: string): string {
  return createHmac('sha256', encryptionKey).update(`weft-console-csrf\n${sessionId}`).digest('base64url');
}

/**
 * Refuses a sign-in while the account (10) or the client address (50) has failed too often in the
 * last 15 minutes: a 429 whose Retry-After is when the oldest failure that counts leaves the window.
 */
async function refuseWhileLimited(db: Executor, subjects: Array<{ subject: string; limit: number; what: string }>): Promise<void> {
  for (const { subject, limit, what } of subjects) {
    const { rows } = await db.raw<{ rows: Array<{ retry_seconds: string }> }>(
      `SELECT ceil(extract(epoch FROM failed_at + interval '${SIGN_IN_WINDOW_MINUTES} minutes' - now())) AS retry_seconds
         FROM console_sign_in_failures WHERE subject = ? AND failed_at > now() - interval '${SIGN_IN_WINDOW_MINUTES} minutes'
        ORDER BY failed_at DESC OFFSET ? LIMIT 1`,
      [subject, limit - 1],
    );
    if (rows.length) {
      const resetSeconds = Math.max(1, Number(rows[0].retry_seconds));
      throw new RateLimitError(`Too many failed sign-ins for ${what} (${limit} in ${SIGN_IN_WINDOW_MINUTES} minutes). Retry after ${resetSeconds} seconds.`, { limit, remaining: 0, resetSeconds, dimension: what === 'this account' ? 'sign_in_account' : 'sign_in_address' });
    }
  }
}

/** The workspaces' members with this email (normalised), with their password's hash if they set one. */
async function membershipsWith(db: Executor, email: string): Promise<Array<Membership & { passwordHash: string | null }>> {
  return db('members as m')
    .join('workspaces as w', 'w.id', 'm.workspaceId')
    .whereRaw('lower(m.email) = ?', [email])
    .whereNull('m.removedAt')
    .orderBy('w.name')
    .select('m.id as memberId', 'm.workspaceId', 'w.name as workspaceName', 'm.role', 'm.passwordHash');
}

/**
 * A new session that opened these memberships, acting as the only one at once, or as the one
 * picked later. Returns its id, which is stored nowhere but in the cookie.
 */
async function openSession(trx: Executor, opened: Membership[]): Promise<string> {
  const sessionId = randomBytes(32).toString('base64url');
  await trx('console_sessions').insert({
    idHash: sha256Hex(sessionId),
    memberIds: opened.map((m) => m.memberId),
    memberId: opened.length === 1 ? opened[0].memberId : null,
    endsAt: trx.raw(`now() + interval '${SESSION_MAX_DAYS} days'`),
  });
  return sessionId;
}

/**
 * Signs a person in: the memberships with this email whose password this is open a new session,
 * acting as the only one at once, or as the one picked later. A wrong password (or an unknown
 * email: the same answer, after as long) is a failure counted for the account and the address.
 * Returns the session id, which is stored nowhere but in the cookie.
 */
export async function signIn(db: Db, input: { email: string; password: string; clientAddress: string }): Promise<{ sessionId: string; session: ConsoleSession }> {
  if (typeof input.email !== 'string' || typeof input.password !== 'string' || !input.email.trim() || !input.password) {
    throw new InputError('credentials_required', 'Send an email and a password.', [{ path: '/email', message: 'is required' }]);
  }
  const email = normalEmail(input.email).slice(0, 320);
  const account = `account:${email}`;
  const address = `address:${input.clientAddress}`;
  const outcome = await db.transaction(async (trx) => {
    // Attempts for one account take turns, so parallel guesses cannot all pass the count below.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 36))', [account]);
    await refuseWhileLimited(trx, [{ subject: account, limit: ACCOUNT_FAILURES, what: 'this account' }, { subject: address, limit: ADDRESS_FAILURES, what: 'this client address' }]);
    // A member who never set a password (invited, or signing in with single sign-on only) has none to match.
    const candidates = (await membershipsWith(trx, email)).filter((m): m is Membership & { passwordHash: string } => m.passwordHash !== null);
    const opened: Membership[] = [];
    for (const { passwordHash, ...membership } of candidates) if (await argon2Verify(passwordHash, input.password)) opened.push(membership);
    if (!candidates.length) await argon2Verify(NO_MEMBER_HASH, input.password).catch(() => false);
    if (!opened.length) {
      await trx('console_sign_in_failures').insert([{ subject: account }, { subject: address }]);
      await trx('console_sign_in_failures').whereIn('subject', [account, address]).where('failedAt', '<=', trx.raw(`now() - interval '${SIGN_IN_WINDOW_MINUTES} minutes'`)).delete();
      return undefined;
    }
    return openSession(trx, opened);
  });
  // The failure is committed before the refusal leaves.
  if (!outcome) throw failedSignIn();
  const session = await sessionOf(db, outcome);
  if (!session) throw failedSignIn();
  return { sessionId: outcome, session };
}

/**
 * Signs in the person whose email an OpenID provider verified (services/tenancy/single-sign-on.ts):
 * every membership with that email opens, password or not, as a password opens its own; none,
 * no session (undefined). Such a refusal is no guess at a secret, so it counts toward no limit.
 */
export async function signInWithVerifiedEmail(db: Db, verifiedEmail: string): Promise<{ sessionId: string; session: ConsoleSession } | undefined> {
  const email = normalEmail(verifiedEmail);
  const sessionId = await db.transaction(async (trx) => {
    const opened = await membershipsWith(trx, email);
    return opened.length ? openSession(trx, opened) : undefined;
  });
  if (!sessionId) return undefined;
  const session = await sessionOf(db, sessionId);
  return session && { sessionId, session };
}

/**
 * The live session of this id: not signed out, within 7 days of signing in and 8 hours of its last
 * request, with the member it acts as still in the workspace (a removed member's session ends
 * here, whatever process removed them), their role and grants as they are now.
 */
export async function sessionOf(db: Executor, sessionId: string): Promise<ConsoleSession | undefined> {
  const idHash = sha256Hex(sessionId);
  const row = await db('console_sessions as s')
    .leftJoin('members as m', (join) => join.on('m.id', 's.memberId').andOnNull('m.removedAt'))
    .leftJoin('workspaces as w', 'w.id', 'm.workspaceId')
    .where('s.idHash', idHash)
    .where('s.endsAt', '>', db.fn.now())
    .where('s.lastActiveAt', '>', db.raw(`now() - interval '${SESSION_IDLE_HOURS} hours'`))
    .first(
      's.memberIds', 's.memberId as chosenId', db.raw(`s.last_active_at < now() - interval '${TOUCH_EVERY_SECONDS} seconds' AS stale`),
      'm.id', 'm.workspaceId', 'm.name', 'm.email', 'm.role', 'm.readPermissions', 'm.writePermissions', 'w.name as workspaceName',
    );
  if (!row) return undefined;
  if (row.chosenId && !row.id) {
    // The member it acted as left the workspace: the session is over.
    await db('console_sessions').where({ idHash }).delete();
    return undefined;
  }
  const memberships: Membership[] = await db('members as m')
    .join('workspaces as w', 'w.id', 'm.workspaceId')
    .whereIn('m.id', row.memberIds)
    .whereNull('m.removedAt')
    .orderBy('w.name')
    .select('m.id as memberId', 'm.workspaceId', 'w.name as workspaceName', 'm.role');
  if (!memberships.length) {
    await db('console_sessions').where({ idHash }).delete();
    return undefined;
  }
  if (row.stale) await db('console_sessions').where({ idHash }).update({ lastActiveAt: db.fn.now() });
  const email = row.email ?? (await db('members').whereIn('id', row.memberIds).first('email'))?.email ?? '';
  return {
    idHash,
    email,
    member: row.id ? { id: row.id, workspaceId: row.workspaceId, name: row.name, email: row.email, role: row.role, readPermissions: row.readPermissions, writePermissions: row.writePermissions, workspaceName: row.workspaceName } : null,
    memberships,
  };
}

/** The session acts as another of the memberships it opened (the workspace picker). */
export async function chooseMembership(db: Executor, session: ConsoleSession, memberId: string): Promise<void> {
  if (!session.memberships.some((m) => m.memberId === memberId)) throw new NotFoundError('membership', 'This session opened no membership with this id.');
  await db('console_sessions').where({ idHash: session.idHash }).update({ memberId, lastActiveAt: db.fn.now() });
}

/** Signs out: the session is gone. */
export async function signOut(db: Executor, session: ConsoleSession): Promise<void> {
  await db('console_sessions').where({ idHash: session.idHash }).delete();
}
