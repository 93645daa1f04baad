/**
 * The production build: `npm start`, `npm run api` and `npm run worker` run it, then run the built
 * JavaScript with plain node (no tsx). Each TypeScript module of the service becomes one CommonJS
 * module in dist/ (git-ignored) at the same relative path, with its source map, so the code finds
 * its files as it does from the sources (core/paths.ts). esbuild compiles each file alone, as tsx
 * does, and checks no types: `npm run typecheck` does. Rebuilt only when a source, tsconfig.json
 * or the lock file changed (scripts/kept-build.ts).
 *
 *   npm run build [-- all|api|worker]   # the API's roles (all, api: the default) also build the console
 */
import path from 'node:path';
import { buildSync } from 'esbuild';
import { BUILD_FOLDER, projectRoot } from '../core/paths';
import { ensureConsoleBuilt } from './console-build';
import { ensureBuilt, filesUnder } from './kept-build';

/** Top-level folders that hold no code the service runs: tests and benches run from their sources, under tsx. */
const NOT_BUILT = new Set(['node_modules', 'test', 'bench', 'docs']);

/** The service's TypeScript modules: every .ts file but those of the folders above, the console's front end (Vite builds it) and dot-folders. */
export function serviceSources(): string[] {
  return filesUnder(projectRoot, (relative, entry) => {
    const [top] = relative.split(path.sep);
    if (top.startsWith('.') || NOT_BUILT.has(top) || top === BUILD_FOLDER || top.startsWith(`${BUILD_FOLDER}.`)) return true;
    if (entry.isDirectory()) return relative === path.join('console', 'web');
    return !relative.endsWith('.ts') || relative.endsWith('.d.ts');
  });
}

export const buildDir = (): string => path.join(projectRoot, BUILD_FOLDER);

/** Builds dist/ unless it is current. Says whether it built. */
export function ensureServiceBuilt(): boolean {
  return ensureBuilt({
    name: `the service (${BUILD_FOLDER}/)`,
    out: buildDir(),
    inputs: () => [...serviceSources(), path.join(projectRoot, 'tsconfig.json'), path.join(projectRoot, 'package-lock.json')],
    build(into) {
      buildSync({
        entryPoints: serviceSources(),
        outdir: into,
        outbase: projectRoot,
        platform: 'node',
        format: 'cjs',
        // The oldest node package.json's engines allow.
        target: 'node20',
        // Stack traces name the TypeScript lines (node runs the build with --enable-source-maps).
        sourcemap: true,
        sourcesContent: false,
        logLevel: 'error',
      });
    },
  });
}

if (require.main === module) {
  const role = process.argv[2] ?? 'all';
  if (!['all', 'api', 'worker'].includes(role)) throw new Error(`Unknown role "${role}": use all, api or worker.`);
  ensureServiceBuilt();
  // The API serves the console's bundle.
  if (role !== 'worker') ensureConsoleBuilt();
}
