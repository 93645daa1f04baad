import path from 'node:path';
import { projectRoot } from '../core/paths';
import { consoleBuildDir } from '../console/server/build-dir';
import { run } from './infra/process';
import { ensureBuilt, filesUnder } from './kept-build';

// The console's bundle (console/web, React built by Vite), rebuilt by `npm start` and `npm test`
// when its sources, its build configuration or the locked dependencies changed since the last
// build (scripts/kept-build.ts).

const WEB = path.join(projectRoot, 'console', 'web');

/** Builds the console unless its bundle is current; the new bundle replaces the old one whole. */
export function ensureConsoleBuilt(): void {
  ensureBuilt({
    name: 'the console (console/web)',
    out: consoleBuildDir(),
    // dist* also names the builds being made or replaced beside it.
    inputs: () => [...filesUnder(WEB, (relative) => relative.startsWith('dist') || relative.startsWith('node_modules')), path.join(projectRoot, 'package-lock.json')],
    build(into) {
      run(process.execPath, [path.join(projectRoot, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--config', path.join(WEB, 'vite.config.mjs')], {
        cwd: projectRoot,
        env: { ...process.env, WEFT_CONSOLE_OUT_DIR: into },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    },
  });
}

if (require.main === module) ensureConsoleBuilt();
