import { join } from 'node:path';
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createStripeAdapter } from '@retrysafe/stripe';
import { startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { createDrillClock, startFaultProxy } from '@retrysafe/testkit';
import { describe, expect, it } from 'vitest';
import { printable, resolveText } from '../src/commands/ledger/resolve/index.js';
import { cli, tempDir, writeJson } from './helpers.js';

// `ledger show` leaves out the params and the stored result body (they may hold personal data); the
// answer of `ledger resolve --json` and `resolve-all --json` is printed to the same terminals and CI logs.
describe('ledger resolve --json and resolve-all --json print no stored result body', () => {
  it('a resumed Stripe customer: done, its provider ref, but not the email or name Stripe returned', async () => {
    const dir = tempDir('resolve-output');
    const db = join(dir, 'retrysafe.db');
    const stripe = await startStripeSandbox({ port: 0 });
    let lose = true;
    const proxy = await startFaultProxy({ target: stripe.url, faults: () => (lose ? 'drop-response' : 'pass') });
    try {
      const ledger = createSqliteLedger({ path: db });
      const adapter = createStripeAdapter({ apiKey: 'sk_test_cli', baseUrl: proxy.url, timeoutMs: 2000 });
      const params = { email: 'alice.private@example.com', name: 'Alice Private', customerRef: 'c-out-1' };
      const first = await createRunner({ ledger, clock: createDrillClock() }).run(adapter, 'customers.create', {
        params,
      });
      const second = await createRunner({ ledger, clock: createDrillClock() }).run(adapter, 'customers.create', {
        params: { email: 'bob.private@example.com', name: 'Bob Private', customerRef: 'c-out-2' },
      });
      await ledger.close();
      expect([first.status, second.status]).toEqual(['handed-off', 'handed-off']);
      lose = false;
      const config = writeJson(dir, 'retrysafe.json', {
        ledger: './retrysafe.db',
        adapters: { stripe: { apiKeyEnv: 'RS_CLI_TEST_STRIPE_KEY', baseUrl: proxy.url, timeoutMs: 2000 } },
      });
      const env = { RS_CLI_TEST_STRIPE_KEY: 'sk_test_cli' };
      const r = await cli(['ledger', 'resolve', first.businessOperationId, '--resume', '--config', config, '--json'], {
        cwd: dir,
        env,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'done', providerRef: expect.stringMatching(/^cus_/) });
      expect(r.stdout).not.toContain('alice.private@example.com');
      expect(r.stdout).not.toContain('Alice Private');
      const all = await cli(['ledger', 'resolve-all', '--resume', '--config', config, '--json'], { cwd: dir, env });
      expect(all.code, all.stderr).toBe(0);
      expect(JSON.parse(all.stdout).rows[0].result).toMatchObject({
        status: 'done',
        businessOperationId: second.businessOperationId,
      });
      expect(all.stdout).not.toContain('bob.private@example.com');
      expect(all.stdout).not.toContain('Bob Private');
      expect(stripe.count('customers.create')).toBe(2);
    } finally {
      await proxy.close();
      await stripe.close();
    }
  }, 120_000);
});

describe('ledger resolve prints a status URL without its query', () => {
  // A provider's status URL may be signed (`?sig=…`): the token is a credential, the origin and path are what a person needs.
  const held = {
    status: 'in-progress' as const,
    businessOperationId: 'acme.orders.create:abc' as never,
    statusRef: 'https://jobs.example.test/v1/jobs/42?sig=s3cr3t-token&se=2026',
    retryAfterMs: 2000,
  };
  it('in the text and in the --json answer', () => {
    expect(resolveText(held)).toContain('(status https://jobs.example.test/v1/jobs/42)');
    expect(JSON.stringify(printable(held))).not.toContain('s3cr3t-token');
    expect(printable(held)).toMatchObject({ statusRef: 'https://jobs.example.test/v1/jobs/42' });
    expect(printable({ ...held, statusRef: 'job-42' })).toMatchObject({ statusRef: 'job-42' });
  });
});
