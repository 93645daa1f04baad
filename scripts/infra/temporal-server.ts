import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataDir, toolsDir } from '../../core/paths';
import { temporalSettings } from '../../core/temporal-config';
import { LeaseFolder, portLease } from './leases';
import { goBinary, portIsOpen, run, say, waitFor } from './process';

export interface LocalTemporal {
  address: string;
  uiUrl: string;
  startedHere: boolean;
  stop(): Promise<void>;
}

/**
 * A `temporal` on PATH that reports the pinned version (`temporal version 1.5.1 (Server …)`, as
 * the release binaries do), so a machine that has one installed needs no Go build.
 */
export function temporalCliOnPath(cliVersion: string, searchPath = process.env.PATH ?? ''): string | undefined {
  const wanted = cliVersion.replace(/^v/, '');
  for (const folder of searchPath.split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(folder, 'temporal');
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      continue;
    }
    const result = spawnSync(candidate, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    const reported = /temporal version v?(\S+)/.exec(`${result.stdout ?? ''}`)?.[1];
    if (result.status === 0 && reported === wanted) return candidate;
  }
  return undefined;
}

/** The pinned CLI: one on PATH, else built once per machine into the shared tools folder and reused by every clone. */
function ensureTemporalCli(): string {
  const { cliVersion } = temporalSettings().devServer;
  const onPath = temporalCliOnPath(cliVersion);
  if (onPath) return onPath;
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

/** The dev server's port is machine-wide, so its leases (and pid file) are keyed by the port, not the clone. */
export function temporalLease(): LeaseFolder {
  const { ip, port } = temporalSettings().devServer;
  return portLease('temporal', ip, port);
}

const pidFile = () => path.join(temporalLease(), 'dev-server.pid');

/** The dev server the pid file names, while that process is still one (a stale pid may belong to another program by now). */
function recordedDevServer(): number | undefined {
  if (!existsSync(pidFile())) return undefined;
  const pid = Number(readFileSync(pidFile(), 'utf8'));
  const commandLine = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
  return commandLine.includes('start-dev') ? pid : undefined;
}

/**
 * Waits until the recorded dev server has exited. It closes its port before it has closed its
 * SQLite file, and a successor opening that file meanwhile is left failing every transaction.
 */
async function untilRecordedServerGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (recordedDevServer() === pid) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

/** Stops a dev server started by another (now finished) Weft process, found through its pid file, and waits for it to exit. */
async function stopDevServerByPidFile(): Promise<void> {
  const pid = recordedDevServer();
  if (pid === undefined) return rmSync(pidFile(), { force: true });
  say('stopping the Temporal dev server');
  try {
    process.kill(pid, 'SIGTERM');
    if (!(await untilRecordedServerGone(pid, 15_000))) process.kill(pid, 'SIGKILL');
    await untilRecordedServerGone(pid, 5_000);
  } catch {
    // already gone
  }
  rmSync(pidFile(), { force: true });
}

/** `temporal server start-dev` on `port` over `database`, with temporal.yaml's namespace and search attributes. */
function devServerArguments({ ip, port, database }: { ip: string; port: number; database: string }, extra: string[]): string[] {
  const settings = temporalSettings();
  return [
    'server', 'start-dev',
    '--ip', ip,
    '--port', String(port),
    ...extra,
    '--db-filename', database,
    '--namespace', settings.namespace,
    '--log-level', 'warn',
    ...Object.entries(settings.searchAttributes).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
  ];
}

/** A dev server of the pinned CLI that its starter owns alone (see startTemporalDevServer). */
export interface TemporalDevServer {
  address: string;
  pid: number;
  /** Sends the signal (SIGKILL: a crash) and resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts a dev server of the pinned CLI on `port` over the SQLite file `database`, headless, with
 * no pid file or lease: a test's own cluster, which it may kill and start again on the same file.
 * Call again only after the previous server on that file has exited (see untilRecordedServerGone).
 */
export async function startTemporalDevServer({ ip = '127.0.0.1', port, database, logFile }: { ip?: string; port: number; database: string; logFile: string }): Promise<TemporalDevServer> {
  const binary = ensureTemporalCli();
  mkdirSync(path.dirname(database), { recursive: true });
  const out = openSync(logFile, 'a');
  const child: ChildProcess = spawn(binary, devServerArguments({ ip, port, database }, ['--headless']), { stdio: ['ignore', out, out] });
  closeSync(out);
  let exited = false;
  const gone = new Promise<void>((resolve) => child.once('exit', () => {
    exited = true;
    resolve();
  }));
  // Its log's last lines go into the error: the starter may remove the folder that holds it.
  const logTail = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-15).join('\n') : '');
  const deadline = Date.now() + 60_000;
  while (!(await portIsOpen(ip, port))) {
    if (exited) throw new Error(`temporal server start-dev on ${ip}:${port} exited early; ${logFile} ends:\n${logTail()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`The Temporal dev server on ${ip}:${port} did not open its port in 60 s; ${logFile} ends:\n${logTail()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    address: `${ip}:${port}`,
    pid: child.pid!,
    async stop(signal = 'SIGTERM') {
      if (!exited) child.kill(signal);
      await gone;
    },
  };
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

  const previous = recordedDevServer();
  if (previous !== undefined) {
    say('waiting for the previous Temporal dev server to finish stopping');
    if (!(await untilRecordedServerGone(previous, 30_000))) throw new Error(`The previous Temporal dev server (pid ${previous}) is still stopping after 30 s; try again when it has exited.`);
  }
  const binary = ensureTemporalCli();
  const database = path.join(dataDir(), dbFile);
  mkdirSync(path.dirname(database), { recursive: true });
  const logFile = path.join(path.dirname(database), 'dev-server.log');
  const args = devServerArguments({ ip, port, database }, ['--ui-port', String(uiPort)]);
  say(`starting the Temporal dev server on ${address} (Web UI ${uiUrl})`);
  const out = openSync(logFile, 'a');
  // Its own process group: Ctrl-C in the terminal reaches Weft, which drains the worker first and
  // stops the dev server last; and it outlives this process while other clones hold leases on it.
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', out, out], detached: true });
  closeSync(out);
  child.unref();
  mkdirSync(path.dirname(pidFile()), { recursive: true });
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
      if (!exited) {
        say('stopping the Temporal dev server');
        const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await gone;
        clearTimeout(timer);
      }
      // Removed once it has exited: until then a successor waits for it (see untilRecordedServerGone).
      rmSync(pidFile(), { force: true });
    },
  };
}
