import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../core/paths';

/**
 * `npm ci` installs exactly what package-lock.json lists. A lockfile written on one platform by an npm
 * that pruned the others' optional packages installs on that platform only: on macOS or Linux arm64
 * the workflow bundler would then lack its native `@swc/core` binding. These checks keep every
 * platform's optional packages in the lockfile, resolvable and pinned.
 */
interface LockedPackage {
  version?: string;
  resolved?: string;
  integrity?: string;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  optionalDependencies?: Record<string, string>;
}

const lockfile = JSON.parse(readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8')) as {
  lockfileVersion: number;
  packages: Record<string, LockedPackage>;
};
const packages = lockfile.packages;

/** The lockfile entry node's resolution would find for `name` required from the package at `from`. */
function resolveFrom(from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ''}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!base) return undefined;
    const parent = base.lastIndexOf('/node_modules/');
    base = parent < 0 ? '' : base.slice(0, parent);
  }
}

describe('package-lock.json, for every platform', () => {
  it('is a v3 lockfile with a package table', () => {
    assert.equal(lockfile.lockfileVersion, 3);
    assert.ok(Object.keys(packages).length > 100);
  });

  it("lists every optional dependency of every locked package, whatever the platform it is for", () => {
    const missing: string[] = [];
    for (const [location, info] of Object.entries(packages)) {
      for (const name of Object.keys(info.optionalDependencies ?? {})) {
        if (!resolveFrom(location, name)) missing.push(`${location || '(root)'} → ${name}`);
      }
    }
    assert.deepEqual(missing, [], 'regenerate the lockfile with every platform: rm -rf node_modules package-lock.json && npm install');
  });

  it('pins each platform-specific package with its source and integrity', () => {
    const unpinned = Object.entries(packages)
      .filter(([location, info]) => location && (info.os || info.cpu) && !info.resolved?.startsWith('https://') && !info.integrity)
      .map(([location]) => location);
    assert.deepEqual(unpinned, []);
  });

  it("holds the workflow bundler's native bindings for macOS and Linux on both architectures", () => {
    for (const target of ['darwin-arm64', 'darwin-x64', 'linux-arm64-gnu', 'linux-x64-gnu', 'linux-arm64-musl', 'linux-x64-musl']) {
      const entry = packages[`node_modules/@swc/core-${target}`];
      assert.ok(entry, `@swc/core-${target} is locked`);
      assert.equal(entry.optional, true, `@swc/core-${target} is optional`);
      assert.ok(entry.os?.length && entry.cpu?.length, `@swc/core-${target} names its platform`);
    }
  });
});
