import { createHash } from 'node:crypto';
import { Dirent, existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { say } from './infra/process';

// A build kept in a git-ignored folder and made again only when what it is built from changed: a
// stamp in the folder holds the digest of its inputs (each file's path and content) as they were
// when it was built. Hashing the few megabytes of sources takes milliseconds; file times would
// also change with a checkout that leaves the content as it was.

const STAMP = '.weft-build-stamp';

/** The files under `folder`, sorted, but those (and the folders' contents) whose path relative to it `skip` names. */
export function filesUnder(folder: string, skip: (relative: string, entry: Dirent) => boolean): string[] {
  const found: string[] = [];
  const visit = (relativeFolder: string) => {
    for (const entry of readdirSync(path.join(folder, relativeFolder), { withFileTypes: true })) {
      const relative = path.join(relativeFolder, entry.name);
      if (skip(relative, entry)) continue;
      if (entry.isDirectory()) visit(relative);
      else if (entry.isFile()) found.push(path.join(folder, relative));
    }
  };
  visit('');
  return found.sort();
}

function digestOf(inputs: string[]): string {
  const hash = createHash('sha256');
  for (const file of inputs) hash.update(path.relative(projectRoot, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

export interface KeptBuild {
  /** What is built, for the message saying it is. */
  name: string;
  /** The folder the build is kept in (and served or run from). */
  out: string;
  /** The files it is built from: any change to one builds again. */
  inputs(): string[];
  /** Builds into this empty folder. */
  build(into: string): void;
}

/** Builds unless the kept build is current; the new build replaces the old one whole. Says whether it built. */
export function ensureBuilt({ name, out, inputs, build }: KeptBuild): boolean {
  const digest = digestOf(inputs());
  const stamp = path.join(out, STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) return false;
  say(`building ${name}…`);
  // Built beside and swapped in, so a process reading the old build never sees half of the new one.
  const building = `${out}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  build(building);
  writeFileSync(path.join(building, STAMP), `${digest}\n`);
  const old = `${out}.old-${process.pid}`;
  // Another `npm test` or `npm start` in this tree may swap its build in at the same moment: whichever
  // lands last is kept, and both were built from the same sources.
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
  return true;
}
