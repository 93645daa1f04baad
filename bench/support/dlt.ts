/**
 * The dlt peer of the ingest bench: a bench-only Python virtual environment under the project's
 * data folder (`<dataDir>/bench/venv`) with a pinned dlt and its postgres extra, installed from
 * PyPI by the bench itself when missing (never by hand), and the run of bench/support/dlt_ingest.py.
 *
 * On a clean machine: `python3 -m venv` needs ensurepip (Debian's python3-venv). When it is missing
 * and we are root with apt-get, python3-venv is installed the way scripts/infra/chromium.ts installs
 * chromium; otherwise the bench says what to install.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataDir } from '../../core/paths';
import { isRoot, run, say } from '../../scripts/infra/process';

/** The dlt the bench measures; change it here and the next run rebuilds the venv. */
export const DLT_VERSION = '1.31.0';
const REQUIREMENT = `dlt[postgres]==${DLT_VERSION}`;

export const venvDir = (): string => path.join(dataDir(), 'bench', 'venv');
const venvPython = (): string => path.join(venvDir(), 'bin', 'python');
const markerFile = (): string => path.join(venvDir(), '.weft-bench-requirement');

function python3(): string {
  const configured = process.env.WEFT_PYTHON3;
  if (configured) return configured;
  const found = spawnSync('python3', ['--version'], { encoding: 'utf8' });
  if (found.error || found.status !== 0) {
    if (isRoot() && existsSync('/usr/bin/apt-get')) {
      aptInstall(['python3', 'python3-venv']);
      return 'python3';
    }
    throw new Error('The ingest bench needs python3 (with venv) for its dlt peer: install python3 and python3-venv, or set WEFT_PYTHON3.');
  }
  return 'python3';
}

function aptInstall(packages: string[]): void {
  say(`installing ${packages.join(', ')} with apt-get for the bench's dlt peer (first run only)…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { env, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** python3 -m venv; when ensurepip is missing (Debian without python3-venv), installs python3-venv once and tries again. */
function createVenv(python: string, dir: string): void {
  const attempt = () => spawnSync(python, ['-m', 'venv', dir], { encoding: 'utf8' });
  let result = attempt();
  if (result.status !== 0 && isRoot() && existsSync('/usr/bin/apt-get')) {
    rmSync(dir, { recursive: true, force: true });
    const minor = spawnSync(python, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'], { encoding: 'utf8' }).stdout.trim();
    aptInstall(['python3-venv', ...(minor ? [`python${minor}-venv`] : [])].filter((name, i, all) => all.indexOf(name) === i));
    result = attempt();
  }
  if (result.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${python} -m venv ${dir} failed (install python3-venv):\n${result.stdout}${result.stderr}`);
  }
}

/** The venv's python with dlt installed; creates or rebuilds the venv when it is missing or holds another dlt. */
export function ensureDlt(): string {
  const dir = venvDir();
  if (existsSync(venvPython()) && existsSync(markerFile()) && readFileSync(markerFile(), 'utf8').trim() === REQUIREMENT) return venvPython();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.dirname(dir), { recursive: true });
  say(`creating the bench's Python venv at ${dir} with ${REQUIREMENT} (first run only, about a minute)…`);
  createVenv(python3(), dir);
  run(venvPython(), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', REQUIREMENT], { stdio: ['ignore', 'ignore', 'inherit'] });
  writeFileSync(markerFile(), `${REQUIREMENT}\n`);
  return venvPython();
}

export interface DltResult {
  /** Wall time of pipeline.run (extract, normalize, load) as the script measured it. */
  seconds: number;
  /** Wall time of the python process, interpreter and imports included. */
  processSeconds: number;
  rows: number;
  peakRssMb: number;
  /** user + system CPU seconds of the python process and its children. */
  cpuSeconds: number;
}

/**
 * Runs dlt's rest_api source against `apiUrl` (cursor pagination) into `databaseUrl`, dataset
 * `dataset`, table `table`, and reports what the script printed as its last line (JSON).
 */
export async function runDltIngest(options: { python: string; apiUrl: string; databaseUrl: string; dataset: string; table: string; pipelinesDir: string; loaderFileFormat?: string }): Promise<DltResult> {
  const script = path.join(__dirname, 'dlt_ingest.py');
  const started = Date.now();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // dlt's own state (pipeline working folder) stays in the bench's data folder.
    DLT_DATA_DIR: options.pipelinesDir,
    DLT_PROJECT_DIR: options.pipelinesDir,
    RUNTIME__LOG_LEVEL: 'WARNING',
    RUNTIME__DLTHUB_TELEMETRY: 'false',
  };
  // dlt insists on a password; the local cluster trusts loopback connections and ignores it.
  const databaseUrl = new URL(options.databaseUrl);
  if (!databaseUrl.password) databaseUrl.password = 'unused';
  const child = spawn(options.python, [script, '--url', options.apiUrl, '--database-url', databaseUrl.href, '--dataset', options.dataset, '--table', options.table, '--pipelines-dir', options.pipelinesDir, ...(options.loaderFileFormat ? ['--loader-file-format', options.loaderFileFormat] : [])], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`dlt_ingest.py exited with ${code}:\n${output}`);
  const last = output.trim().split('\n').pop() ?? '';
  const parsed = JSON.parse(last) as { seconds: number; rows: number; peak_rss_mb: number; cpu_seconds: number };
  return { seconds: parsed.seconds, processSeconds: (Date.now() - started) / 1000, rows: parsed.rows, peakRssMb: parsed.peak_rss_mb, cpuSeconds: parsed.cpu_seconds };
}
