// Compile-time checks of `runner.run` with a generic HTTP adapter: the operation names are the keys
// of the declared operations. Run by test/run-types.test.ts (with and without the directives).
import type { AdapterV1 } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createHttpAdapter, ietfOrdersCreate } from '../src/index.js';

const runner = createRunner({ ledger: createMemoryLedger() });
const acme = createHttpAdapter({ provider: 'acme', baseUrl: 'http://127.0.0.1:1', timeoutMs: 1000, operations: { 'orders.create': ietfOrdersCreate('acme') } });

export async function typed(): Promise<void> {
  await runner.run(acme, 'orders.create', { params: { customer: 'cus_1', sku: 'sku_1', quantity: 1, orderRef: 'A-17' } });
  // @ts-expect-error 'order.create' is not a declared operation
  await runner.run(acme, 'order.create', { params: { orderRef: 'A-17' } });
  // @ts-expect-error params are an object
  await runner.run(acme, 'orders.create', { params: 'A-17' });
}

export async function untyped(declared: Record<string, ReturnType<typeof ietfOrdersCreate>>, name: string): Promise<void> {
  // operations known only at run time (a config file): any name, as before
  const fromConfig = createHttpAdapter({ provider: 'acme', baseUrl: 'http://127.0.0.1:1', timeoutMs: 1000, operations: declared });
  await runner.run(fromConfig, name, { params: {} });
  const plain: AdapterV1 = acme;
  await runner.run(plain, name, { params: 1 });
}
