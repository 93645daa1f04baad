/**
 * Workflow code reaches the worker as a bundle kept on disk, built in a child process. Bundling in
 * the worker itself left webpack's heap in it for its whole life: about 100 MB of its RSS before any
 * run. The bundle is rebuilt when a file webpack read for it (the project's, or package-lock.json
 * for everything under node_modules) has changed since it was built.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { codeExtension, codeLoaderArgs, dataDir, projectRoot } from '../core/paths';

// Bundled from the code as it runs: the sources, or the built JavaScript (dist/workflows/…), so a
// built worker needs no TypeScript.
const WORKFLOWS = path.join(__dirname, '..', 'workflows', `index${codeExtension}`);
/**
 * Traces a workflow that a tracing client started (observability/tracing.ts). Only in the bundle of
 * workers that trace: its OpenTelemetry SDK doubles the bundle, which each workflow thread holds.
 */
const WORKFLOW_INTERCEPTORS = path.join(__dirname, '..', 'observability', `workflow-interceptors${codeExtension}`);
const LOCKFILE = 'package-lock.json';
const BUNDLER = path.relative(projectRoot, __filename);

interface Manifest {
  /** The bundle file, named by its content hash, in the manifest's folder. */
  code: string;
  /** Each input's path relative to the project root, and the sha256 of its content when bundled. */
  inputs: Record<string, string>;
}

/** The bundles of the built code are kept apart from the sources', so running one does not rebuild the other's. */
export function workflowBundleDir(traced = false): string {
  return path.join(dataDir(), 'workflow-bundle', ...(codeExtension === '.js' ? ['built'] : []), ...(traced ? ['traced'] : []));
}

const sha256 = (content: Buffer | string) => createHash('sha256').update(content).digest('hex');

function hashOf(relative: string): string | undefined {
  try {
    return sha256(readFileSync(path.join(projectRoot, relative)));
  } catch {
    return undefined;
  }
}

/** The kept bundle's path when every input is as it was at bundling; otherwise undefined. */
function current(dir: string): string | undefined {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
  const codePath = path.join(dir, manifest.code);
  if (!existsSync(codePath)) return undefined;
  const unchanged = Object.entries(manifest.inputs).every(([relative, hash]) => hashOf(relative) === hash);
  return unchanged ? codePath : undefined;
}

/** Writes through a temporary name, so a concurrent reader sees the old file or the new, never half of one. */
function writeAtomically(file: string, content: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, file);
}

/** Bundles the workflows (`traced`: with the tracing interceptors) in this process and keeps the bundle in `dir`: run by the child process. */
export async function buildWorkflowBundle(dir: string, traced = false): Promise<string> {
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  let read: string[] = [];
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS,
    workflowInterceptorModules: traced ? [WORKFLOW_INTERCEPTORS] : [],
    logger: { trace() {}, debug() {}, info() {}, log() {}, warn: (m) => console.error(m), error: (m) => console.error(m) },
    // The files webpack read are the bundle's inputs: a change to any of them rebuilds it.
    webpackConfigHook: (config) => ({
      ...config,
      // The worker needs an inline source map (it maps workflow stack traces through it), but not
      // the sources in it: without them the map is about a third of its size, and the worker keeps
      // it, the bundle and their copies in both of its threads.
      devtool: 'inline-nosources-source-map',
      plugins: [
        ...(config.plugins ?? []),
        { apply: (compiler) => compiler.hooks.done.tap('weft-inputs', (stats) => void (read = [...stats.compilation.fileDependencies])) },
      ],
    }),
  });
  const inputs: Record<string, string> = {};
  for (const file of read) {
    const relative = path.relative(projectRoot, file);
    if (relative.startsWith('..') || relative.split(path.sep).includes('node_modules') || !existsSync(file)) continue;
    inputs[relative] = hashOf(relative)!;
  }
  inputs[LOCKFILE] = hashOf(LOCKFILE) ?? '';
  // The bundling options (the interceptor modules, say) are inputs too.
  inputs[BUNDLER] = hashOf(BUNDLER) ?? '';
  mkdirSync(dir, { recursive: true });
  const name = `workflows-${sha256(code).slice(0, 16)}.js`;
  writeAtomically(path.join(dir, name), code);
  writeAtomically(path.join(dir, 'manifest.json'), JSON.stringify({ code: name, inputs } satisfies Manifest, null, 2));
  return path.join(dir, name);
}

function buildInChildProcess(dir: string, traced: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...codeLoaderArgs, __filename, dir, ...(traced ? ['traced'] : [])], { cwd: projectRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => void (errors += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bundling the workflows failed (exit ${code}): ${errors.trim().slice(-2000)}`))));
  });
}

/** The path of a current workflow bundle, built first (in a child process) when there is none. */
export async function workflowBundlePath(dir?: string, traced = false): Promise<{ codePath: string; built: boolean }> {
  dir ??= workflowBundleDir(traced);
  const kept = current(dir);
  if (kept) return { codePath: kept, built: false };
  await buildInChildProcess(dir, traced);
  const codePath = current(dir);
  if (!codePath) throw new Error(`bundling the workflows left no current bundle in ${dir}`);
  return { codePath, built: true };
}

if (require.main === module) {
  buildWorkflowBundle(process.argv[2] ?? workflowBundleDir(), process.argv[3] === 'traced').catch((error: Error) => {
    console.error(error.stack ?? error.message);
    process.exit(1);
  });
}
