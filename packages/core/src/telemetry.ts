/** OpenTelemetry spans and metrics through `@opentelemetry/api` only: without an SDK registered, every call is a no-op. */
import { createRequire } from 'node:module';
import type { Attributes, MeterProvider, Span, TracerProvider } from '@opentelemetry/api';

// Loaded when a runner is created, not when core is imported; its globals sit on a versioned global
// symbol, so this copy sees the SDK a user registered.
const require = createRequire(import.meta.url);

/** The structured part of an event (also on every LogEntry that has it). No params, keys or secrets. */
export interface EventFields {
  /** Provider call number over the operation's whole life. */
  readonly attempt?: number;
  /** The attempt's outcome kind, or the lookup's result kind. */
  readonly outcome?: string;
  readonly status?: number;
  /** The runner's next action (`send`, `lookup`, `wait`, `complete`, `handoff`, …) and the wait before it. */
  readonly decision?: string;
  readonly delayMs?: number;
  readonly handoffReason?: string;
  readonly adopted?: boolean;
}

/** Default: the global providers of `@opentelemetry/api` (no-ops until an SDK registers one). */
export interface TelemetryOptions {
  readonly tracerProvider?: TracerProvider;
  readonly meterProvider?: MeterProvider;
}

/** Names of the spans and instruments, for dashboards and tests. */
export const TELEMETRY = {
  scope: '@retrysafe/core',
  runSpan: 'retrysafe.run',
  attemptSpan: 'retrysafe.attempt',
  operations: 'retrysafe.operations',
  attempts: 'retrysafe.attempts',
  lookups: 'retrysafe.lookups',
  handoffs: 'retrysafe.handoffs',
  retryDelay: 'retrysafe.retry.delay',
} as const;

export interface RunScope {
  readonly span: Span;
  attempt: Span | null;
}

function attrs(operation: string, more: Record<string, string | number | boolean | undefined> = {}): Attributes {
  const out: Attributes = { 'retrysafe.operation': operation };
  for (const k in more) if (more[k] !== undefined) out[k] = more[k];
  return out;
}

