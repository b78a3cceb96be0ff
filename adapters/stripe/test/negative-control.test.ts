import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AdapterV1 } from '@retrysafe/contract';
import { runDrill } from '@retrysafe/testkit/conformance';
import Stripe from 'stripe';
import { afterAll, describe, expect, it } from 'vitest';
import { createStripeAdapter } from '../src/index.js';
import {
  stripeDrillOperations as drillOperations,
  startStripeDrillSandbox as startDrillSandbox,
} from '../src/sandbox/index.js';
import { classifyStripeError, classifyStripeResult } from '../src/stripe-errors.js';
import { stripeOperations } from '../src/stripe-operations.js';

// Negative control: the same operations and error mapping, but the SDK client left as stripe-node
// builds it (maxNetworkRetries 2, its own closed-connection retry). The drill must notice the extra
// attempts; if it passed, the drill could not prove that the runner is the only retrying layer.
function adapterWithSdkRetries(baseUrl: string, timeoutMs: number, config: Stripe.StripeConfig): AdapterV1 {
  const safe = createStripeAdapter({ apiKey: 'sk_test_drill', baseUrl, timeoutMs });
  const u = new URL(baseUrl);
  const client = new Stripe('sk_test_drill', {
    host: u.hostname,
    port: u.port,
    protocol: 'http',
    timeout: timeoutMs,
    ...config,
  });
  return {
    ...safe,
    async doExecute(operation, params, ctx) {
      const op = stripeOperations[operation]!;
      try {
        return classifyStripeResult(
          await op.create(client, op.toStripe(params as Record<string, unknown>, ctx.businessOperationId), {
            idempotencyKey: ctx.providerKey!,
          } as never),
          op.card.storedResult.replayIndicator?.value ?? null,
        );
      } catch (e) {
        return classifyStripeError(e, undefined, op.card.storedResult.replayIndicator?.value ?? null);
      }
    },
  };
}

const outDir = mkdtempSync(join(tmpdir(), 'retrysafe-drill-stripe-negative-control-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));
let runs = 0;

async function drill(config: Stripe.StripeConfig) {
  return runDrill({
    name: 'stripe-negative-control',
    outDir: join(outDir, String(++runs)),
    createAdapter: ({ baseUrl, timeoutMs }) => adapterWithSdkRetries(baseUrl, timeoutMs, config),
    startSandbox: startDrillSandbox,
    operations: { 'customers.create': drillOperations['customers.create']! },
    scenarios: ['lost-response', 'in-progress'],
  });
}

describe('negative control: SDK retries left on', () => {
  it('maxNetworkRetries at the SDK default: the drill fails and reports the extra attempts', async () => {
    const report = await drill({});
    expect(report.ok).toBe(false);
    const byScenario = Object.fromEntries(report.results.map((r) => [r.scenario, r]));
    for (const scenario of ['lost-response', 'in-progress']) {
      const r = byScenario[scenario]!;
      expect(r.status).toBe('failed');
      expect(r.observed!.maxRequestsInOneExecute).toBeGreaterThan(1);
      expect(r.failures.join('\n')).toMatch(/one retrying layer expected/);
    }
  });

  it('maxNetworkRetries 0 but no guarded httpClient: the closed-connection retry still shows as a second request', async () => {
    const report = await drill({ maxNetworkRetries: 0 });
    const lost = report.results.find((r) => r.scenario === 'lost-response')!;
    expect(lost.status).toBe('failed');
    expect(lost.observed!.maxRequestsInOneExecute).toBe(2);
    // a 409 is not retried at maxNetworkRetries 0: only the reset layer is left
    expect(report.results.find((r) => r.scenario === 'in-progress')!.status).toBe('passed');
  });
});
