// The suite through the main entry point (lazy import of vitest); ledger-sqlite.test.ts uses the
// `@retrysafe/core/ledger-suite` subpath, so both ways of loading it are exercised.
import { createMemoryLedger, ledgerSuite } from '@retrysafe/core';

await ledgerSuite({ name: 'memory', create: () => createMemoryLedger() });
