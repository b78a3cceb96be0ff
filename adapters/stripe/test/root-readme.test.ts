import { readFileSync } from 'node:fs';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { afterEach, expect, it } from 'vitest';
import { createStripeAdapter } from '../src/index.js';
import { startStripeSandbox } from '../src/sandbox/index.js';
import { API_KEY } from './helpers.js';

// The root README's "In 30 seconds" example, with the params read from the README itself, run against
// the sandbox: a user who points the example at `@retrysafe/stripe/sandbox` gets a charge, not a 400
// for an unknown customer.
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

/** The example's params; the test checks their values before using them. */
type ReadmeParams = { customer: string; amount: number; currency: string; orderRef: string };

function readmeParams(): ReadmeParams {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
  const m = /runner\.run\(stripe, 'paymentIntents\.create', \{ params: (\{[^}]*\}) \}\)/.exec(readme);
  if (!m) throw new Error('the README no longer has the paymentIntents.create example');
  // the params are a plain object literal: make it JSON
  return JSON.parse(m[1]!.replace(/(\w+):/g, '"$1":').replace(/'/g, '"')) as ReadmeParams;
}

it('the README example charges the sandbox customer it names, once, and a re-run adopts it', async () => {
  const params = readmeParams();
  expect(params.customer).toBe('cus_123');
  const sandbox = await startStripeSandbox();
  close = () => sandbox.close();
  const runner = createRunner({ ledger: createMemoryLedger() });
  const stripe = createStripeAdapter({ apiKey: API_KEY, baseUrl: sandbox.url, timeoutMs: 5000 });
  const first = await runner.run(stripe, 'paymentIntents.create', { params });
  expect(first.status).toBe('done');
  const again = await runner.run(stripe, 'paymentIntents.create', { params });
  expect(again).toMatchObject({ status: 'done', adopted: true });
  expect(sandbox.count('paymentIntents.create')).toBe(1);
});
