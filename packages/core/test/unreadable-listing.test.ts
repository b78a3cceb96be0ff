// One row whose stored record was cut from outside must not hide the others from an agent's hand-off list,
// nor vanish unnamed from an export: the readable rows are shown and the cut one is named by id.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { type BusinessOperationId, type Ledger, LedgerError } from '@retrysafe/contract';
import { exportReceiptsJsonl, type Runner } from '@retrysafe/core';
import * as agentApi from '@retrysafe/core/agent';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const dirs: string[] = [];
type Setup = { runner: Runner; tool: agentApi.AgentToolDefinition; logs: string[] };
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A SQLite ledger holding three handed-off operations, the first one's stored record cut (or `edit`ed) by a raw UPDATE. */
async function withCutHandoff(
  body: (ledger: Ledger, cut: string, readable: string[], more: Setup) => Promise<void>,
  edit = 'record = substr(record, 1, 40)',
) {
  const dir = mkdtempSync(join(tmpdir(), 'rs-unreadable-'));
  dirs.push(dir);
  const path = join(dir, 'ledger.db');
  const ledger = createSqliteLedger({ path });
  try {
    const logs: string[] = [];
    const { adapter, runner } = setup({}, { ledger, logger: (e) => void logs.push(JSON.stringify(e)) });
    const doExecute = async () => ({ kind: 'rejected', reason: 'validation', message: 'no' }) as const;
    const [tool] = agentApi.agentTools([{ ...adapter, doExecute } as typeof adapter], ['sandbox_records_create']);
    const ids: string[] = [];
    for (const ref of ['a-cut', 'b-good', 'c-good']) {
      const answer = await agentApi.callAgentTool(agentApi.agentRunner(runner), tool!, { ref });
      ids.push((answer as { businessOperationId: string }).businessOperationId);
    }
    const raw = new DatabaseSync(path);
    raw.prepare(`UPDATE retrysafe_operations SET ${edit} WHERE id = ?`).run(ids[0]!);
    raw.close();
    await body(ledger, ids[0]!, ids.slice(1), { runner, tool: tool!, logs });
  } finally {
    await ledger.close();
  }
}

describe('a listing with one unreadable row', () => {
  it('the pending hand-offs shown to an agent hold the readable ones and name the cut one', async () => {
    await withCutHandoff(async (ledger, cut, readable) => {
      const shown = await agentApi.pendingHandoffs(ledger);
      expect(shown.handoffs.map((h) => h.businessOperationId).sort()).toEqual(readable.sort());
      expect(shown).toMatchObject({ unreadable: [cut], truncated: false });
    });
  });

  it('a hand-off packet without its lists (edited from outside) is named, not a failure of the whole list', async () => {
    for (const packet of ['{}', '{"reason":"rejected","attempts":[],"safeNextActions":{}}', '"x"'])
      await withCutHandoff(async (ledger, cut, readable) => {
        const shown = await agentApi.pendingHandoffs(ledger);
        expect(shown.handoffs.map((h) => h.businessOperationId).sort()).toEqual(readable.sort());
        expect(shown).toMatchObject({ unreadable: [cut] });
      }, `record = json_set(record, '$.handoff', json('${packet}'))`);
  });

  it('an export of every operation refuses naming the cut id; with filter.onUnreadable it exports the others', async () => {
    await withCutHandoff(async (ledger, cut, readable) => {
      const refused = exportReceiptsJsonl(ledger, { heads: true });
      await expect(refused).rejects.toThrow(LedgerError);
      await expect(refused).rejects.toThrow(new RegExp(`could not be read.*${cut}`));

      const told: string[] = [];
      const text = await exportReceiptsJsonl(ledger, { heads: true, filter: { onUnreadable: (id) => told.push(id) } });
      expect(told).toEqual([cut]);
      const exported = new Set(
        text
          .trimEnd()
          .split('\n')
          .map((l) => JSON.parse(l) as { businessOperationId?: string; chainHead?: { businessOperationId: string } })
          .map((l) => l.chainHead?.businessOperationId ?? l.businessOperationId),
      );
      expect([...exported].sort()).toEqual(readable.sort() as BusinessOperationId[]);
    });
  });

  it('a row edited by hand to hold a secret and an email shows neither in any error, report, answer or log line', async () => {
    const secrets = ['sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'alice@example.com'];
    // Each edit leaves the JSON broken right at a value, where a parser's message would quote the text around it.
    for (const text of [`{"params":{"apiKey":${secrets[0]}}}`, `{"params":{"email":${secrets[1]}}}`, `"${secrets[0]}"`])
      await withCutHandoff(async (ledger, cut, _readable, { runner, tool, logs }) => {
        const seen: unknown[] = [];
        const caught = (p: Promise<unknown>) =>
          p.then(
            (v) => seen.push(v),
            (e) => seen.push(e),
          );
        await caught(ledger.get(cut as BusinessOperationId));
        await caught(agentApi.operationStatus(ledger, cut));
        await caught(agentApi.callAgentTool(agentApi.agentRunner(runner), tool, { ref: 'a-cut' }));
        await caught(runner.run(tool.adapter, tool.operation, { params: { ref: 'a-cut' } }));
        await caught(runner.recover({ adapters: [tool.adapter], businessOperationId: cut }));
        await caught(exportReceiptsJsonl(ledger, { heads: true }));
        expect(seen.some((e) => LedgerError.isInstance(e))).toBe(true);
        const shown: string[] = [...logs];
        for (let e of seen)
          for (; e; e = (e as Error).cause) shown.push(String((e as Error).message), JSON.stringify(e) ?? '');
        for (const s of secrets) for (const line of shown) expect(line).not.toContain(s.slice(0, 10));
      }, `record = '${text}'`);
  });
});
