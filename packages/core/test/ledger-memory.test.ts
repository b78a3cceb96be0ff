import { createMemoryLedger } from '@retrysafe/core';
import { ledgerSuite } from '@retrysafe/core/ledger-suite';

ledgerSuite({ name: 'memory', create: () => createMemoryLedger() });