export function createTelemetry(options: TelemetryOptions | undefined, now: () => number) {
  const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const tracerProvider = options?.tracerProvider ?? api.trace.getTracerProvider();
  const tracer = tracerProvider.getTracer(TELEMETRY.scope);
  const meter = (options?.meterProvider ?? api.metrics.getMeterProvider()).getMeter(TELEMETRY.scope);
  // Without an SDK a run does no telemetry work at all. The global tracer is a proxy an SDK registered later fills,
  // so it is asked at each run; a meter taken before an SDK registers stays a no-op.
  const metered = meter !== api.createNoopMeter();
  const quietSpan = api.trace.wrapSpanContext(api.INVALID_SPAN_CONTEXT);
  const isQuiet = () =>
    tracerProvider instanceof api.ProxyTracerProvider &&
    tracerProvider.getDelegateTracer(TELEMETRY.scope) === undefined;
  const counter = (name: string, description: string) => meter.createCounter(name, { description });
  const operations = counter(TELEMETRY.operations, 'runner.run() calls, by how they ended');
  const attempts = counter(TELEMETRY.attempts, 'provider calls (dispatches and same-key re-sends), by outcome');
  const lookups = counter(TELEMETRY.lookups, 'lookups of what the provider stored, by result');
  const handoffs = counter(TELEMETRY.handoffs, 'operations handed to a person, by reason');
  const retryDelay = meter.createHistogram(TELEMETRY.retryDelay, {
    description: 'waits the runner chose before its next action',
    unit: 'ms',
  });

  // A throwing SDK, span processor or exporter must not change what happens to an operation (as a logger cannot):
  // the run's own span calls are guarded like the events (RunnerContext.log).
  function startRunSpan(info: { operation: string; provider: string; businessOperationId: string }): Span {
    if (isQuiet()) return quietSpan;
    try {
      return tracer.startSpan(TELEMETRY.runSpan, {
        kind: api.SpanKind.INTERNAL,
        startTime: now(),
        attributes: attrs(info.operation, {
          'retrysafe.provider': info.provider,
          'retrysafe.business_operation_id': info.businessOperationId,
        }),
      });
    } catch {
      return quietSpan;
    }
  }
  function endQuietly(span: Span | null): void {
    try {
      span?.end(now());
    } catch {
      // ignored: see above
    }
  }
  function finish(s: RunScope, operation: string, status: string, errorType?: string): void {
    if (s.span === quietSpan && !metered) return;
    try {
      s.span.setAttribute('retrysafe.status', status);
      if (status === 'handed-off')
        s.span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'handed off to a person' });
      if (errorType !== undefined) s.span.setStatus({ code: api.SpanStatusCode.ERROR, message: errorType });
      if (metered) operations.add(1, attrs(operation, { 'retrysafe.status': status, 'error.type': errorType }));
    } catch {
      // ignored: see above
    }
    endQuietly(s.attempt);
    endQuietly(s.span);
  }
  return {
    async run<T extends { readonly status: string; readonly adopted?: boolean }>(
      info: Parameters<typeof startRunSpan>[0],
      fn: (scope: RunScope) => Promise<T>,
    ): Promise<T> {
      const s: RunScope = { span: startRunSpan(info), attempt: null };
      let result: T;
      try {
        result = await fn(s);
      } catch (err) {
        finish(s, info.operation, 'error', err instanceof Error ? err.name : 'Error');
        throw err;
      }
      finish(s, info.operation, result.status === 'done' && result.adopted ? 'adopted' : result.status);
      return result;
    },

    /** `s`: the scope of the operation's run, if any. */
    event(event: string, level: 'info' | 'warn', f: EventFields = {}, op = '', s?: RunScope): void {
      if (!metered && (s === undefined || s.span === quietSpan)) return;
      switch (event) {
        case 'dispatch':
          if (!s) break;
          s.attempt?.end(now());
          s.attempt = tracer.startSpan(
            TELEMETRY.attemptSpan,
            { kind: api.SpanKind.CLIENT, startTime: now(), attributes: attrs(op, { 'retrysafe.attempt': f.attempt }) },
            api.trace.setSpan(api.context.active(), s.span),
          );
          break;
        case 'outcome':
          attempts.add(1, attrs(op, { 'retrysafe.outcome': f.outcome }));
          if (s?.attempt) {
            s.attempt.setAttributes(
              attrs(op, { 'retrysafe.outcome': f.outcome, 'http.response.status_code': f.status }),
            );
            if (f.outcome === 'unknown' || f.outcome === 'rejected')
              s.attempt.setStatus({ code: api.SpanStatusCode.ERROR, message: f.outcome });
            s.attempt.end(now());
            s.attempt = null;
          }
          break;
        case 'lookup':
          lookups.add(1, attrs(op, { 'retrysafe.lookup.result': f.outcome }));
          break;
        case 'decision':
        case 'intent-lookup': // the look-up before the claim, asked again
          if (f.delayMs !== undefined) retryDelay.record(f.delayMs, attrs(op, { 'retrysafe.decision': f.decision }));
          break;
        case 'handoff':
          handoffs.add(1, attrs(op, { 'retrysafe.handoff.reason': f.handoffReason }));
          s?.span.setAttribute('retrysafe.handoff.reason', f.handoffReason ?? 'unknown');
          break;
      }
      // A span that records nothing (no SDK, or not sampled) ignores events: build none for it.
      if (s?.span.isRecording()) {
        const eventAttrs: Record<string, string | number | boolean | undefined> = { 'retrysafe.level': level };
        for (const [k, v] of Object.entries(f))
          eventAttrs[`retrysafe.${k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`] = v;
        s.span.addEvent(`retrysafe.${event}`, attrs(op, eventAttrs), now());
      }
    },
  };
}
