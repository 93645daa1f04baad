import { chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dataDir } from '../../core/paths';

/**
 * Several local processes (npm start, concurrent npm test runs) can share the PostgreSQL cluster
 * and Temporal dev server one of them started. Each holds a lease; the last one out stops a
 * service only when the process that started it is gone, so nobody's server vanishes mid-run.
 *
 * A lease folder lives where the thing it guards is shared: the clone's own PostgreSQL cluster
 * under the clone's data folder; a server on a machine-wide port (the Temporal dev server) under
 * a folder keyed by that port, so every clone on the machine that uses it holds a lease on it.
 */
export type LeaseFolder = string;

/** Leases on something of this clone's alone (its PostgreSQL cluster). */
export const cloneLease = (service: string): LeaseFolder => path.join(dataDir(), 'leases', service);

/**
 * Where leases on machine-wide ports live: WEFT_LEASE_DIR, else one folder per user in /tmp. Fixed
 * by the uid alone, not by the session's XDG_RUNTIME_DIR or TMPDIR, which an ssh or cron shell (or
 * sudo -E) may lack or set otherwise: the user's every process must find the same leases for a port.
 * Per user, not per machine: another user's processes could not remove our lease files anyway, and
 * two users give each other their own ports (docs/operating/local-infrastructure.md, "Sharing a machine").
 */
export function machineLeaseRoot(): string {
  if (process.env.WEFT_LEASE_DIR) return path.resolve(process.env.WEFT_LEASE_DIR);
  const uid = currentUid();
  const root = path.join('/tmp', `weft-leases-${uid}`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  // In a folder every user can write to: refuse one somebody else made (or linked) under our name.
  const made = lstatSync(root);
  if (!made.isDirectory() || made.uid !== uid) throw new Error(`${root} is not a folder of this user's (uid ${uid}); remove it, or set WEFT_LEASE_DIR.`);
  if ((made.mode & 0o077) !== 0) chmodSync(root, 0o700);
  return root;
}

/** Read from the process, not the passwd database (a container's uid may have no entry). */
const currentUid = (): number => process.getuid?.() ?? os.userInfo().uid;

/**
 * Where earlier code, which put the root in XDG_RUNTIME_DIR, keeps the same lease: the user's
 * runtime folder, when there is one. Leased there too while such processes may still run, so they
 * and the current code see each other's leases; drop this once none can.
 */
export function formerPortLease(lease: LeaseFolder): LeaseFolder | undefined {
  const runtime = process.env.XDG_RUNTIME_DIR || `/run/user/${currentUid()}`;
  if (process.env.WEFT_LEASE_DIR || !existsSync(runtime)) return undefined;
  return path.join(runtime, 'weft-leases', path.basename(lease));
}

/** Leases on a server at a machine-wide address, shared by every clone that uses it. */
export const portLease = (service: string, host: string, port: number): LeaseFolder => path.join(machineLeaseRoot(), `${service}-${host}-${port}`);

/** Whether a process of this pid runs (one of another user's counts: EPERM). */
export const alive = (pid: number): boolean => {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Takes a lease for `holder` (this process unless said otherwise); `startedHere` records it as the server's starter. */
export function acquireLease(lease: LeaseFolder, startedHere: boolean, holder = process.pid): void {
  mkdirSync(lease, { recursive: true });
  writeFileSync(path.join(lease, String(holder)), '');
  if (startedHere) writeFileSync(path.join(lease, 'owner'), String(holder));
}

/** Releases `holder`'s lease; true when the caller should stop the service. */
export function releaseLease(lease: LeaseFolder, holder = process.pid): boolean {
  rmSync(path.join(lease, String(holder)), { force: true });
  if (!existsSync(lease)) return true;
  // Lease files are named by pid; the rest (owner, the start lock, a server's pid file) are not leases.
  // Those of processes that died without releasing (kill -9) are cleared away.
  const others = readdirSync(lease).filter((name) => {
    if (!/^\d+$/.test(name)) return false;
    if (alive(Number(name))) return true;
    rmSync(path.join(lease, name), { force: true });
    return false;
  });
  if (others.length > 0) return false;
  const ownerFile = path.join(lease, 'owner');
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
  const ownerGone = owner === holder || !alive(owner);
  if (ownerGone) rmSync(ownerFile, { force: true });
  return ownerGone;
}

/**
 * Starts (or joins) a local server shared by concurrent Weft processes: under the start lock it
 * starts or reuses the server and takes a lease; the returned `release` gives the lease back and,
 * under the same lock, stops the server when this was the last holder and its starter is gone.
 */
export async function startShared<T extends { startedHere: boolean }>(
  lease: LeaseFolder,
  start: () => Promise<T>,
  stop: (server: T) => void | Promise<void>,
  options: { alsoLeasedIn?: LeaseFolder[] } = {},
): Promise<{ server: T; release: () => Promise<void> }> {
  const { alsoLeasedIn = [] } = options;
  const server = await withStartLock(lease, async () => {
    const started = await start();
    acquireLease(lease, started.startedHere);
    for (const former of alsoLeasedIn) acquireLease(former, false);
    return started;
  });
  const release = () =>
    withStartLock(lease, async () => {
      // Every folder is released (not just up to the first with holders left): none keeps ours.
      const othersThere = alsoLeasedIn.map((former) => !releaseLease(former)).includes(true);
      if (releaseLease(lease) && !othersThere) await stop(server);
    });
  return { server, release };
}

/**
 * Serialises "is it running? start it" between local processes, so two that begin together do
 * not both start a server on the same port. A lock left by a dead process is taken over.
 */
export async function withStartLock<T>(lease: LeaseFolder, work: () => Promise<T>): Promise<T> {
  mkdirSync(lease, { recursive: true });
  const lock = path.join(lease, 'starting.lock');
  // Long enough for a first-run Temporal CLI build by the holder.
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    // Written whole under a private name, then linked into place: the lock never exists half-written.
    const mine = `${lock}.${process.pid}`;
    writeFileSync(mine, String(process.pid));
    try {
      linkSync(mine, lock);
      rmSync(mine, { force: true });
      break;
    } catch {
      rmSync(mine, { force: true });
      let holder: number;
      try {
        holder = Number(readFileSync(lock, 'utf8'));
      } catch {
        continue; // released between our attempt and the read
      }
      if (!alive(holder)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`Timed out waiting for process ${holder} to finish starting the server leased in ${lease}.`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { force: true });
  }
}
