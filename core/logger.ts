import pino from 'pino';

let formattedAtMs = -1;
let formattedTime = '';

/** pino's isoTime, formatted once per millisecond: a busy API writes several lines in each. */
function isoTime(): string {
  const now = Date.now();
  if (now !== formattedAtMs) {
    formattedAtMs = now;
    formattedTime = `,"time":"${new Date(now).toISOString()}"`;
  }
  return formattedTime;
}

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
  timestamp: isoTime,
  },
  // Commands that print machine-readable output on stdout (admin --json) log to stderr.
  // Asynchronous writes: a request never waits on the log's write(2), and lines that pile up
  // while one write is in flight go out together (pino flushes what is left at exit).
  pino.destination({ dest: process.env.WEFT_LOG_TO_STDERR === '1' ? 2 : 1, sync: false }),
);

type LineWriter = pino.Logger & {
  [pino.symbols.lsCacheSym]: Record<number, string>;
  [pino.symbols.timeSym]: () => string;
  [pino.symbols.chindingsSym]: string;
  [pino.symbols.endSym]: string;
  [pino.symbols.streamSym]: { write(line: string): void };
};

/**
 * Writes one info line whose fields are already JSON members (`,"name":value…`) through `log`'s
 * destination, as pino writes its own: the level, time, bindings and message in the same places.
 * For the line logged on every request: pino's generic serializer checks each field's serializer,
 * stringifier and type on every call, a cost that showed in the request path's profile. Callers
 * own the escaping: values that may hold any text go through JSON.stringify.
 */
export function writeInfoLine(log: pino.Logger, members: string, msg: string): void {
  if (!log.isLevelEnabled('info')) return;
  const writer = log as LineWriter;
  const level = writer[pino.symbols.lsCacheSym][log.levels.values.info];
  writer[pino.symbols.streamSym].write(`${level}${writer[pino.symbols.timeSym]()}${writer[pino.symbols.chindingsSym]}${members},"msg":${JSON.stringify(msg)}${writer[pino.symbols.endSym]}`);
}
