/**
 * How node runs the built service (scripts/build.ts): package.json's `start`, `api` and `worker`
 * say the same, and the benches start the processes with these. Stack traces name the TypeScript
 * lines, through the build's source maps.
 */
export const SERVICE_NODE_ARGS = ['--enable-source-maps'];

/**
 * The worker's, measured from its start (bench/README, ingest): the old generation collected once
 * it has grown 20% past what the last collection kept, instead of V8's default growth for a heap far
 * below its limit: a long run's pages, promoted while in flight, otherwise piled up (+85 MB during
 * a 1M-record run, peak 328 MB; 251 MB with it, the worker's CPU time unchanged).
 * `--optimize-for-size` kept it at 206 MB but doubled the CPU time.
 */
export const WORKER_NODE_ARGS = [...SERVICE_NODE_ARGS, '--heap-growing-percent=20'];
