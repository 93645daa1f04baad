#!/usr/bin/env node
// Installs npm dependencies when node_modules is missing or older than package-lock.json.
// Plain CommonJS with no dependencies: it runs before anything is installed.
'use strict';
const { createHash } = require('node:crypto');
const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const lockFile = path.join(root, 'package-lock.json');
const stampFile = path.join(root, 'node_modules', '.weft-deps-stamp');
const quiet = process.argv.includes('--quiet');

const lockHash = createHash('sha256').update(readFileSync(lockFile)).digest('hex');
const current = existsSync(stampFile) ? readFileSync(stampFile, 'utf8').trim() : '';
if (current === lockHash) process.exit(0);

if (!quiet) process.stderr.write('weft: installing npm dependencies…\n');
// `npm install` rather than `npm ci`: ci rejects lock files that omit other platforms' optional
// packages (@swc/core's), which npm itself writes. The lock file still pins every version.
// stdout of npm goes to stderr so commands with --json output stay machine-readable.
// --prefer-offline: packages already in npm's cache are taken from it without asking the registry
// again (the lock file names each version and its integrity); others are fetched as before.
const result = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], {
  cwd: root,
  stdio: ['ignore', quiet ? 'ignore' : process.stderr, 'inherit'],
});
if (result.status !== 0) {
  process.stderr.write('weft: npm install failed; see the output above.\n');
  process.exit(result.status || 1);
}
// Hash again: npm may have normalised the lock file.
writeFileSync(stampFile, createHash('sha256').update(readFileSync(lockFile)).digest('hex') + '\n');
