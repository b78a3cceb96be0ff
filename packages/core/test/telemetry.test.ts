import { createNoopMeter, metrics, ProxyTracer, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { type LogEntry, TELEMETRY } from '@retrysafe/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTelemetry } from '../src/telemetry.js';
import { setup } from './helpers.js';

// Spans and metrics read back through the OpenTelemetry SDK's in-memory exporters; the runner only
// ever talks to @opentelemetry/api.
const OP = 'records.create';
let spans: InMemorySpanExporter;
let tracerProvider: BasicTracerProvider;
let metricExporter: InMemoryMetricExporter;
let reader: PeriodicExportingMetricReader;
let meterProvider: MeterProvider;

beforeEach(() => {
  spans = new InMemorySpanExporter();
  tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  meterProvider = new MeterProvider({ readers: [reader] });
});
afterEach(async () => {
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
  trace.disable();
  metrics.disable();
});

async function collected(): Promise<Map<string, { attributes: Record<string, unknown>; value: unknown }[]>> {
  await reader.forceFlush();
  const all: ResourceMetrics[] = metricExporter.getMetrics();
  const out = new Map<string, { attributes: Record<string, unknown>; value: unknown }[]>();
  for (const sm of all.at(-1)?.scopeMetrics ?? [])
    for (const m of sm.metrics)
      out.set(
        m.descriptor.name,
        m.dataPoints.map((d) => ({ attributes: d.attributes, value: d.value })),
      );
  return out;
}
const byName = (name: string): ReadableSpan[] => spans.getFinishedSpans().filter((s) => s.name === name);

describe('telemetry through an in-memory exporter', () => {
  it('a lost response: one run span with two attempt spans (unknown, then replayed), events for each decision, counters by outcome', async () => {
    const logs: LogEntry[] = [];
    const { provider, adapter, runner, clock } = setup(
      {},
      { telemetry: { tracerProvider, meterProvider }, logger: (e) => logs.push(e) },
    );
    provider.failNext({ kind: 'unknown-after-commit' });
    const start = clock.now();
    const r = await runner.run(adapter, OP, { params: { ref: 'order-1', amount: 100 } });
    expect(r.status).toBe('done');

    const [run] = byName(TELEMETRY.runSpan);
    expect(run).toBeDefined();
    expect(run!.attributes).toMatchObject({
      'retrysafe.operation': 'sandbox.records.create',
      'retrysafe.provider': 'sandbox',
      'retrysafe.status': 'adopted',
      'retrysafe.business_operation_id': r.businessOperationId,
    });
    const attempts = byName(TELEMETRY.attemptSpan);
    expect(attempts.map((s) => [s.attributes['retrysafe.attempt'], s.attributes['retrysafe.outcome']])).toEqual([
      [1, 'unknown'],
      [2, 'replayed'],
    ]);
    for (const a of attempts) expect(a.parentSpanContext?.spanId).toBe(run!.spanContext().spanId);
    expect(attempts[0]!.status.code).toBe(2); // ERROR: the outcome was unknown
    // span times are the runner's clock (virtual here)
    expect(run!.startTime[0] * 1000 + run!.startTime[1] / 1e6).toBeGreaterThanOrEqual(start - 1);
    const events = run!.events.map((e) => e.name);
    expect(events).toEqual(
      expect.arrayContaining(['retrysafe.dispatch', 'retrysafe.outcome', 'retrysafe.decision', 'retrysafe.done']),
    );
    const decision = run!.events.find(
      (e) => e.name === 'retrysafe.decision' && e.attributes?.['retrysafe.delay_ms'] !== undefined,
    );
    expect(decision?.attributes).toMatchObject({ 'retrysafe.decision': 'send' });

    const m = await collected();
    expect(m.get(TELEMETRY.attempts)).toEqual(
      expect.arrayContaining([
        { attributes: { 'retrysafe.operation': 'sandbox.records.create', 'retrysafe.outcome': 'unknown' }, value: 1 },
        { attributes: { 'retrysafe.operation': 'sandbox.records.create', 'retrysafe.outcome': 'replayed' }, value: 1 },
      ]),
    );
    expect(m.get(TELEMETRY.operations)).toEqual([
      { attributes: { 'retrysafe.operation': 'sandbox.records.create', 'retrysafe.status': 'adopted' }, value: 1 },
    ]);
    expect((m.get(TELEMETRY.retryDelay)?.[0]?.value as { count: number }).count).toBeGreaterThanOrEqual(1);

    // the structured log events carry the same fields
    expect(logs.filter((l) => l.event === 'outcome').map((l) => [l.attempt, l.outcome])).toEqual([
      [1, 'unknown'],
      [2, 'replayed'],
    ]);
    expect(logs.find((l) => l.event === 'done')).toMatchObject({ adopted: true, attempt: 2 });
    expect(logs.filter((l) => l.event === 'decision').every((l) => typeof l.decision === 'string')).toBe(true);
  });

  it('a permanent error: the run span ends in error with the handoff reason; the handoff is counted by reason', async () => {
    const { provider, adapter, runner } = setup({}, { telemetry: { tracerProvider, meterProvider } });
    provider.failNext({ kind: 'rejected', message: 'card declined' });
    const r = await runner.run(adapter, OP, { params: { ref: 'order-2', amount: 100 } });
    expect(r.status).toBe('handed-off');
    const [run] = byName(TELEMETRY.runSpan);
    expect(run!.status.code).toBe(2);
    expect(run!.attributes['retrysafe.handoff.reason']).toBe(r.status === 'handed-off' ? r.packet.reason : '');
    const m = await collected();
    expect(m.get(TELEMETRY.handoffs)).toEqual([
      {
        attributes: { 'retrysafe.operation': 'sandbox.records.create', 'retrysafe.handoff.reason': 'rejected' },
        value: 1,
      },
    ]);
    expect(m.get(TELEMETRY.operations)?.[0]?.attributes['retrysafe.status']).toBe('handed-off');
    // no params and no provider key in any span attribute or event
    const text = JSON.stringify(spans.getFinishedSpans().map((s) => [s.attributes, s.events]));
    expect(text).not.toContain('order-2');
    expect(text).not.toContain('card declined');
  });

  it('with the global API: an SDK registered by the application is picked up; without one, nothing is recorded and nothing fails', async () => {
    const { adapter, runner } = setup();
    await runner.run(adapter, OP, { params: { ref: 'before-sdk', amount: 1 } });
    expect(spans.getFinishedSpans()).toEqual([]);
    trace.setGlobalTracerProvider(tracerProvider);
    const { adapter: a2, runner: r2 } = setup();
    await r2.run(a2, OP, { params: { ref: 'after-sdk', amount: 1 } });
    expect(byName(TELEMETRY.runSpan)).toHaveLength(1);
  });

  it('without an SDK, a run starts no span and gives the no-op instruments nothing: no telemetry work per operation', async () => {
    const startSpan = vi.spyOn(ProxyTracer.prototype, 'startSpan');
    const noopCounter = Object.getPrototypeOf(createNoopMeter().createCounter('probe'));
    const add = vi.spyOn(noopCounter, 'add');
    try {
      const { adapter, runner } = setup();
      const result = await runner.run(adapter, OP, { params: { ref: 'no-sdk', amount: 1 } });
      expect(result.status).toBe('done');
      expect(startSpan).not.toHaveBeenCalled();
      expect(add).not.toHaveBeenCalled();
    } finally {
      startSpan.mockRestore();
      add.mockRestore();
    }
  });

  it('a runner created before the SDK registers: its runs start recording once one is registered (asked per run, as the proxy tracer asks per span)', async () => {
    const { adapter, runner } = setup();
    await runner.run(adapter, OP, { params: { ref: 'quiet', amount: 1 } });
    expect(spans.getFinishedSpans()).toEqual([]);
    trace.setGlobalTracerProvider(tracerProvider);
    await runner.run(adapter, OP, { params: { ref: 'traced', amount: 1 } });
    const runs = byName(TELEMETRY.runSpan);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.attributes['retrysafe.status']).toBe('done');
    const attempts = byName(TELEMETRY.attemptSpan);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.parentSpanContext?.spanId).toBe(runs[0]!.spanContext().spanId);
  });

  it('a wait before the look-up before the claim is asked again is a retry delay, as the attempt loop’s are', async () => {
    const tele = createTelemetry({ tracerProvider, meterProvider }, () => Date.now());
    tele.event('intent-lookup', 'warn', { decision: 'retry', delayMs: 5_000 }, 'x.op');
    const [delay] = (await collected()).get(TELEMETRY.retryDelay) ?? [];
    expect(delay).toMatchObject({ attributes: { 'retrysafe.decision': 'retry' }, value: { count: 1, sum: 5_000 } });
  });

  it('createTelemetry on its own: events find their run by the scope run() hands over', async () => {
    const tele = createTelemetry({ tracerProvider, meterProvider }, () => Date.now());
    const info = { operation: 'x.op', provider: 'x', businessOperationId: 'id-1' };
    for (let i = 0; i < 2; i++)
      await tele.run(info, async (scope) => {
        tele.event('dispatch', 'info', { attempt: 1 }, 'x.op', scope);
        tele.event('outcome', 'info', { attempt: 1, outcome: 'succeeded' }, 'x.op', scope);
        return { status: 'done' };
      });
    const runs = byName(TELEMETRY.runSpan);
    const attempts = byName(TELEMETRY.attemptSpan);
    expect(runs).toHaveLength(2);
    expect(attempts.map((a) => a.parentSpanContext?.spanId)).toEqual(runs.map((r) => r.spanContext().spanId));
    for (const r of runs) expect(r.events.map((e) => e.name)).toEqual(['retrysafe.dispatch', 'retrysafe.outcome']);
  });
});

