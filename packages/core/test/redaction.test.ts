import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedactor, exportReceiptsJsonl, jsonlHandoffSink, type LogEntry } from '@retrysafe/core';
import { setup } from './helpers.js';

const SECRET = 'sk_live_51Hq9ZsEcReTvAlUe0xyz';
const PII = 'alice.private@example.test';
const PHONE = '+44 7700 900123';
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-redact-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('redaction: a secret and PII in params never reach receipts, packets, exports or logs', () => {
  it('holds across success, lost response, lookup, rejection and handoff', async () => {
    const logs: LogEntry[] = [];
    const packetsFile = join(dir, 'handoffs.jsonl');
    const { provider, adapter, runner, ledger } = setup(
      { replays: false, retentionMs: null },
      { logger: (e) => logs.push(e), redact: { fields: ['customer.email'], patterns: [/\+44 \d{4} \d{6}/g] }, handoff: jsonlHandoffSink(packetsFile) },
      { sensitiveFields: ['customer.phone'] },
    );
    const params = (ref: string) => ({ ref, note: `charge with ${SECRET}`, customer: { email: PII, phone: PHONE, name: 'A.' } });

    // 1: lost response, reconciled by lookup
    provider.failNext({ kind: 'unknown-after-commit' });
    const a = await runner.run(adapter, 'records.create', { params: params('r-1') });
    expect(a.status).toBe('done');
    // 2: the provider echoes the secret and the PII in its error message; handed off
    provider.failNext({ kind: 'rejected', message: `customer ${PII} (${PHONE}) not allowed for key ${SECRET}` });
    const b = await runner.run(adapter, 'records.create', { params: params('r-2') });
    expect(b.status).toBe('handed-off');
    const everything = [
      JSON.stringify(a),
      JSON.stringify(b),
      await exportReceiptsJsonl(ledger),
      readFileSync(packetsFile, 'utf8'),
      JSON.stringify(logs),
      JSON.stringify((await ledger.list()).map((r) => r.handoff)),
    ].join('\n');
    expect(logs.length).toBeGreaterThan(5);
    expect(everything).toContain('[redacted]');
    for (const needle of [SECRET, PII, PHONE, 'sk_live_', 'alice.private']) expect(everything).not.toContain(needle);
    // The ledger keeps the params so a resume or recovery can re-send the same request.
    expect((await ledger.get(a.businessOperationId))!.params).toEqual(params('r-1'));
  });

  it('the redactor: declared fields at any depth, dot paths, secret-named keys, secret-looking strings, declared values in free text', () => {
    const r = createRedactor({ fields: ['email', 'card.number'], patterns: [/ACCT-\d+/] }).withValuesFrom({ email: 'bob@example.test' });
    expect(r.params({ a: { email: 'x@y.z' }, card: { number: '4242', exp: '12/30' }, number: 7, password: 'hunter2', list: [{ token: 't' }], text: 'Bearer abc.def ACCT-991' })).toEqual({
      a: { email: '[redacted]' }, card: { number: '[redacted]', exp: '12/30' }, number: 7, password: '[redacted]', list: [{ token: '[redacted]' }], text: '[redacted] [redacted]',
    });
    expect(r.text('failed for bob@example.test with sk_test_abcdef1234')).toBe('failed for [redacted] with [redacted]');
  });
});
