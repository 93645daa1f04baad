import { spawn, ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataDir, toolsDir } from '../../core/paths';
import { temporalSettings } from '../../core/temporal-config';
import { goBinary, portIsOpen, run, say, waitFor } from './process';

export interface LocalTemporal {
  address: string;
  uiUrl: string;
  startedHere: boolean;
  stop(): Promise<void>;
}

/** The pinned CLI, built once per machine into the shared tools folder and reused by every clone. */
function ensureTemporalCli(): string {
  const { cliVersion } = temporalSettings().devServer;
  const dir = path.join(toolsDir(), `temporal-cli-${cliVersion}`);
  const binary = path.join(dir, 'temporal');
  if (existsSync(binary)) return binary;

  const go = goBinary();
  say(`building the Temporal CLI ${cliVersion} with Go into ${dir} (first run only; this takes several minutes)…`);
  // Build into a scratch folder and rename, so an interrupted build never leaves a half binary.
  const scratch = `${dir}.partial-${process.pid}`;
  mkdirSync(scratch, { recursive: true });
  try {
    run(go, ['install', `github.com/temporalio/cli/cmd/temporal@${cliVersion}`], {
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

const pidFile = () => path.join(dataDir(), 'temporal', 'dev-server.pid');

/** Stops a dev server started by another (now finished) Weft process, found through its pid file. */
async function stopDevServerByPidFile(): Promise<void> {
  if (!existsSync(pidFile())) return;
  const pid = Number(readFileSync(pidFile(), 'utf8'));
  rmSync(pidFile(), { force: true });
  // A stale pid may belong to another program by now: signal it only if it is still a dev server.
  const commandLine = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
  if (!commandLine.includes('start-dev')) return;
  try {
    say('stopping the Temporal dev server');
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone
  }
}

/** Starts `temporal server start-dev` on the temporal.yaml ports unless one is already listening there. */
export async function startLocalTemporal(): Promise<LocalTemporal> {
  const settings = temporalSettings();
  const { ip, port, uiPort, dbFile } = settings.devServer;
  const address = `${ip}:${port}`;
  const uiUrl = `http://${ip}:${uiPort}`;

  if (await portIsOpen(ip, port)) {
    say(`reusing the Temporal server already listening on ${address}`);
    return { address, uiUrl, startedHere: false, stop: () => stopDevServerByPidFile() };
  }

  const binary = ensureTemporalCli();
  const database = path.join(dataDir(), dbFile);
  mkdirSync(path.dirname(database), { recursive: true });
  const logFile = path.join(path.dirname(database), 'dev-server.log');
  const args = [
    'server', 'start-dev',
    '--ip', ip,
    '--port', String(port),
    '--ui-port', String(uiPort),
    '--db-filename', database,
    '--namespace', settings.namespace,
    '--log-level', 'warn',
    ...Object.entries(settings.searchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
  say(`starting the Temporal dev server on ${address} (Web UI ${uiUrl})`);
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', out, out], detached: false });
  writeFileSync(pidFile(), String(child.pid));
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  await waitFor('the Temporal dev server', async () => {
    if (exited) throw new Error(`temporal server start-dev exited early; see ${logFile}`);
    return (await portIsOpen(ip, port)) && (await portIsOpen(ip, uiPort));
  }, 60_000);

  return {
    address,
    uiUrl,
    startedHere: true,
    async stop() {
      rmSync(pidFile(), { force: true });
      if (exited) return;
      say('stopping the Temporal dev server');
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
