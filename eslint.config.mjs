// Lint rules whose job is keeping workflows deterministic and promises handled.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = ['fs', 'path', 'os', 'crypto', 'http', 'https', 'net', 'dns', 'child_process', 'worker_threads', 'timers', 'process', 'util', 'stream'];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'test/support/*.cjs', 'scripts/ensure-deps.cjs', 'ontology/sparql-threads/thread-entry.cjs', '.scratch-*/**', 'console/web/dist*/**', 'dist/**', 'dist.*/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // The console's build configuration runs in Node.
    files: ['console/web/vite.config.mjs'],
    languageOptions: { globals: { URL: 'readonly', process: 'readonly' } },
  },
  {
    files: ['**/*.ts', 'console/web/src/**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed: no I/O, no Node built-ins, no clocks or randomness outside the SDK.
    files: ['workflows/**/*.ts', 'observability/workflow-interceptors.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [
          ...nodeBuiltins.flatMap((name) => [name, `node:${name}`]).map((name) => ({ name, message: 'Workflows must stay deterministic: do I/O in activities.' })),
          { name: 'pg', message: 'Database access belongs in activities.' },
          { name: 'knex', message: 'Database access belongs in activities.' },
          { name: 'objection', message: 'Database access belongs in activities.' },
        ],
        patterns: [
          { group: ['../activities/*', '../db/*', '../services/**', '../api/*', '../plugins/*'], allowTypeImports: true, message: 'Workflows may import only types from I/O modules (use proxyActivities).' },
        ],
      }],
      'no-restricted-globals': ['error', { name: 'fetch', message: 'Do I/O in activities.' }, { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' }],
    },
  },
  {
    // A presenter shapes what its service read: it reaches no database.
    files: ['services/*/presenters.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: ['pg', 'knex', 'objection'].map((name) => ({ name, message: 'Presenters query nothing: the service reads and passes the data in.' })),
        patterns: [{ group: ['../../db/*'], allowTypeImports: true, message: 'Presenters take models by type only: the service reads and passes the data in.' }],
      }],
    },
  },
);
