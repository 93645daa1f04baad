/**
 * How node runs the worker: `npm run worker` (package.json) says the same, and the benches start it
 * with these. Measured from the worker's start (bench/README, ingest):
 * - tsx's CommonJS hook (`--require tsx/cjs`) instead of `--import tsx`: the ESM loader runs on a
 *   thread of its own, with a V8 heap of its own, for a process that loads no ESM of its own (about
 *   20 MB of RSS);
 * - the old generation collected once it has grown 20% past what the last collection kept, instead
 *   of V8's default growth for a heap far below its limit: a long run's pages, promoted while in
 *   flight, otherwise piled up (+85 MB during a 1M-record run, peak 328 MB; 251 MB with it, the
 *   worker's CPU time unchanged). `--optimize-for-size` kept it at 206 MB but doubled the CPU time.
 */
export const WORKER_NODE_ARGS = ['--require', 'tsx/cjs', '--heap-growing-percent=20'];
