import { spawn, ChildProcess } from 'node:child_process';
import path from 'node:path';
import { readdirSync, readFileSync } from 'node:fs';
import { projectRoot } from '../../core/paths';
import { freePort } from '../../scripts/infra/process';
import { SERVICE_NODE_ARGS, WORKER_NODE_ARGS } from '../../worker/node-args';

const tsx = path.join(projectRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs');

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The built start script: `scripts/start.ts` as `npm start`, `npm run api` and `npm run worker`
 * run it, with plain node. The test runner builds dist/ before mocha (scripts/test.ts), so tests
 * start the API and the worker as users run them, and a worker is up in a fraction of the time
 * tsx took to compile it.
 */
export const BUILT_START = 'dist/scripts/start.js';

/**
 * The built operator CLI, as `npm run admin` runs it: log lines on stderr, so --json output stays
 * parseable. (Under tsx each call compiled the CLI's imports again: the CLI's tests took 45 s, 27 built.)
 */
export const runAdmin = (args: string[], env: Record<string, string> = {}): Promise<CommandResult> => runScript('dist/scripts/admin.js', args, { WEFT_LOG_TO_STDERR: '1', ...env });

/** How node runs a built script: a worker with the worker's flags. */
const builtNodeArgs = (args: string[]) => (args[0] === 'worker' ? WORKER_NODE_ARGS : SERVICE_NODE_ARGS);

/** One of Weft's entry points as its own process, as a user would run it: a TypeScript source through tsx, a built module (.js) with plain node. */
function spawnScript(script: string, args: string[], env: Record<string, string>): ChildProcess {
  const loader = script.endsWith('.js') ? builtNodeArgs(args) : [tsx];
  return spawn(process.execPath, [...loader, path.join(projectRoot, script), ...args], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs an entry point to completion. */
export function runScript(script: string, args: string[], env: Record<string, string> = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawnScript(script, args, env);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    // 'close', not 'exit': a process can exit before its last output has been read.
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface RunningScript {
  child: ChildProcess;
  output(): string;
  /** Sends the signal and resolves with the exit code, once the output is complete (but after SIGKILL). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a long-running entry point and waits until its output matches `ready`. */
export function startScript(script: string, args: string[], env: Record<string, string>, ready: RegExp, timeoutMs = 60_000): Promise<RunningScript> {
  return new Promise((resolve, reject) => {
    const child = spawnScript(script, args, env);
    let output = '';
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    // Its output is complete only once its pipes close, which can be after it exits.
    const closed = new Promise<number | null>((done) => child.once('close', (code) => done(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not become ready in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve({
          child,
          output: () => output,
          async stop(signal = 'SIGTERM') {
            child.kill(signal);
            // A SIGKILLed tsx leaves the script it ran holding the pipes (killHard kills it too);
            // its output is not read after a kill.
            return signal === 'SIGKILL' ? exited : closed;
          },
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before it was ready:\n${output}`));
    });
  });
}

/**
 * An API process (`scripts/start.ts api`) on a port the system picks as it binds, with its URL read
 * from its ready line: a port found free beforehand can be taken by another process meanwhile. Like
 * every process a test starts, it keeps the time the test environment's clock holds (the
 * environment sets WEFT_TEST_CLOCK_FILE for them): a test holding the clock holds every API's window.
 */
export async function startApiScript(settings: Record<string, string> = {}, timeoutMs?: number, script = BUILT_START): Promise<{ api: RunningScript; url: string }> {
  const ready = /API:\s+(http:\/\/\S+)\s/;
  const api = await startScript(script, ['api'], { HOST: '127.0.0.1', ...settings, PORT: '0' }, ready, timeoutMs);
  return { api, url: ready.exec(api.output())![1] };
}

export { freePort };

/** Every descendant of a process (tsx runs a script in a child process), read from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 4th field, after the command name in parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** SIGKILLs a started script and every process under it at once, as a machine failure would. */
export async function killHard(script: RunningScript): Promise<void> {
  const pid = script.child.pid!;
  for (const child of descendants(pid)) process.kill(child, 'SIGKILL');
  await script.stop('SIGKILL');
}
