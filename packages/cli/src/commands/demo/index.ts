import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type AdapterV1, type Ledger, LedgerError } from '@retrysafe/contract';
import { callbackHandoffSink, createRunner, type RunResult } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import type { ConformanceOptions, FaultProxy } from '@retrysafe/testkit';
import { defineCommand } from '../../command.js';
import { UsageError } from '../../errors.js';
import { paint, pick, plural } from '../../output.js';
import { loadAdapters } from '../../registry.js';
import { actionNames, receiptText } from '../ledger/packet-text.js';
import { targetFlags } from '../ledger/target.js';

/** `fault`: what the first call reaching the provider meets (the drill's own); after a lost response the agent calls
 * the tool again. */
interface Step {
  readonly title: string;
  readonly why: string;
  readonly adapter: string;
  readonly operation: string;
  readonly fault: 'drop-response' | 'rateLimited' | 'permanent';
  readonly expect: { readonly records: number; readonly status: readonly RunResult['status'][] };
}

const STEPS: readonly Step[] = [
  {
    title: 'Send a mail (Microsoft Graph sendMail)',
    why: 'the 202 is lost after Graph accepted the mail. sendMail has no idempotency key, so a resend could deliver it twice: retrysafe looks for the mail in Sent Items (it tagged it with the business-operation id) instead of resending.',
    adapter: 'msgraph',
    operation: 'mail.send',
    fault: 'drop-response',
    expect: { records: 1, status: ['done', 'handed-off'] },
  },
  {
    title: 'Update a CRM contact (HubSpot PATCH)',
    why: 'HubSpot answers 429 with Retry-After. The request was refused before processing, and a set-value PATCH is idempotent by nature: the runner waits as told, then retries.',
    adapter: 'hubspot',
    operation: 'contacts.update',
    fault: 'rateLimited',
    expect: { records: 1, status: ['done'] },
  },
  {
    title: 'Open a support ticket (HubSpot tickets.create)',
    why: 'the create response is lost. Ticket creation has no idempotency key; retrysafe reconciles through the unique property that carries the business-operation id rather than creating a second ticket.',
    adapter: 'hubspot',
    operation: 'tickets.create',
    fault: 'drop-response',
    expect: { records: 1, status: ['done', 'handed-off'] },
  },
  {
    title: 'Create an invoice (Stripe invoices.create)',
    why: 'the response is lost after Stripe committed. The resend carries the same Idempotency-Key (derived from the business-operation id), so Stripe replays the stored invoice.',
    adapter: 'stripe',
    operation: 'invoices.create',
    fault: 'drop-response',
    expect: { records: 1, status: ['done'] },
  },
  {
    title: 'Charge with a bad parameter (Stripe paymentIntents.create)',
    why: 'Stripe rejects the request as invalid. A rejection is never retried: the operation is handed to a person with a packet saying what is safe next.',
    adapter: 'stripe',
    operation: 'paymentIntents.create',
    fault: 'permanent',
    expect: { records: 0, status: ['handed-off'] },
  },
];

export type DemoReport = Awaited<ReturnType<typeof demoCommand>>;

/** The same object with its keys in reverse order, recursively: what an agent's re-issued tool call may look like. */
function reorderKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reorderKeys);
  if (!value || typeof value !== 'object') return value;
  const reversed = Object.entries(value).reverse();
  return Object.fromEntries(reversed.map(([k, v]) => [k, reorderKeys(v)]));
}

const sameOperation = (a: RunResult, b: RunResult) =>
  a.businessOperationId === b.businessOperationId &&
  a.status === b.status &&
  (a.status !== 'done' || b.status !== 'done' || JSON.stringify(a.result) === JSON.stringify(b.result));

