import { existsSync } from 'node:fs';
import { isRoot, run, say } from './process';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/**
 * The browser the page tests drive with playwright-core: WEFT_CHROMIUM, or Debian's chromium,
 * installed with apt-get when missing and we may (root). Playwright's own browser downloads are
 * not used: they come from a CDN this project does not rely on.
 */
export function ensureChromium(): string {
  const configured = process.env.WEFT_CHROMIUM;
  if (configured) {
    if (!existsSync(configured)) throw new Error(`WEFT_CHROMIUM is ${configured}, which does not exist.`);
    return configured;
  }
  const found = CANDIDATES.find((candidate) => existsSync(candidate));
  if (found) return found;
  if (!isRoot() || !existsSync('/usr/bin/apt-get')) {
    throw new Error('No Chromium found: install Debian’s chromium package (apt-get install chromium) or set WEFT_CHROMIUM to a Chromium binary.');
  }
  say('installing Debian’s chromium for the browser tests (first run only)…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const installed = CANDIDATES.find((candidate) => existsSync(candidate));
  if (!installed) throw new Error('apt-get installed chromium, but no binary is at /usr/bin/chromium.');
  return installed;
}
