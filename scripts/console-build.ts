import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { consoleBuildDir } from '../console/server/build-dir';
import { run, say } from './infra/process';

// The console's bundle (console/web, React built by Vite), rebuilt by `npm start` and `npm test`
// when its sources, its build configuration or the locked dependencies changed since the last
// build: a stamp beside the bundle holds the digest of what it was built from.

const WEB = path.join(projectRoot, 'console', 'web');
const STAMP = '.weft-build-stamp';

function sourcesDigest(): string {
  const hash = createHash('sha256');
  const files = readdirSync(WEB, { recursive: true, encoding: 'utf8' })
    .filter((file) => !file.startsWith('dist') && !file.startsWith('node_modules'))
    .sort();
  for (const file of files) {
    const full = path.join(WEB, file);
    try {
      hash.update(file).update('\0').update(readFileSync(full)).update('\0');
    } catch {
      // A folder.
    }
  }
  hash.update(readFileSync(path.join(projectRoot, 'package-lock.json')));
  return hash.digest('hex');
}

/** Builds the console unless its bundle is current; the new bundle replaces the old one whole. */
export function ensureConsoleBuilt(): void {
  const out = consoleBuildDir();
  const digest = sourcesDigest();
  const stamp = path.join(out, STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) return;
  say('building the console (console/web)…');
  // Built beside and swapped in, so a process serving the old bundle never sees half of the new one.
  const building = `${out}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  run(process.execPath, [path.join(projectRoot, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', path.join(WEB, 'vite.config.mjs')], {
    cwd: projectRoot,
    env: { ...process.env, WEFT_CONSOLE_OUT_DIR: building },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  writeFileSync(path.join(building, STAMP), `${digest}\n`);
  const old = `${out}.old-${process.pid}`;
  // Another `npm test` or `npm start` in this tree may swap its build in at the same moment: whichever
  // lands last is served, and both were built from the same sources.
  const ignoreRace = (error: unknown) => {
    if (!['ENOENT', 'ENOTEMPTY', 'EEXIST'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
  };
  try {
    renameSync(out, old);
  } catch (error) {
    ignoreRace(error);
  }
  try {
    renameSync(building, out);
  } catch (error) {
    ignoreRace(error);
  }
  rmSync(old, { recursive: true, force: true });
  rmSync(building, { recursive: true, force: true });
}

if (require.main === module) ensureConsoleBuilt();
