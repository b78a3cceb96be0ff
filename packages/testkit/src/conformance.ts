import { existsSync, readFileSync } from 'node:fs';
import {
  type AdapterV1,
  asBusinessOperationId,
  type BusinessOperationId,
  businessOperationId,
  type Duration,
  type ExecuteContext,
  fact,
  intentOf,
  type LookupContext,
  newAttemptId,
  newRunId,
  type ProviderKey,
  type RetrySafetyCard,
  UnknownOperationError,
} from '@retrysafe/contract';
import { afterAll, describe, expect, it } from 'vitest';
import { disposeDrillContext, runScenario, writeSummary } from './drill.js';
import { createDrillContext, type DrillContext, startHarness } from './drill-harness.js';
import { type ConformanceOptions, SCENARIO_TITLES, SCENARIOS } from './drill-types.js';
import type { FaultProxy, FaultScript } from './fault-proxy.js';

// runDrill here too, for tests that drill outside runConformance; the rest of the drill is on the root entry.
export { runDrill } from './drill.js';
export type { ConformanceOptions } from './drill-types.js';

/**
 * The conformance drill as vitest tests: one `it` per operation × scenario; a scenario the card rules out still
 * asserts that its skip names the card field. Receipts and `summary.json` go to `outDir` (default: a kept temp dir).
 */
export function runConformance(options: ConformanceOptions): void {
  let ctx: DrillContext | undefined;
  const context = () => (ctx ??= createDrillContext(options));

  describe(`${options.name} conformance`, () => {
    afterAll(() => {
      if (!ctx) return;
      writeSummary(ctx);
      disposeDrillContext(ctx);
      if (options.outDir === undefined)
        console.log(`${options.name} conformance: receipts and summary.json in ${ctx.outDir}`);
    });

    describe('frame rules', () => frameCases(options, context));

    for (const operation of Object.keys(options.operations ?? {})) {
      describe(operation, () => {
        for (const scenario of SCENARIOS) {
          it(`${scenario}: ${SCENARIO_TITLES[scenario]}`, async () => {
            const result = await runScenario(context(), operation, scenario);
            // the receipt is written before anything is asserted, pass or fail
            expect(existsSync(result.receiptFile)).toBe(true);
            const onDisk = JSON.parse(readFileSync(result.receiptFile, 'utf8')) as { status: string };
            expect(onDisk.status).toBe(result.status);
            if (result.status === 'skipped') {
              expect(result.skip?.cardField, `${scenario} skipped without naming the card field`).toMatch(
                /^[a-zA-Z.]+$/,
              );
              expect(result.skip?.reason).toBeTruthy();
              return;
            }
            expect(result.failures, result.failures.join('\n')).toEqual([]);
            expect(result.status).toBe('passed');
          });
        }
      });
    }
  });
}

/** The business-operation id the runner derives from these params' intent fields (the card's normalisation too). */
export function operationIdFor(adapter: AdapterV1, operation: string, params: Record<string, unknown>) {
  const spec = adapter.operations[operation]!;
  return businessOperationId(spec.card.operation, intentOf(params, spec.card.businessOperationId));
}

/** The ExecuteContext the runner hands the adapter for attempt 1 of `id`; `over` replaces any field. */
export function executeContext(
  adapter: AdapterV1,
  operation: string,
  id: BusinessOperationId,
  over: Partial<ExecuteContext> = {},
): ExecuteContext {
  return {
    businessOperationId: id,
    providerKey: adapter.deriveProviderKey(operation, id),
    runId: newRunId(),
    attemptId: newAttemptId(),
    attempt: 1,
    statusRef: null,
    ...over,
  };
}

/** A card whose lookup bounds its consistency delay and late apply: a test that a miss past both is not-found. */
export function boundedLookup<C extends RetrySafetyCard>(
  card: C,
  consistencyDelay: Duration,
  lateApplyBound: Duration,
): C {
  const lookup = {
    ...card.lookup,
    consistencyDelay: fact(consistencyDelay, 'test: a bounded delay'),
    lateApplyBound: fact(lateApplyBound, 'test: a bounded late apply'),
  };
  return { ...card, lookup };
}

/** The LookupContext the runner builds: the execute context's ids, the recorded params and the clock. */
export function lookupContext(
  adapter: AdapterV1,
  operation: string,
  id: BusinessOperationId,
  params: unknown,
  over: Partial<LookupContext> = {},
): LookupContext {
  const { attempt: _attempt, ...ids } = executeContext(adapter, operation, id);
  const now = Date.now();
  return { ...ids, params, firstDispatchedAt: now, now, ...over };
}

let frameIds = 0;
const frameId = (operation: string): BusinessOperationId =>
  asBusinessOperationId(`frame-${operation}-${process.pid}-${Date.now()}-${++frameIds}`);

const FRAME_TIMEOUT_MS = 20_000;

