import { runConformance } from '@retrysafe/testkit/conformance';
import { createStripeAdapter } from '../src/index.js';
import { drillOperations, startDrillSandbox } from './drill-setup.js';

// The shared drill on every operation: real stripe SDK → fault proxy → loopback Stripe sandbox,
// on the runner's virtual clock. Receipts: one JSON per scenario × operation plus summary.json.
runConformance({
  name: 'stripe',
  createAdapter: ({ baseUrl, timeoutMs }) => createStripeAdapter({ apiKey: 'sk_test_drill', baseUrl, timeoutMs }),
  startSandbox: startDrillSandbox,
  operations: drillOperations,
});
