import { closeSync, openSync, readSync } from 'node:fs';
import { exportReceiptsJsonl } from '@retrysafe/core';
import { defineCommand, EXIT } from '../../../command.js';
import { UsageError } from '../../../errors.js';
import { writeText } from '../../../files.js';
import { plural } from '../../../output.js';
import {
  refuseIdleConfig,
  STATE_OPTION,
  stateFilter,
  TARGET_OPTIONS,
  unreadableRows,
  warnUnreadable,
  withLedger,
} from '../target.js';

export const ledgerExportCommand = defineCommand({
  name: 'ledger export',
  description:
    'receipts as JSON Lines, with one chain-head line per operation so the export verifies offline (ledger verify --file)',
  options: {
    ...TARGET_OPTIONS,
    out: {
      argument: '<file>',
      description: 'write to this file instead of stdout (with --json, its summary on stdout)',
    },
    state: STATE_OPTION,
  },
  async run({ io, json }, o) {
    const states = stateFilter(o.state);
    refuseIdleConfig(o);
    if (o.out && isSqlite(o.out))
      throw new UsageError(`--out ${o.out}: a SQLite database (the ledger?): not overwritten`);
    const { ids: unreadable, onUnreadable } = unreadableRows();
    const { ids, text } = await withLedger(o, async (ledger) => {
      const ids = (await ledger.list({ states, onUnreadable })).map((r) => r.businessOperationId);
      // One whose receipts cannot be read is told as unreadable too, and left out.
      return { ids, text: await exportReceiptsJsonl(ledger, { ids, filter: { onUnreadable }, heads: true }) };
    });
    const ok = unreadable.length === 0;
    if (o.out) {
      writeText(o.out, text);
      const operations = ids.filter((id) => !unreadable.includes(id)).length;
      // The export is JSON Lines already; what --json adds is the summary of one written to a file.
      if (o.json) json({ ok, out: o.out, operations, unreadable });
      else io.err(`wrote ${plural(operations, 'operation')} to ${o.out}`);
    } else if (text) io.out(text.trimEnd());
    warnUnreadable(io, unreadable);
    return ok ? EXIT.ok : EXIT.failed;
  },
});

/** Whether `path` is a SQLite database file (its 16-byte header): an export written over it would destroy a ledger. */
function isSqlite(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(16);
    return readSync(fd, head, 0, 16, 0) === 16 && head.toString('latin1') === 'SQLite format 3\u0000';
  } catch {
    return false; // absent or unreadable: writeText says why if it cannot write
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
