import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { toolsDir } from '../../core/paths';
import { goBinary, portIsOpen, run, say, waitFor } from './process';

/** Pinned by the project brief; stripe-mock's bundled OpenAPI spec (and so its API) follows this tag. */
export const STRIPE_MOCK_VERSION = 'v0.203.0';

export interface RunningStripeMock {
  /** Base URL of its plain-HTTP listener, e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** stripe-mock, built once per machine into the shared tools folder, like the Temporal CLI. */
export function ensureStripeMock(): string {
  const dir = path.join(toolsDir(), `stripe-mock-${STRIPE_MOCK_VERSION}`);
  const binary = path.join(dir, 'stripe-mock');
  if (existsSync(binary)) return binary;

  const go = goBinary();
  say(`building stripe-mock ${STRIPE_MOCK_VERSION} with Go into ${dir} (first run only)…`);
  // Build into a scratch folder and rename, so an interrupted build never leaves a half binary
  // and two clones building at once do not overwrite each other's file.
  const scratch = `${dir}.partial-${process.pid}`;
  mkdirSync(scratch, { recursive: true });
  try {
    run(go, ['install', `github.com/stripe/stripe-mock@${STRIPE_MOCK_VERSION}`], {
      env: { ...process.env, GOBIN: scratch, GOFLAGS: process.env.GOFLAGS ?? '-buildvcs=false' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    mkdirSync(path.dirname(dir), { recursive: true });
    if (!existsSync(binary)) renameSync(scratch, dir);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return binary;
}

/**
 * Starts a private stripe-mock on loopback, on ports the OS picks, and resolves once its HTTP
 * port answers. Each caller gets its own process: stripe-mock is stateless and starts in about a
 * second, so there is nothing worth sharing, and concurrent test runs never meet.
 */
export async function startStripeMock(): Promise<RunningStripeMock> {
  const binary = ensureStripeMock();
  // Both listeners are named: in v0.203.0 `-http-addr` alone still opens the default HTTPS port
  // 12112 on every interface, which a second run would fail to bind. Port 0 lets the OS choose
  // (no free-port race); stripe-mock prints the address it got, which we read back.
  const args = ['-http-addr', '127.0.0.1:0', '-https-addr', '127.0.0.1:0'];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void gone.then(() => (exited = true));
  const listening = new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output = (output + chunk).slice(-8_000); // enough for an error; it logs little after start
      const match = /Listening for HTTP at address: 127\.0\.0\.1:(\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error) => reject(new Error(`stripe-mock could not start: ${error.message}`)));
    void gone.then(() => reject(new Error(`stripe-mock exited before listening:\n${output}`)));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000); // kill a hung start; `gone` then rejects
  let port: number;
  try {
    port = await listening;
    await waitFor(`stripe-mock on 127.0.0.1:${port}`, () => portIsOpen('127.0.0.1', port), 10_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  } finally {
    clearTimeout(timer);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      // Go exits on SIGTERM at once; SIGKILL only if it hangs, so a test run never waits long.
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await gone;
      clearTimeout(killer);
    },
  };
}
