import { existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataDir } from '../../core/paths';

/**
 * Several local processes (npm start, concurrent npm test runs) can share the PostgreSQL cluster
 * and Temporal dev server one of them started. Each holds a lease; the last one out stops a
 * service only when the process that started it is gone, so nobody's server vanishes mid-run.
 */
const folder = (service: string) => path.join(dataDir(), 'leases', service);

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export function acquireLease(service: string, startedHere: boolean): void {
  mkdirSync(folder(service), { recursive: true });
  writeFileSync(path.join(folder(service), String(process.pid)), '');
  if (startedHere) writeFileSync(path.join(folder(service), 'owner'), String(process.pid));
}

/** Releases this process's lease; true when the caller should stop the service. */
export function releaseLease(service: string): boolean {
  const dir = folder(service);
  rmSync(path.join(dir, String(process.pid)), { force: true });
  if (!existsSync(dir)) return true;
  const others = readdirSync(dir).filter((name) => name !== 'owner' && alive(Number(name)));
  if (others.length > 0) return false;
  const ownerFile = path.join(dir, 'owner');
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
  const ownerGone = owner === process.pid || !alive(owner);
  if (ownerGone) rmSync(ownerFile, { force: true });
  return ownerGone;
}

/**
 * Starts (or joins) a local server shared by concurrent Weft processes: under the start lock it
 * starts or reuses the server and takes a lease; the returned `release` gives the lease back and,
 * under the same lock, stops the server when this was the last holder and its starter is gone.
 */
export async function startShared<T extends { startedHere: boolean }>(
  service: string,
  start: () => Promise<T>,
  stop: (server: T) => void | Promise<void>,
): Promise<{ server: T; release: () => Promise<void> }> {
  const server = await withStartLock(service, async () => {
    const started = await start();
    acquireLease(service, started.startedHere);
    return started;
  });
  const release = () =>
    withStartLock(service, async () => {
      if (releaseLease(service)) await stop(server);
    });
  return { server, release };
}

/**
 * Serialises "is it running? start it" between local processes, so two that begin together do
 * not both start a server on the same port. A lock left by a dead process is taken over.
 */
export async function withStartLock<T>(service: string, work: () => Promise<T>): Promise<T> {
  mkdirSync(folder(service), { recursive: true });
  const lock = path.join(folder(service), 'starting.lock');
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
      const holder = Number(readFileSync(lock, 'utf8'));
      if (!alive(holder)) {
        rmSync(lock, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`Timed out waiting for process ${holder} to finish starting ${service}.`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { force: true });
  }
}
