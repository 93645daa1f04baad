import path from 'node:path';
import os from 'node:os';

/**
 * How this code runs: `.ts` from its sources (through tsx: the tests, the admin CLI), `.js` built
 * (scripts/build.ts writes dist/, a mirror of the source tree, which `npm start` runs with plain
 * node). A module found beside another takes the running code's extension.
 */
export const codeExtension = path.extname(__filename) as '.ts' | '.js';

/** Node's arguments for a child process running another of this project's modules as this one runs: sources need tsx's hook. */
export const codeLoaderArgs: readonly string[] = codeExtension === '.ts' ? ['--require', 'tsx/cjs'] : [];

/** The folder of the built JavaScript, in the project root. */
export const BUILD_FOLDER = 'dist';

/** The project root: the folder holding package.json (this file is core/paths.ts, or dist/core/paths.js built). */
export const projectRoot = path.resolve(__dirname, '..', ...(codeExtension === '.js' ? ['..'] : []));

/** Git-ignored runtime state: local PostgreSQL cluster, Temporal dev-server database, generated keys. */
export function dataDir(): string {
  return path.resolve(process.env.WEFT_DATA_DIR ?? path.join(projectRoot, '.data'));
}

/** Built tools shared by every clone on this machine (the Temporal CLI takes minutes to build). */
export function toolsDir(): string {
  if (process.env.WEFT_TOOLS_DIR) return path.resolve(process.env.WEFT_TOOLS_DIR);
  const cacheHome = process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache');
  return path.join(cacheHome, 'weft', 'tools');
}
