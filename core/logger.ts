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
  pino.destination(process.env.WEFT_LOG_TO_STDERR === '1' ? 2 : 1),
);
