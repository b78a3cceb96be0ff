// A config naming a DynamoDB table opens the DynamoDB ledger (what the MCP server and the CLI call),
// here against dynalite on a loopback port, with credentials from the environment only.
import { type AddressInfo, createServer } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { asBusinessOperationId, LedgerError, type ProviderKey } from '@retrysafe/contract';
import { ensureTable } from '@retrysafe/ledger-dynamodb';
// @ts-expect-error dynalite ships no types
import dynalite from 'dynalite';
import { afterAll, expect, it } from 'vitest';
import { openLedger, parseConfig } from './index.js';

const server = dynalite({ createTableMs: 0 });
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

it('opens { ledger: { dynamodb } } from a config as the DynamoDB ledger', async () => {
  const admin = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  await ensureTable(admin, 'retrysafe-config');
  admin.destroy();
  const config = parseConfig(
    {
      ledger: { dynamodb: { table: 'retrysafe-config', region: 'local', endpoint } },
      adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } },
    },
    '/tmp',
  );
  process.env.AWS_ACCESS_KEY_ID = 'test';
  process.env.AWS_SECRET_ACCESS_KEY = 'test';
  const ledger = await openLedger(config.ledger, config.baseDir);
  try {
    const id = asBusinessOperationId('config-dynamodb-1');
    const claim = await ledger.claim({
      businessOperationId: id,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      intentFingerprint: 'i',
      paramsFingerprint: 'p',
      params: {},
      providerKey: 'k' as ProviderKey,
      owner: 'w',
      leaseMs: 1000,
      now: Date.now(),
    });
    expect(claim.kind).toBe('claimed');
    expect((await ledger.list()).map((r) => r.businessOperationId)).toEqual([id]);
  } finally {
    await ledger.close();
  }
});

it('takes requestTimeoutMs for the DynamoDB ledger: a service that never answers fails the call, never holds it', async () => {
  const silent = createServer(() => {}).listen(0, '127.0.0.1');
  await new Promise((resolve) => silent.once('listening', resolve));
  const quiet = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  const dynamodb = { table: 'retrysafe-silent', region: 'local', endpoint: quiet, requestTimeoutMs: 100 };
  const config = parseConfig({ ledger: { dynamodb }, adapters: { stripe: { apiKeyEnv: 'STRIPE_KEY' } } }, '/tmp');
  const ledger = await openLedger(config.ledger, config.baseDir);
  try {
    await expect(ledger.get(asBusinessOperationId('config-silent'))).rejects.toSatisfy(LedgerError.isInstance);
  } finally {
    await ledger.close();
    silent.close();
  }
  for (const requestTimeoutMs of [0, 1.5, '100'])
    expect(() =>
      parseConfig({ ledger: { dynamodb: { ...dynamodb, requestTimeoutMs } }, adapters: {} }, '/tmp'),
    ).toThrow(/requestTimeoutMs/);
});
