import path from 'node:path';
import os from 'node:os';

/** The project root: the folder holding package.json. */
export const projectRoot = path.resolve(__dirname, '..');

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