/** The rules the contract's `defineAdapter` owns, asserted once for every adapter, over its real SDK. */
function frameCases(options: ConformanceOptions, context: () => DrillContext): void {
  const operations = Object.entries(options.operations ?? {});
  /** One case on the drill's harness (adapter, sandbox and fault proxy): real loopback HTTP all the way. Its client
   * timeout is long: no case waits for it (the drill's short one is for its lost answers), and a loaded machine must
   * not turn a slow answer into an unknown outcome. */
  type Case = (adapter: AdapterV1, proxy: FaultProxy) => Promise<void>;
  const test = (title: string, fn: Case, faults: FaultScript = []) =>
    it(title, async () => {
      const h = await startHarness(context(), faults, FRAME_TIMEOUT_MS);
      try {
        await fn(h.adapter, h.proxy);
      } finally {
        await h.close();
      }
    });

  test('an unknown operation name is a typed error from every method (no provider prefix either), and nothing is sent', async (adapter, proxy) => {
    const [name, drill] = operations[0]!;
    const id = frameId(name);
    const isUnknown = (e: unknown) => UnknownOperationError.isInstance(e);
    const execute = executeContext(adapter, name, id);
    const lookup = lookupContext(adapter, name, id, drill.params(0), { firstDispatchedAt: null });
    for (const bad of ['no.such.operation', `${adapter.provider}.${name}`]) {
      expect(() => adapter.deriveProviderKey(bad, id)).toThrow(/no operation/);
      await expect(adapter.doExecute(bad, drill.params(0), execute)).rejects.toSatisfy(isUnknown);
      await expect(adapter.doLookup(bad, lookup)).rejects.toSatisfy(isUnknown);
    }
    expect(proxy.requests.length).toBe(0);
  });

  for (const [name, drill] of operations) {
    const execute = (adapter: AdapterV1, params: unknown, over: Partial<ExecuteContext> = {}, id = frameId(name)) =>
      adapter.doExecute(name, params, executeContext(adapter, name, id, over));
    test(`${name}: params the schema refuses are rejected (validation), never thrown, with no request sent`, async (adapter, proxy) => {
      const spec = adapter.operations[name]!;
      const required = Array.isArray(spec.paramsSchema.required) ? (spec.paramsSchema.required as string[]) : [];
      const valid = drill.params(900) as Record<string, unknown>;
      const invalid: unknown[] = ['not an object', null, [valid]];
      if (required.length > 0 && typeof valid === 'object' && valid !== null) {
        const { [required[0]!]: _dropped, ...rest } = valid;
        invalid.push(rest);
      }
      for (const params of invalid) {
        const o = await execute(adapter, params);
        expect(o, `${name} with ${JSON.stringify(params)}`).toMatchObject({ kind: 'rejected', reason: 'validation' });
      }
      expect(proxy.requests.length, 'requests that reached the provider').toBe(0);
    });

    test(`${name}: a recorded key is checked by its shape, not by equality with a re-derivation`, async (adapter, proxy) => {
      const id = frameId(name);
      const derived = adapter.deriveProviderKey(name, id);
      if (derived === null) {
        expect(adapter.operations[name]!.card.providerKey.travels.value).toBe('none');
        return;
      }
      // A key no provider rule accepts: refused before sending.
      const tooLong = `${derived}${'x'.repeat(4096)}` as ProviderKey;
      const refused = await execute(adapter, drill.params(901), { providerKey: tooLong }, id);
      expect(refused).toMatchObject({ kind: 'rejected', code: 'retrysafe_provider_key_shape' });
      expect(proxy.requests.length).toBe(0);
      // A key of the right shape that today's rule would not derive (an older release's rule): sent as recorded.
      const other = adapter.deriveProviderKey(name, frameId(name))!;
      const o = await execute(adapter, drill.params(902), { providerKey: other }, id);
      expect(o.kind === 'rejected' && o.code === 'retrysafe_provider_key_shape', JSON.stringify(o)).toBe(false);
      expect(proxy.requests.length).toBeGreaterThanOrEqual(1);
      const { travels, name: keyName } = adapter.operations[name]!.card.providerKey;
      if (travels.value === 'header') {
        const header = String(keyName.value).toLowerCase();
        const seen = proxy.requests.map((r) => r.headers[header]).filter((k) => k !== undefined);
        // (as sent: a Structured Field string quotes it)
        expect(
          seen.some((k) => k.includes(other)),
          `${header} headers seen (the drill records idempotency-key and its recordHeaders): ${seen.join(', ')}`,
        ).toBe(true);
        return;
      }
      // In the body (the proxy keeps its hash only): the first request (what follows depends on the answer) must
      // differ under the derived key and repeat under the recorded key, or the key was re-derived or never sent.
      const firstBody = async (providerKey: ProviderKey) => {
        const from = proxy.requests.length;
        await execute(adapter, drill.params(902), { providerKey }, id);
        return proxy.requests[from]?.bodyHash;
      };
      const sent = proxy.requests[0]!.bodyHash;
      expect(await firstBody(other), 'the recorded key again: the same body').toBe(sent);
      expect(await firstBody(derived), 'another key: another body').not.toBe(sent);
    });

    test(
      `${name}: an abort acts mid-call (unknown, well before the client timeout), and an earlier abort sends nothing`,
      async (adapter, proxy) => {
        const before = await execute(adapter, drill.params(903), { signal: AbortSignal.abort() });
        expect(before).toMatchObject({ kind: 'not-applied' });
        expect(proxy.requests.length).toBe(0);
        const controller = new AbortController();
        const pending = execute(adapter, drill.params(904), { signal: controller.signal });
        await proxy.waitForRequests(1);
        // Timed from the abort: how long the request took to reach the proxy is not the abort's.
        const started = Date.now();
        controller.abort();
        const o = await pending;
        expect(o).toMatchObject({ kind: 'unknown' });
        expect(Date.now() - started, 'ms until the aborted call returned').toBeLessThan(5_000);
      },
      [{ kind: 'delay', ms: 15_000 }],
    );
  }
}
