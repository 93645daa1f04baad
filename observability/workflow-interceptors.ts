/**
 * Workflow interceptors (bundled with the workflows, run in their sandbox). A workflow started by a
 * tracing client carries the trace context in its headers: that workflow, and the activities,
 * child workflows and signals it sends, are traced by Temporal's OpenTelemetry interceptors, and
 * its spans leave the sandbox through the `exporter` sink. A workflow started without one (tracing
 * off, older histories) runs exactly as before: nothing is constructed and no call is added, so
 * replaying its history is unchanged.
 */
import type { WorkflowInterceptors, WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/workflow';

/** The header the OpenTelemetry interceptors carry the context in (TRACE_HEADER of the package). */
const TRACE_HEADER = '_tracer-data';

export const interceptors: WorkflowInterceptorsFactory = (): WorkflowInterceptors => {
  // Decided once, by the start's headers (in history, so a replay decides the same).
  let inbound: OpenTelemetryInboundInterceptor | undefined;
  let outbound: OpenTelemetryOutboundInterceptor | undefined;
  return {
    inbound: [
      {
        execute(input, next) {
          if (!(TRACE_HEADER in input.headers)) return next(input);
          inbound = new OpenTelemetryInboundInterceptor();
          outbound = new OpenTelemetryOutboundInterceptor();
          return inbound.execute(input, next);
        },
        handleSignal: (input, next) => (inbound ? inbound.handleSignal(input, next) : next(input)),
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => (outbound ? outbound.scheduleActivity(input, next) : next(input)),
        scheduleLocalActivity: (input, next) => (outbound ? outbound.scheduleLocalActivity(input, next) : next(input)),
        startChildWorkflowExecution: (input, next) => (outbound ? outbound.startChildWorkflowExecution(input, next) : next(input)),
        signalWorkflow: (input, next) => (outbound ? outbound.signalWorkflow(input, next) : next(input)),
        continueAsNew: (input, next) => (outbound ? outbound.continueAsNew(input, next) : next(input)),
      },
    ],
    internals: [
      {
        dispose: (input, next) => (inbound ? new OpenTelemetryInternalsInterceptor().dispose(input, next) : next(input)),
      },
    ],
  };
};
