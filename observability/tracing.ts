/**
 * OpenTelemetry traces: an HTTP request's span, the workflow it starts (Temporal's interceptors
 * carry the context through the client, the workflow and its activities), and the database and
 * remote calls of those activities. Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or the traces-only
 * variable) is set: then the SDK is loaded and spans are exported over OTLP/HTTP. When off, the
 * SDK is never loaded and every hook here is one check of `active`.
 */
import { context, propagation, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import type { Next, WorkflowClientInterceptor, WorkflowSignalWithStartInput, WorkflowStartInput } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Db } from '../db/connection';
import { livePools } from './metrics';

interface ActiveTracing {
  tracer: Tracer;
  processor: SpanProcessor;
  worker: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  client: WorkflowClientInterceptor;
  shutdown(): Promise<void>;
}

let active: ActiveTracing | undefined;

/** The tracer while tracing is on; undefined (and nothing loaded) when it is off. */
export const activeTracer = (): Tracer | undefined => active?.tracer;

export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && env.OTEL_TRACES_EXPORTER !== 'none' && env.OTEL_SDK_DISABLED !== 'true';
}

/** Starts tracing when an OTLP endpoint is configured (the exporter reads the standard OTEL_* variables). */
export async function startTracingFromEnvironment(serviceName: string): Promise<void> {
  if (!tracingConfigured() || active) return;
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  await startTracing({ serviceName, exporter: new OTLPTraceExporter() });
}

/**
 * Registers a tracer provider, the W3C propagator and an AsyncLocalStorage context manager
 * globally. `batch: false` exports each span as it ends (tests read them from an in-memory exporter).
 */
export async function startTracing(options: { serviceName: string; exporter: SpanExporter; batch?: boolean }): Promise<void> {
  if (active) throw new Error('Tracing is already started in this process.');
  const [{ BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor }, { Resource }, { W3CTraceContextPropagator }, { AsyncLocalStorageContextManager }, temporalOtel] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'),
    import('@temporalio/interceptors-opentelemetry'),
  ]);
  const resource = Resource.default().merge(new Resource({ 'service.name': process.env.OTEL_SERVICE_NAME ?? options.serviceName }));
  const processor = options.batch === false ? new SimpleSpanProcessor(options.exporter) : new BatchSpanProcessor(options.exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  active = {
    tracer: trace.getTracer('weft'),
    processor,
    client: new temporalOtel.OpenTelemetryWorkflowClientInterceptor(),
    worker: {
      interceptors: {
        activity: [(ctx) => ({ inbound: new temporalOtel.OpenTelemetryActivityInboundInterceptor(ctx), outbound: new temporalOtel.OpenTelemetryActivityOutboundInterceptor(ctx) })],
      },
      // Spans the workflow sandbox ends reach this process's processor through a sink.
      sinks: { exporter: temporalOtel.makeWorkflowExporter(processor, resource) },
    },
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
  for (const db of livePools()) traceQueries(db);
}

/** Flushes and unregisters tracing (process exit, tests). */
export async function stopTracing(): Promise<void> {
  const stopping = active;
  active = undefined;
  for (const [db, listeners] of queryListeners) {
    db.off('query', listeners.query).off('query-response', listeners.response).off('query-error', listeners.error);
  }
  queryListeners.clear();
  await stopping?.shutdown();
}

/** Exports the spans still buffered (a process about to exit). */
export async function flushTracing(): Promise<void> {
  await active?.processor.forceFlush();
}

/**
 * What a span keeps of an error: its class and code, never its message or stack. Messages can quote
 * what failed (a pg "invalid input syntax" quotes the value, a remote error its body), and the
 * collector is outside Weft's secret handling.
 */
function failed(span: Span, error: unknown): void {
  const name = error instanceof Error ? error.constructor.name : typeof error;
  const code = (error as { code?: unknown } | undefined)?.code;
  const summary = typeof code === 'string' || typeof code === 'number' ? `${name} ${code}` : name;
  span.recordException({ name, message: summary });
  span.setStatus({ code: SpanStatusCode.ERROR, message: summary });
}

/** Ends a span with the outcome of `work`. */
async function endWith<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** `work` inside a child span of the current one when tracing is on; just `work` when it is off. */
export function inSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const tracer = active?.tracer;
  if (!tracer) return work();
  return tracer.startActiveSpan(name, { attributes }, (span) => endWith(span, work));
}

/** The server span of one HTTP request: continues an incoming traceparent, named by its route template once routed. */
export function inServerSpan<T>(tracer: Tracer, method: string, headers: Record<string, unknown>, work: (span: Span) => Promise<T>): Promise<T> {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
  return context.with(trace.setSpan(parent, span), () => endWith(span, () => work(span)));
}

/**
 * The Temporal client's interceptor: hands workflow starts and signals to the OpenTelemetry
 * interceptor while tracing is on (it puts the trace context in the workflow's headers).
 */
export const tracingClientInterceptor: WorkflowClientInterceptor = {
  startWithDetails: (input: WorkflowStartInput, next: Next<WorkflowClientInterceptor, 'startWithDetails'>) =>
    active?.client.startWithDetails ? active.client.startWithDetails(input, next) : next(input),
  signalWithStart: (input: WorkflowSignalWithStartInput, next: Next<WorkflowClientInterceptor, 'signalWithStart'>) =>
    active?.client.signalWithStart ? active.client.signalWithStart(input, next) : next(input),
};

/**
 * The worker's tracing options. Off: no interceptor, and a sink that drops the spans of a workflow
 * a tracing client started (the workflow interceptors trace those whatever this worker does).
 */
export function workerTracingOptions(): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  return active?.worker ?? { sinks: { exporter: { export: { fn: () => undefined } } } };
}

const MAX_OPEN_STATEMENTS = 1000;
type QueryEvent = { __knexQueryUid: string; sql?: string; method?: string };
const queryListeners = new Map<Db, { query: (q: QueryEvent) => void; response: (r: unknown, q: QueryEvent) => void; error: (e: Error, q: QueryEvent) => void }>();

/** A span per SQL statement of this database, from knex's query events (the statement text, never its values). */
export function traceQueries(db: Db): void {
  const tracer = active?.tracer;
  if (!tracer || queryListeners.has(db)) return;
  const open = new Map<string, Span>();
  const listeners = {
    query(q: QueryEvent) {
      const statement = q.sql ?? '';
      const operation = (statement.trimStart().split(/\s/, 1)[0] || q.method || 'query').toUpperCase();
      // A statement that never reports back (a stream) must not hold its span forever.
      if (open.size >= MAX_OPEN_STATEMENTS) {
        const [uid, oldest] = open.entries().next().value!;
        oldest.end();
        open.delete(uid);
      }
      open.set(q.__knexQueryUid, tracer.startSpan(`db ${operation}`, { kind: SpanKind.CLIENT, attributes: { 'db.system': 'postgresql', 'db.operation.name': operation, 'db.query.text': statement.slice(0, 2000) } }));
    },
    response(_response: unknown, q: QueryEvent) {
      open.get(q.__knexQueryUid)?.end();
      open.delete(q.__knexQueryUid);
    },
    error(error: Error, q: QueryEvent) {
      const span = open.get(q.__knexQueryUid);
      open.delete(q.__knexQueryUid);
      if (span) failed(span, error);
      span?.end();
    },
  };
  db.on('query', listeners.query).on('query-response', listeners.response).on('query-error', listeners.error);
  queryListeners.set(db, listeners);
}
