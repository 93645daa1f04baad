import { existsSync } from 'node:fs';
import { spawnSync, SpawnSyncOptions } from 'node:child_process';
import net from 'node:net';

/** Runs a command to completion; throws with its output when it fails. */
export function run(command: string, args: string[], options: SpawnSyncOptions = {}): string {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited with ${result.status}:\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  }
  return String(result.stdout ?? '');
}

export const isRoot = (): boolean => typeof process.getuid === 'function' && process.getuid() === 0;

/** PostgreSQL refuses to run as root, so its tools run as the `postgres` user when we are root. */
export function runAsPostgres(command: string, args: string[], options: SpawnSyncOptions = {}): string {
  return isRoot() ? run('runuser', ['-u', 'postgres', '--', command, ...args], options) : run(command, args, options);
}

export function portIsOpen(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A TCP port of loopback that nothing listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`Timed out after ${timeoutMs / 1000}s waiting for ${what}.`);
}

/** Progress for humans goes to stderr, so stdout stays clean for --json output. */
export const say = (message: string): void => {
  process.stderr.write(`weft: ${message}\n`);
};

/** The Go toolchain that builds pinned tools (the Temporal CLI, stripe-mock): $GO, the official install, or go on PATH. */
export function goBinary(): string {
  return process.env.GO ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go');
}