describe('a broken SDK or exporter changes nothing about the operation (the telemetry record: guarded like the logger)', () => {
  const broken = (where: 'onStart' | 'onEnd'): SpanProcessor => ({
    onStart: () => {
      if (where === 'onStart') throw new Error('span processor broke on start');
    },
    onEnd: () => {
      if (where === 'onEnd') throw new Error('span processor broke on end');
    },
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  });
  const throwingMeters = {
    getMeter: () => ({
      createCounter: () => ({
        add: () => {
          throw new Error('meter broke');
        },
      }),
      createHistogram: () => ({
        record: () => {
          throw new Error('meter broke');
        },
      }),
    }),
  } as unknown as MeterProvider;

  for (const where of ['onStart', 'onEnd'] as const)
    it(`a span processor that throws ${where}: a lost response still ends done, one effect (run() threw it before)`, async () => {
      const tracer = new BasicTracerProvider({ spanProcessors: [broken(where)] });
      const { provider, adapter, runner } = setup({}, { telemetry: { tracerProvider: tracer } });
      provider.failNext({ kind: 'unknown-after-commit' });
      const r = await runner.run(adapter, OP, { params: { ref: `broken-${where}`, amount: 1 } });
      expect(r.status).toBe('done');
      expect(provider.count()).toBe(1);
    });

  it('a meter whose instruments throw: a handoff is still returned as one', async () => {
    const { provider, adapter, runner } = setup({}, { telemetry: { meterProvider: throwingMeters } });
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'broken-meter', amount: 1 } });
    expect(r.status).toBe('handed-off');
    expect(provider.calls()).toBe(1);
  });
});