/** One step: the real adapter → fault proxy → sandbox; every server it starts is closed again. */
async function runStep(
  step: Step,
  drill: ConformanceOptions,
  index: number,
  { ledger, dbPath, log, color }: { ledger: Ledger; dbPath: string; log: (line: string) => void; color: boolean },
) {
  const op = drill.operations[step.operation]!;
  // Loaded here, not at start: its fault proxy's HTTP server is only needed by the demo and the drill.
  const { createDrillClock, DEFAULT_DRILL_TIMEOUT_MS, seededRandom, startFaultProxy } = await import(
    '@retrysafe/testkit'
  );
  const clock = createDrillClock();
  const sandbox = await drill.startSandbox({ clock });
  let proxy: FaultProxy | undefined;
  let adapter: AdapterV1 | undefined;
  try {
    proxy = await startFaultProxy({
      target: sandbox.url,
      faults: [step.fault === 'drop-response' ? step.fault : op.faults[step.fault]!],
      recordHeaders: drill.recordHeaders,
    });
    adapter = await drill.createAdapter({ baseUrl: proxy.url, timeoutMs: drill.timeoutMs ?? DEFAULT_DRILL_TIMEOUT_MS });
    const runner = createRunner({
      ledger,
      clock,
      random: seededRandom(7),
      handoff: callbackHandoffSink(() => {}),
      policy: drill.policy,
    });
    const params = op.params(1000 + index);
    const first = await runner.run(adapter, step.operation, { params });
    // After a lost response the agent calls the tool again: a new run id, the arguments in another order.
    const before = proxy.requests.length;
    const second =
      step.fault === 'drop-response'
        ? await runner.run(adapter, step.operation, { params: reorderKeys(params) })
        : null;
    const requestsOnRetry = second ? proxy.requests.length - before : null;
    const records = await sandbox.count(step.operation);
    const receipts = first.status === 'in-progress' ? [] : first.receipts;
    const t0 = receipts.length ? Date.parse(receipts[0]!.startedAt) : 0;
    const timeline = receipts.map((r) => `+${String(Date.parse(r.startedAt) - t0).padStart(5)} ms  ${receiptText(r)}`);
    const providerKey = (await ledger.get(first.businessOperationId))?.providerKey ?? null;
    const same = second ? sameOperation(first, second) : null;
    const packet = first.status === 'handed-off' ? first.packet : null;
    const ok = records === step.expect.records && step.expect.status.includes(first.status) && same !== false;
    log(`   business-operation id ${first.businessOperationId}`);
    log(`   provider key          ${providerKey ?? '(none travels: this provider has no idempotency key)'}`);
    for (const line of timeline) log(`   ${paint('dim', line, color)}`);
    const verdict =
      first.status === 'done'
        ? `done${first.adopted ? ' — result adopted from the provider, not created again' : ''}${first.providerRef ? ` (${first.providerRef})` : ''}`
        : packet
          ? `handed off to a person: ${packet.reason}`
          : 'still in progress at the provider';
    log(`   ⇒ ${verdict}`);
    log(
      `   business effects at the provider: ${records} (expected ${step.expect.records}); requests that reached it: ${proxy.requests.length}`,
    );
    if (second)
      log(
        `   the agent called the tool again: ${same ? `same operation back (${second.status}${second.status === 'done' && second.adopted ? ', adopted' : ''}), ${plural(requestsOnRetry ?? 0, 'new request')} to the provider` : paint('red', 'a DIFFERENT result', color)}`,
      );
    if (packet) {
      log(`   handoff: ${packet.explanation}`);
      log(
        `   safe next actions: ${actionNames(packet.safeNextActions) || 'none known'} — see \`retrysafe ledger handoffs${targetFlags({ db: dbPath })}\``,
      );
    }
    log(`   ${ok ? paint('green', '✓ held', color) : paint('red', '✗ did not hold', color)}`);
    return {
      ...pick(step, 'title', 'why', 'operation'),
      ...pick(first, 'businessOperationId', 'status'),
      providerKey,
      adopted: first.status === 'done' ? first.adopted : null,
      providerRef: first.status === 'done' ? first.providerRef : null,
      providerRecords: records, // the business effect
      expectedRecords: step.expect.records,
      requestsAtProvider: proxy.requests.length, // dispatches, resends, lookups
      agentCalls: second ? 2 : 1,
      sameResultOnRetry: same, // the agent's second call got the same operation back, without a new effect
      requestsOnRetry,
      timeline,
      handoff: packet && pick(packet, 'reason', 'explanation', 'safeNextActions'),
      ok,
    };
  } finally {
    await adapter?.close?.().catch(() => {});
    await proxy?.close();
    await sandbox.close();
  }
}

