/**
 * How node runs the worker: `npm run worker` (package.json) says the same, and the benches start it
 * with these. tsx's CommonJS hook (`--require tsx/cjs`) instead of `--import tsx`: the ESM loader
 * runs on a thread of its own, with a V8 heap of its own, for a process that loads no ESM of its own
 * (about 20 MB of the worker's RSS from its start; bench/README, ingest).
 */
export const WORKER_NODE_ARGS = ['--require', 'tsx/cjs'];
