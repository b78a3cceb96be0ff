// A write that fails once its file is open (a full disk: /dev/full) carries no path in Node, unlike a failed open:
// every file the library writes for its caller is named in the error, which keeps its code.
import type { HandoffPacket } from '@retrysafe/contract';
import { exportReceiptsJsonl, jsonlHandoffSink, pruneLedger } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const FULL = { code: 'ENOSPC', path: '/dev/full', message: "ENOSPC: no space left on device, write '/dev/full'" };

describe.runIf(process.platform === 'linux')('a full disk names the file the library writes', () => {
  it('exportReceiptsJsonl({ path }), pruneLedger({ exportPath }) and the JSONL hand-off sink', async () => {
    const { adapter, runner, ledger } = setup();
    await runner.run(adapter, 'records.create', { params: { ref: 'full-1' } });
    await expect(exportReceiptsJsonl(ledger, { path: '/dev/full' })).rejects.toMatchObject(FULL);
    await expect(
      pruneLedger(ledger, { olderThan: 0, cards: [], exportPath: '/dev/full', now: Date.now() + 1000 }),
    ).rejects.toMatchObject(FULL);
    await expect(jsonlHandoffSink('/dev/full').send({} as HandoffPacket)).rejects.toMatchObject(FULL);
  });
});
