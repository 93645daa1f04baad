import pino from 'pino';

/**
 * Structured JSON logs. Redaction is a second line of defence: code must not put secrets in
 * log objects in the first place, but an Authorization header or credential field that slips
 * into one is censored.
 */
export const logger = pino(
  {
  level: process.env.LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'warn' : 'info'),
  base: { service: 'weft' },
  redact: {
    paths: [
      'authorization',
      'headers.authorization',
      'req.headers.authorization',
      '*.authorization',
      'secret',
      '*.secret',
      'password',
      '*.password',
      'credentials',
      '*.credentials',
      'apiKey',
      '*.apiKey',
      'config.headers',
    ],
    censor: '[redacted]',
  },
  timestamp: pino.stdTimeFunctions.isoTime,
  },
  // Commands that print machine-readable output on stdout (admin --json) log to stderr.
  // Asynchronous writes: a request never waits on the log's write(2), and lines that pile up
  // while one write is in flight go out together (pino flushes what is left at exit).
  pino.destination({ dest: process.env.WEFT_LOG_TO_STDERR === '1' ? 2 : 1, sync: false }),
);
