// The shared ledger suite on the memory ledger, plain and with its params encrypted at rest.
import { createMemoryLedger, encryptParams } from '@retrysafe/core';
import { ledgerSuite } from '../src/ledger/index.js';

const KEY = { id: 'p1', secret: 'a-32-byte-secret-for-the-params!' };
ledgerSuite({ name: 'memory', create: () => createMemoryLedger() });
ledgerSuite({ name: 'memory, params encrypted', create: () => encryptParams(createMemoryLedger(), { key: KEY }) });