/** `retrysafe demo`: real adapters → fault proxy → sandboxes on a virtual clock, each step saying what happened and why. */
export async function demoCommand(opts: { db?: string }, log: (line: string) => void, color = false) {
  const dbPath = opts.db ? resolve(opts.db) : join(mkdtempSync(join(tmpdir(), 'retrysafe-demo-')), 'demo.db');
  let ledger: Ledger;
  try {
    mkdirSync(dirname(dbPath), { recursive: true });
    // A file there is opened as a ledger, never made one: another application's database is left as it was.
    ledger = createSqliteLedger({ path: dbPath, migrate: !existsSync(dbPath) });
  } catch (e) {
    // before any server starts
    if (LedgerError.isInstance(e) && e.reason === 'not-a-ledger')
      throw new UsageError(
        `--db ${dbPath}: not a retrysafe ledger, left as it is; the demo needs a new file (or leave out --db)`,
      );
    throw new UsageError(`--db ${dbPath}: cannot hold a SQLite ledger there (${(e as Error).message})`);
  }
  try {
    // The steps count what reaches the provider: on a ledger that already has them, each would adopt and "not hold".
    if ((await ledger.list({ limit: 1 })).length > 0)
      throw new UsageError(
        `--db ${dbPath}: this ledger already holds operations; the demo needs a new file (or leave out --db)`,
      );
    const entries = await loadAdapters([...new Set(STEPS.map((s) => s.adapter))]);
    const steps: Awaited<ReturnType<typeof runStep>>[] = [];
    log(
      paint('bold', 'retrysafe demo', color) +
        ` — an agent performs five state-changing operations while the network misbehaves.\nEverything runs on loopback sandboxes with the vendors' real SDKs; the ledger is SQLite (${dbPath}).`,
    );
    for (const [n, step] of STEPS.entries()) {
      const entry = entries.find((a) => a.name === step.adapter);
      const drill = entry?.drills.find((d) => step.operation in d.operations);
      if (!drill)
        throw new Error(
          `demo: the ${step.adapter} adapter offers no drill setup for ${step.operation}${entry?.missing ? ` (${entry.missing})` : ''}`,
        );
      log(`\n${paint('bold', `${n + 1}. ${step.title}`, color)}\n   ${step.why}`);
      steps.push(await runStep(step, drill, n, { ledger, dbPath, log, color }));
    }
    return { ok: steps.every((s) => s.ok), ledger: dbPath, steps };
  } finally {
    await ledger.close();
  }
}

export function demoSummary(r: DemoReport, color = false): string {
  const n = r.steps.length;
  const verdict = r.ok
    ? `All ${n} steps held: every business action happened exactly once, or was handed to a person with nothing sent twice.`
    : `${r.steps.filter((s) => !s.ok).length} of ${n} steps did not hold: see above.`;
  return [
    '',
    paint(r.ok ? 'green' : 'red', verdict, color),
    `Ledger: ${r.ledger}`,
    // quoted for a shell: pasted, they must reach this ledger
    `  retrysafe ledger ls${targetFlags({ db: r.ledger })}`,
    `  retrysafe ledger handoffs${targetFlags({ db: r.ledger })}`,
  ].join('\n');
}

export const demo = defineCommand({
  name: 'demo',
  description:
    'a scripted agent flow (mail, CRM update, ticket, invoice, a bad charge) against the sandboxes with faults, on SQLite',
  options: {
    db: { argument: '<path>', description: 'SQLite ledger file (default: a new temp file)' },
    json: { description: 'print the report as JSON' },
  },
  async run({ io, print, color }, o) {
    const r = await demoCommand(o, o.json ? () => {} : (l) => io.out(l), color);
    return print(o, r, () => demoSummary(r, color), r.ok);
  },
});
